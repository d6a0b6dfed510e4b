# Sourced by run.sh and test.sh: make .venv and install Ember into it when pyproject.toml changed.
ensure_venv() {
  local extra="${1:-}"
  local python="${PYTHON:-}"
  if [ -z "$python" ]; then
    for candidate in python3.11 python3; do
      if command -v "$candidate" >/dev/null 2>&1 &&
         "$candidate" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)'; then
        python="$candidate"; break
      fi
    done
  fi
  if [ -z "$python" ]; then
    echo "Ember needs Python 3.11 (set PYTHON=/path/to/python3.11)." >&2
    exit 1
  fi
  if [ ! -x .venv/bin/python ]; then
    if ! "$python" -m venv .venv; then
      echo "Could not create .venv. On Debian or Ubuntu: apt-get install python3.11-venv" >&2
      rm -rf .venv
      exit 1
    fi
  fi
  local stamp=".venv/.ember-installed-${extra:-base}"
  local want
  want="$(cat pyproject.toml requirements.lock | sha256sum | cut -d' ' -f1)"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "== installing Ember into .venv"
    .venv/bin/python -m pip install --quiet --upgrade pip
    # requirements.lock pins every transitive package; pyproject.toml pins the direct ones.
    if [ -n "$extra" ]; then
      .venv/bin/python -m pip install --quiet -c requirements.lock -e ".[$extra]"
    else
      .venv/bin/python -m pip install --quiet -c requirements.lock -e .
    fi
    echo "$want" > "$stamp"
  fi
}
