"""The pure core (libs/template, libs/graph, libs/engine, cloud calls as data) imports no I/O library,
directly or indirectly."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PURE = ("libs/template", "libs/graph", "libs/engine", "libs/cloud/calls.py")
FORBIDDEN = ("asyncio", "asyncpg", "nats", "aiohttp", "openstack")


def _modules(package: str) -> list[Path]:
    path = ROOT / package
    return [path] if path.is_file() else sorted(path.rglob("*.py"))


@pytest.mark.parametrize("package", PURE)
def test_no_direct_io_imports(package: str) -> None:
    offenders = []
    for path in _modules(package):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            else:
                continue
            offenders += [f"{path.relative_to(ROOT)}:{node.lineno} {n}"
                          for n in names if n.split(".")[0] in FORBIDDEN]
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
