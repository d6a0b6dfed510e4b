"""Ember's services. They never import each other: they meet in Postgres and on NATS."""
