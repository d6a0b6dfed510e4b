"""A resource's attributes as its row keeps them, and how ``get_attr`` reads them back.

A completed resource stores a JSON map: its attributes by name (what
``get_attr: [res]`` gives). Two things Heat's resources answer are more than a
value under a name, and are kept in the map in reserved forms:

- a failure: Heat keeps the exception an attribute raised (a nested output that
  failed, a group member that does not exist) and raises it where the
  attribute is read, so an output reading it gets ``output_error``. It is kept
  as ``{FAILURE: message}``.
- a read the resource answers as a whole: a group applies a path to each
  member's value, and ``resource.<n>`` with a path is the member's attribute
  rather than an item of its reference. For the types that answer so, the
  reads the stack's template makes of the resource (attribute and path, as
  Heat's ``referenced_attrs``) are answered when it completes and kept under
  ``READS``, keyed by :func:`read_key`; a name read without a path is also one
  of its attributes for ``get_attr: [res]``, as in Heat.

Everything else is read as before: the attribute, then the path selected in it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import orjson

from libs.template.functions import base
from libs.template.functions.hot_refs import select_path

FAILURE: Final = "ember:failure"
READS: Final = "ember:reads"


class AttributeFailed(Exception):
    """An attribute that cannot be read; the message is Heat's, shown as ``output_error``."""


def failure(message: str) -> dict[str, str]:
    return {FAILURE: message}


def failure_of(value: Any) -> str | None:
    """The message of a kept failure, None for any other value."""
    if isinstance(value, dict) and len(value) == 1 and isinstance(value.get(FAILURE), str):
        return str(value[FAILURE])
    return None


def checked(value: Any) -> Any:
    """``value``, or the failure it keeps raised."""
    message = failure_of(value)
    if message is not None:
        raise AttributeFailed(message)
    return value


def read_key(attribute: str, path: Sequence[Any]) -> str:
    return orjson.dumps([attribute, *path]).decode()


def stored(attributes: Mapping[str, Any], reads: Mapping[str, Any]) -> dict[str, Any]:
    """The map a row keeps: ``attributes`` by name, and ``reads`` (by :func:`read_key`) if any."""
    kept = dict(attributes)
    if reads:
        kept[READS] = dict(reads)
    return kept


def answers(kept: Mapping[str, Any], attribute: str, path: Sequence[Any]) -> bool:
    """Whether ``kept`` holds what :func:`read` answers of ``attribute`` and ``path``."""
    return attribute in kept or read_key(attribute, path) in (kept.get(READS) or {})


def with_reads(kept: Mapping[str, Any], answered: Mapping[str, Any]) -> dict[str, Any]:
    """``kept`` with ``answered`` (by :func:`read_key`) added to its reads."""
    return stored({k: v for k, v in kept.items() if k != READS}, {**(kept.get(READS) or {}), **answered})


def read(kept: Mapping[str, Any], attribute: str, path: Sequence[Any]) -> Any:
    """``get_attr: [res, attribute, *path]`` over what the row keeps (AttributeFailed on a failure)."""
    reads = kept.get(READS) or {}
    key = read_key(attribute, path)
    if key in reads:
        return checked(reads[key])
    if attribute == READS:
        return None
    return select_path(checked(kept.get(attribute)), path)


def read_all(kept: Mapping[str, Any]) -> dict[str, Any]:
    """``get_attr: [res]``: every attribute and every name read without a path; a failure raises."""
    values = {k: v for k, v in kept.items() if k != READS}
    for key, value in (kept.get(READS) or {}).items():
        attribute, *path = orjson.loads(key)
        if not path:
            values[attribute] = value
    return {k: checked(v) for k, v in values.items()}


def shown(kept: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes a resource show lists: a failure shows as null, as Heat shows it."""
    return {k: None if failure_of(v) is not None else v for k, v in kept.items() if k != READS}


def reads_in(snippets: Iterable[Any]) -> dict[str, frozenset[tuple[Any, ...]]]:
    """What ``snippets`` read of each resource, as ``(attribute, *path)`` (Heat's ``referenced_attrs``).

    ``get_attr: [res]`` is left out (it reads what the resource keeps by name),
    and so is a key that cannot be hashed (validation refuses it).
    """
    reads: dict[str, set[tuple[Any, ...]]] = {}
    for snippet in snippets:
        for name, key in base.all_dep_attrs(snippet):
            read = tuple(key) if isinstance(key, tuple) else (key,)
            if key == base.ALL_ATTRIBUTES or not isinstance(name, str) or not read or (
                    not isinstance(read[0], str)):
                continue
            try:
                hash(read)
            except TypeError:
                continue
            reads.setdefault(name, set()).add(read)
    return {name: frozenset(found) for name, found in reads.items()}


def wholly_read(snippets: Iterable[Any]) -> frozenset[str]:
    """The resources ``snippets`` read alone (``get_attr: [res]``, every attribute), which
    :func:`reads_in` leaves out."""
    return frozenset(name for snippet in snippets for name, key in base.all_dep_attrs(snippet)
                     if key == base.ALL_ATTRIBUTES and isinstance(name, str))
