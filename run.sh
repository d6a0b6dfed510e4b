#!/usr/bin/env bash
# Create .venv, install Ember, and run everything on this machine with `ember dev`:
# embedded PostgreSQL and nats-server under .ember/ (unless EMBER_DATABASE_URL /
# EMBER_NATS_URL are set), and the five services. Ctrl-C stops it all.
set -euo pipefail
cd "$(dirname "$0")"
source ./scripts/venv.sh
ensure_venv
exec .venv/bin/ember dev "$@"
