#!/usr/bin/env bash
# Prepare a standalone OpenStack Heat 27.0.1 to compare Ember against: a venv, a MariaDB
# database and user, heat.conf and the schema. Safe to run again; it only does what is missing.
#   setup.sh           create or check everything
#   setup.sh --reset   drop and recreate the database (the server must be stopped)
# Settings (environment): HEAT_REF_DIR (/work/heat), HEAT_REF_PYTHON (python3.11),
# HEAT_REF_DB_HOST (127.0.0.1), HEAT_REF_DB_PORT (3306), HEAT_REF_DB_ADMIN_USER (root),
# HEAT_REF_DB_ADMIN_PASSWORD (empty), HEAT_REF_DB_NAME / HEAT_REF_DB_USER / HEAT_REF_DB_PASSWORD (heat_ref).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
HEAT_REF_DIR="${HEAT_REF_DIR:-/work/heat}"
PYTHON="${HEAT_REF_PYTHON:-python3.11}"
DB_HOST="${HEAT_REF_DB_HOST:-127.0.0.1}"
DB_PORT="${HEAT_REF_DB_PORT:-3306}"
export HEAT_REF_DB_HOST="$DB_HOST" HEAT_REF_DB_PORT="$DB_PORT"
export HEAT_REF_DB_ADMIN_USER="${HEAT_REF_DB_ADMIN_USER:-root}"
export HEAT_REF_DB_ADMIN_PASSWORD="${HEAT_REF_DB_ADMIN_PASSWORD:-}"
export HEAT_REF_DB_NAME="${HEAT_REF_DB_NAME:-heat_ref}"
export HEAT_REF_DB_USER="${HEAT_REF_DB_USER:-heat_ref}"
export HEAT_REF_DB_PASSWORD="${HEAT_REF_DB_PASSWORD:-heat_ref}"
HEAT_VERSION="27.0.1"
VENV="$HEAT_REF_DIR/venv"
CONF="$HEAT_REF_DIR/heat.conf"
PIDFILE="$HEAT_REF_DIR/heat-ref.pid"

reset=0
case "${1:-}" in
  --reset) reset=1 ;;
  "") ;;
  *) echo "usage: $0 [--reset]" >&2; exit 2 ;;
esac

say() { echo "heat_reference: $*"; }

# 1. MariaDB first: it is the one thing this script cannot install for you.
if ! timeout 5 bash -c "exec 3<>/dev/tcp/$DB_HOST/$DB_PORT" 2>/dev/null; then
  say "MariaDB is not reachable at $DB_HOST:$DB_PORT (start it, or set HEAT_REF_DB_HOST/HEAT_REF_DB_PORT)" >&2
  exit 1
fi

if [ "$reset" = 1 ] && [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
  say "the reference server is running (pid $(cat "$PIDFILE")); stop it before --reset" >&2
  exit 1
fi

# 2. The venv, with the versions pinned in constraints.txt.
mkdir -p "$HEAT_REF_DIR"
venv_ok() {
  [ -x "$VENV/bin/heat-manage" ] && "$VENV/bin/python" - "$HEAT_VERSION" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
assert version("openstack-heat") == sys.argv[1]
version("python-heatclient")
version("PyMySQL")
PY
}
# This machine's pip config names local indexes that may be absent; pip warns about each, per package.
pip_quiet() { "$VENV/bin/python" -m pip "$@" 2>&1 | { grep -v "^WARNING: Location 'file:" || true; }; }
if ! venv_ok; then
  say "installing openstack-heat==$HEAT_VERSION into $VENV (a few minutes)"
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
  pip_quiet install --quiet --upgrade pip
  pip_quiet install --quiet -c "$HERE/constraints.txt" \
    "openstack-heat==$HEAT_VERSION" python-heatclient PyMySQL
  venv_ok || { say "the venv at $VENV is still incomplete after pip install" >&2; exit 1; }
fi

# 3. Database and user (through PyMySQL, so no mysql client is needed).
HEAT_REF_RESET="$reset" "$VENV/bin/python" - <<'PY'
import os
import sys

import pymysql

env = os.environ
try:
    conn = pymysql.connect(host=env["HEAT_REF_DB_HOST"], port=int(env["HEAT_REF_DB_PORT"]),
                           user=env["HEAT_REF_DB_ADMIN_USER"], password=env["HEAT_REF_DB_ADMIN_PASSWORD"],
                           connect_timeout=5)
except pymysql.MySQLError as exc:
    sys.exit(f"heat_reference: cannot log in to MariaDB as {env['HEAT_REF_DB_ADMIN_USER']}: {exc}")
name, user, password = env["HEAT_REF_DB_NAME"], env["HEAT_REF_DB_USER"], env["HEAT_REF_DB_PASSWORD"]
with conn.cursor() as cur:
    if env["HEAT_REF_RESET"] == "1":
        cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
        print(f"heat_reference: dropped database {name}")
    cur.execute(f"CREATE DATABASE IF NOT EXISTS `{name}` CHARACTER SET utf8")
    for host in ("localhost", "127.0.0.1"):
        cur.execute("CREATE USER IF NOT EXISTS %s@%s IDENTIFIED BY %s", (user, host, password))
        cur.execute(f"GRANT ALL PRIVILEGES ON `{name}`.* TO %s@%s", (user, host))
conn.commit()
conn.close()
PY

# 4. heat.conf, rewritten every time (local overrides belong in heat.conf.d/*.conf).
PASTE_INI="$VENV/etc/heat/api-paste.ini"
cat > "$CONF.tmp" <<EOF
# Written by Ember's scripts/heat_reference/setup.sh; edits are lost on the next run.
# Put overrides in $HEAT_REF_DIR/heat.conf.d/*.conf (launch.py reads that directory too).
[DEFAULT]
transport_url = fake://
convergence_engine = true
num_engine_workers = 1
keystone_backend = heat.engine.clients.os.keystone.fake_keystoneclient.FakeKeystoneClient
deferred_auth_method = password
auth_encryption_key = ember-heat-reference-key-32chars
environment_dir = $VENV/etc/heat/environment.d
template_dir = $VENV/etc/heat/templates
max_resources_per_stack = -1
max_events_per_stack = 0
max_stacks_per_tenant = -1
max_template_size = 16777216
max_json_body_size = 33554432

[paste_deploy]
flavor = noauth
api_paste_config = $PASTE_INI

[database]
connection = mysql+pymysql://$HEAT_REF_DB_USER:$HEAT_REF_DB_PASSWORD@$DB_HOST:$DB_PORT/$HEAT_REF_DB_NAME?charset=utf8

[oslo_messaging_notifications]
driver = noop
EOF
mv "$CONF.tmp" "$CONF"
mkdir -p "$HEAT_REF_DIR/heat.conf.d"

# 5. Schema (alembic; a no-op when already current).
"$VENV/bin/heat-manage" --config-file "$CONF" db_sync >"$HEAT_REF_DIR/db_sync.log" 2>&1 || {
  say "heat-manage db_sync failed; see $HEAT_REF_DIR/db_sync.log" >&2
  exit 1
}
say "ready: $CONF (database $HEAT_REF_DB_NAME on $DB_HOST:$DB_PORT); start with:"
echo "  $VENV/bin/python $HERE/launch.py"
