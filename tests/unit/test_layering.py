"""Where I/O lives: SQL only in libs/db, the NATS client only in libs/messaging."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CODE = ("libs", "services")
# The simulated OpenStack is a program of its own (`ember simcloud`, its own schema): its SQL
# stays in its own modules, apart from Ember's.
NOT_YET = ("libs/simcloud",)
SQL = re.compile(r"^\s*(SELECT|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|WITH\s+\w+\s+AS)\b")


def _modules(outside: str) -> Iterator[tuple[str, ast.AST]]:
    for top in CODE:
        for path in sorted((ROOT / top).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if name.startswith((outside, *NOT_YET)):
                continue
            yield name, ast.parse(path.read_text(), name)


def test_sql_statements_live_in_libs_db() -> None:
    found = [f"{name}:{node.lineno} {node.value.strip()[:40]}"
             for name, tree in _modules("libs/db/") for node in ast.walk(tree)
             if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.match(node.value)]
    assert found == []


def test_the_nats_client_lives_in_libs_messaging() -> None:
    found = []
    for name, tree in _modules("libs/messaging/"):
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            else:
                continue
            found += [f"{name}:{node.lineno} {n}" for n in names if n.split(".")[0] == "nats"]
    assert found == []
