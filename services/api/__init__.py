"""The api service: Heat's Orchestration API v1 and Ember's own routes over HTTP."""
