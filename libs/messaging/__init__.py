"""NATS and JetStream: every name in :mod:`subjects`, payloads in :mod:`payloads`."""
