"""Declared inputs and outputs are stored, or refused, as Heat 27.0.1's own code stores or refuses them.

``data/software_config_io_heat.json`` holds what Heat's ``InputConfig``/``OutputConfig`` made of
each declaration, run in the reference Heat (scripts/heat_reference). Ember's refusal also names
which declaration it was (``inputs[0]``), which Heat's does not: that part is taken out to compare.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from libs import software_config_io
from libs.template.errors import MalformedRequest, TemplateError

ROWS: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "data" / "software_config_io_heat.json").read_text())["rows"]


def _name(row: dict[str, Any]) -> str:
    return f"{row['kind']}:{json.dumps(row['declared'])}"


@pytest.mark.parametrize("row", ROWS, ids=_name)
def test_as_heat_stores_or_refuses_it(row: dict[str, Any]) -> None:
    kind = row["kind"]
    if "stored" in row:
        stored = software_config_io.checked(kind, row["declared"])
        assert stored == row["stored"]
        assert [list(item) for item in stored] == [list(item) for item in row["stored"]]  # Heat's key order
        return
    with pytest.raises(TemplateError) as caught:
        software_config_io.checked(kind, row["declared"])
    message = str(caught.value).replace(f"{kind}[0].", "").replace(f"{kind}[0]: ", "")
    assert (caught.value.error_type, message) == (row["error"], row["message"])
    if row["error"] == "ValueError":
        assert f"{kind}[0]" in str(caught.value)  # Ember's says which declaration


@pytest.mark.parametrize("declared", ["x", {"name": "a"}, 5])
def test_a_value_that_is_not_a_list_is_refused_naming_it(declared: Any) -> None:
    with pytest.raises(MalformedRequest, match=r"^outputs: Software Config I/O Schema must be in a list$"):
        software_config_io.checked("outputs", declared)


def test_an_item_that_is_not_a_map_is_refused_naming_it() -> None:
    with pytest.raises(MalformedRequest, match=r"^inputs\[1\]: Software Config I/O Schema must be a dict$"):
        software_config_io.checked("inputs", [{"name": "a"}, "b"])


def test_null_is_no_declarations() -> None:
    assert software_config_io.checked("inputs", None) == []
