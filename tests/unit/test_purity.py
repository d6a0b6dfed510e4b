"""Where I/O lives: the pure core (libs/template, libs/graph, libs/engine, cloud calls as data) imports
no I/O library, directly or indirectly; SQL statements stand only in libs/db, and only libs/messaging
imports the NATS client."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PURE = ("libs/template", "libs/graph", "libs/engine", "libs/cloud/calls.py",
        # What the software config agent decides: what to run, its journal, where to signal.
        "libs/agent/plan.py", "libs/agent/configs.py", "libs/agent/journal.py", "libs/agent/signals.py",
        "libs/agent/results.py", "libs/agent/hooks.py", "libs/agent/script_hook.py")
FORBIDDEN = ("asyncio", "asyncpg", "nats", "aiohttp", "openstack")
CODE = ("libs", "services")
# The simulated OpenStack is a program of its own (`ember simcloud`, its own schema): its SQL
# stays in its own modules, apart from Ember's.
ELSEWHERE = ("libs/simcloud",)
SQL = re.compile(r"^\s*(SELECT|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|WITH\s+\w+\s+AS)\b")


def _modules(package: str) -> list[Path]:
    path = ROOT / package
    return [path] if path.is_file() else sorted(path.rglob("*.py"))


def _code_outside(package: str) -> Iterator[tuple[str, ast.AST]]:
    """Every module of libs and services but those of ``package``, parsed."""
    for top in CODE:
        for path in _modules(top):
            name = path.relative_to(ROOT).as_posix()
            if not name.startswith((f"{package}/", *ELSEWHERE)):
                yield name, ast.parse(path.read_text(), name)


def _imports(name: str, tree: ast.AST) -> Iterator[tuple[str, str]]:
    """Each absolute import of a module: where (``path:line``) and what."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        else:
            continue
        yield from ((f"{name}:{node.lineno}", n) for n in names)


@pytest.mark.parametrize("package", PURE)
def test_no_direct_io_imports(package: str) -> None:
    offenders = []
    for path in _modules(package):
        name = str(path.relative_to(ROOT))
        offenders += [f"{where} {n}" for where, n in _imports(name, ast.parse(path.read_text(), name))
                      if n.split(".")[0] in FORBIDDEN]
    assert offenders == []


@pytest.mark.parametrize("package", PURE)
def test_importing_the_core_loads_no_io_library(package: str) -> None:
    # Indirect imports count too: a pure module importing libs.db would drag asyncpg in.
    modules = [".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
               for p in _modules(package)]
    code = (
        "import sys\n"
        f"for m in {modules!r}: __import__(m)\n"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == ""


def test_sql_statements_stand_only_in_libs_db() -> None:
    found = [f"{name}:{node.lineno} {node.value.strip()[:40]}"
             for name, tree in _code_outside("libs/db") for node in ast.walk(tree)
             if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.match(node.value)]
    assert found == []


def test_only_libs_messaging_imports_the_nats_client() -> None:
    found = [f"{where} {n}" for name, tree in _code_outside("libs/messaging")
             for where, n in _imports(name, tree) if n.split(".")[0] == "nats"]
    assert found == []
