"""HOT functions, table-driven: every case of fixtures/functions/*.yaml in every version it names.

The expectations come from Heat's own tests (heat/tests/test_hot.py) and from
behaviour observed on a real Heat (reference/heat.md, appendix); see
function_support for the case format.
"""

from __future__ import annotations

from typing import Any

import pytest

from libs.template.functions import base
from tests.unit.template.function_support import PATH, Case, all_cases, parse

CASES = list(all_cases())


@pytest.mark.parametrize(("defaults", "case"), CASES, ids=[c.id for _, c in CASES])
def test_case(defaults: dict[str, Any], case: Case) -> None:
    data = case.data
    resolver = case.resolver(defaults)
    condition = data.get("context") == "condition"
    parse_resolver = data.get("parse_resolver", True)
    try:
        parsed = parse(data["snippet"], case.date, resolver if parse_resolver else None,
                       condition=condition)
        base.validate(parsed, PATH)
        if "deps" in data:
            root = data.get("deps_root", "r.Properties.p")
            found = [[ref.resource, ref.path] for ref in base.dependencies(parsed, root)]
            assert found == data["deps"]
        for resource, attributes in (data.get("dep_attrs") or {}).items():
            assert list(base.dep_attrs(parsed, resource)) == attributes
        value = base.resolve(parsed, resolver, nullable=bool(data.get("expect_removed")))
    except AssertionError:
        raise
    except Exception as exc:
        got = f"{type(exc).__name__}: {exc}"
        assert "error" in data, f"unexpected error {got}"
        assert got == data["error"]
        return
    assert "error" not in data, f"expected {data.get('error')}, got value {value!r}"
    if data.get("expect_removed"):
        assert value is base.REMOVED
    else:
        assert value == data["expect"]
        assert type(value) is type(data["expect"])


def test_every_fixture_file_has_cases() -> None:
    files = {case.file for _, case in CASES}
    assert {"params.yaml", "refs.yaml", "strings.yaml", "collections.yaml", "repeat.yaml",
            "conditions.yaml", "yaql.yaml", "url.yaml", "versions.yaml"} <= files
