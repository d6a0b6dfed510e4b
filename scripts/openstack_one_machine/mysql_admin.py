"""Create or drop the cloud's databases (runs in the OpenStack venv, which has PyMySQL).

    venv/bin/python mysql_admin.py create|drop USER[:PASSWORD]@HOST:PORT NAME...

Only the names given are touched: the caller passes its prefixed names, never a pattern.
"""

from __future__ import annotations

import sys

import pymysql


def _connect(target: str) -> pymysql.connections.Connection:
    credentials, _, address = target.rpartition("@")
    user, _, password = credentials.partition(":")
    host, _, port = address.partition(":")
    return pymysql.connect(host=host, port=int(port or 3306), user=user or "root", password=password)


def main(argv: list[str]) -> None:
    verb, target, *names = argv
    if verb not in ("create", "drop"):
        raise SystemExit("usage: mysql_admin.py create|drop USER@HOST:PORT NAME...")
    conn = _connect(target)
    try:
        with conn.cursor() as cursor:
            for name in names:
                if not name.replace("_", "").isalnum():
                    raise SystemExit(f"refusing database name {name!r}")
                if verb == "create":
                    cursor.execute(f"CREATE DATABASE IF NOT EXISTS `{name}` CHARACTER SET utf8")
                else:
                    cursor.execute(f"DROP DATABASE IF EXISTS `{name}`")
        conn.commit()
    finally:
        conn.close()


if __name__ == "__main__":
    main(sys.argv[1:])
