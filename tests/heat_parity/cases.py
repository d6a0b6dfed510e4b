"""Heat-parity cases: requests written once, Heat's answers recorded once, Ember compared on every run.

A case is a YAML file under ``tests/heat_parity/cases/``: a list of steps, each
an API request (path relative to ``/v1/<project>``), with what to wait for
afterwards and which parts of the answer matter. ``scripts/heat_reference/record.py``
sends the steps to a real Heat and writes its answers, normalized, beside the case
as ``<case>.heat.json``; ``tests/integration/test_heat_parity.py`` sends them to
Ember and compares. This module is the pure part both share: loading, variable
substitution, normalization and comparison.

A step::

    - do: POST /stacks              # method and path; {name} is a saved variable
      body: {...}                   # JSON body (strings substituted too)
      wait: settled                 # settled | gone: poll the stack until its action ends / it is deleted;
                                    # a resource status (CREATE_IN_PROGRESS) with a resource's wait_on
      wait_on: /stacks/{child}      # which stack (or resource) to poll (default: the last stack created)
      save: {child: body.resources.0.physical_resource_id}
      check: [status, body.error]   # the parts compared (default: status and the whole body)
      ignore: [body.stack.parameters]          # parts neither side is compared on
      sort: {body.resources: resource_name}    # lists compared in this key's order ("a,b": a, then b;
                                               # lists inside the list are sorted too)
      sort_runs: {body.events: resource_status_reason}  # each run of neighbours equal in this key
                                               # sorted (by content), the runs kept in their order:
                                               # what happens together, in any order, between steps
                                               # whose order matters (a rolling update's batch)
      ordered: true                 # maps compared in key order too (a template as the user wrote it)
      known_difference: "why Ember answers otherwise, listed in the README"

Comparison is by subset: every key Heat answered must be in Ember's answer with
an equal value (Ember may add keys: its features are additive); lists must have
the same length and match item by item. With ``ordered``, the keys both answers
hold must also come in the same order.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

CASES_DIR = Path(__file__).parent / "cases"
PROJECT = "parity"

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?")
_HOST = re.compile(r"https?://[^/\s\"']+")
# A cloud's request ids in its clients' errors, whole or cut off by a 255-character event reason.
_REQUEST_ID = re.compile(r"\breq-[0-9a-f][0-9a-f-]*")
# Heat's 12-character short ids of resources, inside physical names (<stack>-<res>-<short>).
_SHORT = re.compile(r"(?<=-)[a-z2-7]{12}\b")
# Keys whose values come from who asks and how Heat was deployed, not from the behaviour compared:
# the user's name, and the project the fake Keystone of the reference Heat makes for stack users.
DEPLOYMENT_KEYS = frozenset({"stack_owner", "stack_user_project_id"})
_VAR = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclasses.dataclass(frozen=True)
class Step:
    method: str
    path: str
    body: Any = None
    wait: str | None = None
    wait_on: str = "/stacks/{stack}"
    save: Mapping[str, str] = dataclasses.field(default_factory=dict)
    check: Sequence[str] | None = None
    ignore: Sequence[str] = ()
    sort: Mapping[str, str] = dataclasses.field(default_factory=dict)
    sort_runs: Mapping[str, str] = dataclasses.field(default_factory=dict)
    ordered: bool = False
    known_difference: str | None = None


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    about: str
    steps: tuple[Step, ...]
    path: Path
    # ``slow_ci: true``: replayed by .ci/run only (a case of many cloud stacks), to keep ./test.sh short.
    slow: bool = False

    @property
    def recording(self) -> Path:
        return self.path.with_suffix(".heat.json")


class _Loader(yaml.SafeLoader):
    """YAML as Heat reads templates: a date such as ``2016-10-14`` stays a string."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}


def load(path: Path) -> Case:
    raw = yaml.load(path.read_text(), Loader=_Loader)  # a SafeLoader
    steps = []
    for item in raw["steps"]:
        method, _, url = str(item["do"]).partition(" ")
        steps.append(Step(method=method.upper(), path=url.strip(), body=item.get("body"),
                          wait=item.get("wait"),
                          wait_on=item.get("wait_on", "/stacks/{stack}"), save=item.get("save") or {},
                          check=item.get("check"), ignore=tuple(item.get("ignore") or ()),
                          sort=item.get("sort") or {}, sort_runs=item.get("sort_runs") or {},
                          ordered=bool(item.get("ordered")),
                          known_difference=item.get("known_difference")))
    name = str(path.relative_to(CASES_DIR).with_suffix(""))
    return Case(name=name, about=str(raw.get("about", "")), steps=tuple(steps), path=path,
                slow=bool(raw.get("slow_ci", False)))


def all_cases() -> list[Case]:
    return [load(p) for p in sorted(CASES_DIR.rglob("*.yaml"))]


def substitute(value: Any, variables: Mapping[str, str]) -> Any:
    """``{name}`` in every string of ``value`` replaced by the saved variable (unknown names stay)."""
    if isinstance(value, str):
        return _VAR.sub(lambda m: str(variables.get(m.group(1), m.group(0))), value)
    if isinstance(value, list):
        return [substitute(v, variables) for v in value]
    if isinstance(value, dict):
        return {substitute(k, variables): substitute(v, variables) for k, v in value.items()}
    return value


def normalize(value: Any) -> Any:
    """What differs between any two runs (ids, times, hosts, short ids) replaced by placeholders."""
    if isinstance(value, str):
        text = _REQUEST_ID.sub("req-<uuid>", _HOST.sub("", value))
        text = _UUID.sub("<uuid>", text)
        text = _TIME.sub("<time>", text)
        return _SHORT.sub("<short>", text)
    if isinstance(value, list):
        return [normalize(v) for v in value]
    if isinstance(value, dict):
        return {normalize(k): normalize(v) for k, v in value.items() if k not in DEPLOYMENT_KEYS}
    return value


def get_path(answer: Any, path: str) -> Any:
    """The value at a dotted path (list items by index); ``KeyError`` when absent."""
    node = answer
    for part in path.split("."):
        if isinstance(node, list):
            node = node[int(part)]
        elif isinstance(node, dict):
            node = node[part]
        else:
            raise KeyError(path)
    return node


def drop_path(answer: Any, path: str) -> None:
    """Remove a dotted path (``*`` matches any key or index) from ``answer``, where present."""
    head, _, rest = path.partition(".")
    keys: list[Any]
    if isinstance(answer, dict):
        keys = list(answer) if head == "*" else [head] if head in answer else []
    elif isinstance(answer, list):
        keys = list(range(len(answer))) if head == "*" else [int(head)] if head.isdigit() and int(
            head) < len(answer) else []
    else:
        return
    for key in reversed(keys):
        if rest:
            drop_path(answer[key], rest)
        elif isinstance(answer, dict):
            del answer[key]
        else:
            del answer[key]


def _sort_key(item: Any, fields: Sequence[str]) -> tuple[str, ...]:
    if isinstance(item, dict):
        return tuple(str(item.get(f)) for f in fields)
    if isinstance(item, list) and item and isinstance(item[0], dict | list):
        return _sort_key(item[0], fields)  # a nested list, sorted already: by its first item
    return (str(item),)


def _sort(items: list[Any], fields: Sequence[str]) -> None:
    for item in items:
        if isinstance(item, list) and item and isinstance(item[0], dict | list):
            _sort(item, fields)  # a preview's nested stacks are lists inside the list
    items.sort(key=lambda item: _sort_key(item, fields))


def sort_at(answer: Any, path: str, key: str) -> None:
    """Sort the list at ``path`` by ``key`` (``a,b``: by a, then b), lists of dicts inside it too."""
    try:
        found = get_path(answer, path)
    except (KeyError, IndexError, ValueError):
        return
    if isinstance(found, list):
        _sort(found, key.split(","))


def sort_runs_at(answer: Any, path: str, key: str) -> None:
    """In the list at ``path``, sort each run of neighbours whose ``key`` is equal (by their whole
    content, as compared: after the ignored parts are gone), keeping the runs in their order."""
    try:
        found = get_path(answer, path)
    except (KeyError, IndexError, ValueError):
        return
    if not isinstance(found, list):
        return
    runs: list[list[Any]] = []
    for item in found:
        value = item.get(key) if isinstance(item, dict) else None
        if runs and isinstance(runs[-1][0], dict) and runs[-1][0].get(key) == value:
            runs[-1].append(item)
        else:
            runs.append([item])
    found[:] = [item for run in runs for item in sorted(run, key=lambda i: json.dumps(i, sort_keys=True))]


def shaped(step: Step, answer: dict[str, Any]) -> dict[str, Any]:
    """The answer as compared: normalized, sorted where asked, ignored parts removed, checked parts kept."""
    out = normalize(answer)
    for path, key in step.sort.items():
        sort_at(out, path, key)
    for path in step.ignore:
        drop_path(out, path)
    for path, key in step.sort_runs.items():
        sort_runs_at(out, path, key)
    if step.check is None:
        return dict(out)
    kept: dict[str, Any] = {}
    for path in step.check:
        try:
            kept[path] = get_path(out, path)
        except (KeyError, IndexError, ValueError):
            kept[path] = "<absent>"
    return kept


def differences(heat: Any, ember: Any, where: str = "", *, ordered: bool = False) -> list[str]:
    """Where Ember's answer does not hold Heat's: missing keys, other values, other list lengths.

    ``ordered``: the keys of a map that both hold must also come in Heat's order.
    """
    if isinstance(heat, dict):
        if not isinstance(ember, dict):
            return [f"{where or '.'}: Heat {heat!r}, Ember {ember!r}"]
        out: list[str] = []
        if ordered and [k for k in heat if k in ember] != [k for k in ember if k in heat]:
            out.append(f"{where or '.'}: keys in order Heat {list(heat)!r}, Ember {list(ember)!r}")
        for key, value in heat.items():
            if key not in ember:
                out.append(f"{where}.{key}: missing (Heat {value!r})")
            else:
                out.extend(differences(value, ember[key], f"{where}.{key}", ordered=ordered))
        return out
    if isinstance(heat, list):
        if not isinstance(ember, list) or len(ember) != len(heat):
            return [f"{where or '.'}: Heat {heat!r}, Ember {ember!r}"]
        return [d for i, (h, e) in enumerate(zip(heat, ember, strict=True))
                for d in differences(h, e, f"{where}.{i}", ordered=ordered)]
    if heat != ember:
        return [f"{where or '.'}: Heat {heat!r}, Ember {ember!r}"]
    return []
