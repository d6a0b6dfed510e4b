"""Files written whole or not at all: a reader (or a restarted agent) never sees half of one.

Written to a temporary name beside the target, flushed to disk, then renamed
over it, and the folder flushed so the rename survives a power cut.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import orjson


def write_bytes(path: Path, data: bytes, mode: int = 0o600) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    sync_folder(path.parent)


def write_json(path: Path, value: Any, mode: int = 0o600) -> None:
    write_bytes(path, orjson.dumps(value, option=orjson.OPT_INDENT_2), mode)


def read_json(path: Path) -> Any:
    """The file's value; FileNotFoundError when it was never written."""
    return orjson.loads(path.read_bytes())


def sync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
