#!/usr/bin/env bash
# Create .venv, install Ember with its test tools, then lint, type-check and run every test.
# Uses EMBER_DATABASE_URL / EMBER_NATS_URL when set, else PostgreSQL on 127.0.0.1:5432 and NATS on
# 127.0.0.1:4222 where they answer (tests/conftest.py); otherwise the tests start embedded
# PostgreSQL and nats-server from the installed packages on free ports.
set -euo pipefail
cd "$(dirname "$0")"
source ./scripts/venv.sh
ensure_venv test

echo "== ruff"
.venv/bin/ruff check libs services tests bench scripts
echo "== mypy --strict"
.venv/bin/mypy
.venv/bin/mypy bench scripts
echo "== pytest (the tests marked slow_ci run in .ci/run)"
.venv/bin/pytest -m "not slow_ci" --durations=15 "$@"
echo "== benchmark smoke run (100 resources; figures are printed, not asserted)"
.venv/bin/python -m bench.engine --smoke
echo "== scale smoke run (10,000 resources through the REST API with ember dev's services; figures printed, not asserted)"
.venv/bin/python -m bench.scale --smoke
