"""Resource plugins are pure: no I/O library, no sleeping, no clock of their own."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "libs" / "resources"
# Time comes in through StepContext; I/O and concurrency belong to the worker.
FORBIDDEN = ("asyncio", "asyncpg", "nats", "aiohttp", "time", "socket", "subprocess", "threading",
             "urllib", "http")


def _imports(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def test_no_forbidden_imports() -> None:
    offenders = [f"{path.name}: {name}" for path in sorted(PACKAGE.rglob("*.py"))
                 for name in _imports(path) if name.split(".")[0] in FORBIDDEN]
    assert offenders == []


def test_no_clock_reads() -> None:
    calls = [f"{path.name}:{node.lineno}" for path in sorted(PACKAGE.rglob("*.py"))
             for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Attribute) and node.attr in ("now", "utcnow", "today", "sleep")
             and isinstance(node.value, ast.Name) and node.value.id in ("datetime", "date", "time")]
    assert calls == []


def test_importing_loads_no_io_library() -> None:
    modules = [".".join(p.relative_to(ROOT).with_suffix("").parts) for p in sorted(PACKAGE.rglob("*.py"))
               if p.stem != "__init__"]
    code = (
        "import sys\n"
        f"for m in {modules!r}: __import__(m)\n"
        "import libs.resources.registry as r; r.default_registry()\n"
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('asyncio', 'asyncpg', 'nats', 'aiohttp'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
