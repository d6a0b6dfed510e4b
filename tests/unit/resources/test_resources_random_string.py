"""OS::Heat::RandomString: validation (with the hidden ``sequence``), generation, ids, replacement."""

from __future__ import annotations

import re
import string
from typing import Any

import pytest

from libs.engine.status import Action
from libs.resources.steps import Done, Failed, StepResult
from libs.template.errors import StackValidationFailed
from tests.unit.resources.resource_support import drive, make_ctx, plugin

RANDOM = plugin("OS::Heat::RandomString")
PID = "st-s-abcdefghijkl"
PREFIX = "Property error: resources.s.properties"
CLASSES = '["lettersdigits", "letters", "lowercase", "uppercase", "digits", "hexdigits", "octdigits"]'


def _props(raw: dict[str, Any]) -> dict[str, Any]:
    return RANDOM.validate(raw, resource_name="s")


def _create(raw: dict[str, Any], seed: int = 7, data: dict[str, str] | None = None) -> StepResult:
    [result] = drive(RANDOM, Action.CREATE, make_ctx(_props(raw), resource_name="s", seed=seed, data=data),
                     [100])
    return result


def _value(raw: dict[str, Any], seed: int = 7) -> str:
    result = _create(raw, seed)
    assert isinstance(result, Done) and result.physical_id == PID
    value = result.data["value"]
    assert value is not None
    return value


# ---- validation -------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({}, {"length": 32, "sequence": None, "character_classes": [{"class": "lettersdigits", "min": 1}],
              "character_sequences": None, "salt": None}),
        ({"length": "10", "character_sequences": [{"sequence": "@"}], "salt": 5},
         {"length": 10, "sequence": None, "character_classes": [{"class": "lettersdigits", "min": 1}],
          "character_sequences": [{"sequence": "@", "min": 1}], "salt": "5"}),
        ({"character_classes": [{"min": 3}, {"class": "digits"}]},
         {"length": 32, "sequence": None,
          "character_classes": [{"class": "lettersdigits", "min": 3}, {"class": "digits", "min": 1}],
          "character_sequences": None, "salt": None}),
        # the hidden, deprecated `sequence` becomes a class with min 1, and is itself gone
        ({"length": 100, "sequence": "octdigits"},
         {"length": 100, "sequence": None, "character_classes": [{"class": "octdigits", "min": 1}],
          "character_sequences": None, "salt": None}),
        ({"sequence": "digits", "character_classes": [{"class": "letters", "min": 2}]},
         {"length": 32, "sequence": None,
          "character_classes": [{"class": "letters", "min": 2}, {"class": "digits", "min": 1}],
          "character_sequences": None, "salt": None}),
        ({"sequence": "digits", "character_classes": None},
         {"length": 32, "sequence": None, "character_classes": [{"class": "digits", "min": 1}],
          "character_sequences": None, "salt": None}),
        # a class added on its own is not checked (creating it fails later, as in Heat)
        ({"sequence": "bogus"},
         {"length": 32, "sequence": None, "character_classes": [{"class": "bogus", "min": 1}],
          "character_sequences": None, "salt": None}),
        ({"length": 2, "character_classes": [{"class": "digits", "min": 1}],
          "character_sequences": [{"sequence": "ab", "min": 1}]},
         {"length": 2, "sequence": None, "character_classes": [{"class": "digits", "min": 1}],
          "character_sequences": [{"sequence": "ab", "min": 1}], "salt": None}),
    ],
)
def test_validation(raw: dict[str, Any], expected: dict[str, Any]) -> None:
    assert _props(raw) == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"length": 513}, f"{PREFIX}.length: 513 is out of range (min: 1, max: 512)"),
        ({"length": 0}, f"{PREFIX}.length: 0 is out of range (min: 1, max: 512)"),
        ({"length": "3a"}, f"{PREFIX}.length: Value '3a' is not an integer"),
        ({"character_classes": [{"class": "symbols"}]},
         f'{PREFIX}.character_classes[0].class: "symbols" is not an allowed value {CLASSES}'),
        ({"character_classes": [{"min": 0}]},
         f"{PREFIX}.character_classes[0].min: 0 is out of range (min: 1, max: 512)"),
        ({"character_sequences": [{"min": 2}]},
         f"{PREFIX}.character_sequences[0]: Property sequence not assigned"),
        ({"character_sequences": [{"sequence": "a", "count": 2}]},
         f"{PREFIX}.character_sequences[0]: Unknown Property count"),
        # the sequence's class is checked when classes are given...
        ({"sequence": "bogus", "character_classes": []},
         f'{PREFIX}.character_classes[0].class: "bogus" is not an allowed value {CLASSES}'),
        ({"sequence": "digits", "character_classes": "x"},
         f'{PREFIX}.character_classes: Incorrect translation rule using - cannot resolve Add rule for '
         f'non-list translation value "character_classes".'),
        # ...and an empty sequence is not translated, so it is checked itself
        ({"sequence": ""}, f'{PREFIX}.sequence: "" is not an allowed value {CLASSES}'),
        # Heat's own check: a plain message with no path
        ({"length": 5, "character_classes": [{"class": "digits", "min": 5}],
          "character_sequences": [{"sequence": "(),[]{}", "min": 1}]},
         "Length property cannot be smaller than combined character class and character sequence minimums"),
        ({"length": 1, "character_sequences": [{"sequence": "a"}]},
         "Length property cannot be smaller than combined character class and character sequence minimums"),
    ],
)
def test_validation_errors(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(StackValidationFailed) as caught:
        _props(raw)
    assert str(caught.value) == message


# ---- generation ---------------------------------------------------------------------------------------

SEQS = [{"sequence": "(),[]{}", "min": 1}, {"sequence": "$_", "min": 2}, {"sequence": "@", "min": 5}]


@pytest.mark.parametrize(
    ("raw", "length", "minimums", "alphabet"),
    [
        ({}, 32, {}, string.ascii_letters + string.digits),
        ({"length": 10}, 10, {}, string.ascii_letters + string.digits),
        ({"length": 1}, 1, {}, string.ascii_letters + string.digits),
        ({"length": 512}, 512, {}, string.ascii_letters + string.digits),
        ({"character_classes": [{"class": "digits", "min": 1}, {"class": "uppercase", "min": 1},
                                {"class": "lowercase", "min": 20}], "character_sequences": SEQS},
         32, {"[0-9]": 1, "[A-Z]": 1, "[a-z]": 20, r"[(),\[\]{}]": 1, "[$_]": 2, "@": 5},
         string.digits + string.ascii_letters + "(),[]{}$_@"),
        ({"length": 10, "character_sequences": SEQS}, 10, {r"[(),\[\]{}]": 1, "[$_]": 2, "@": 5},
         string.ascii_letters + string.digits + "(),[]{}$_@"),
        ({"length": 100, "sequence": "octdigits"}, 100, {"[0-7]": 100}, "01234567"),
        # Heat's hexdigits are upper case only
        ({"length": 64, "character_classes": [{"class": "hexdigits"}]}, 64, {}, "0123456789ABCDEF"),
        ({"length": 8, "character_classes": [], "character_sequences": [{"sequence": "aab", "min": 8}]},
         8, {"[ab]": 8}, "ab"),
    ],
)
def test_generated_value(raw: dict[str, Any], length: int, minimums: dict[str, int], alphabet: str) -> None:
    for seed in range(5):
        value = _value(raw, seed)
        assert len(value) == length
        assert set(value) <= set(alphabet)
        for pattern, minimum in minimums.items():
            assert len(re.findall(pattern, value)) >= minimum


def test_generation_uses_only_the_context_rng() -> None:
    assert _value({}, seed=1) == _value({}, seed=1)
    assert _value({}, seed=1) != _value({}, seed=2)


def test_redelivered_create_keeps_the_value() -> None:
    assert _create({}, seed=3, data={"value": "already-drawn"}) == Done(PID, {"value": "already-drawn"})


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # nothing to draw from: Heat's IndexError, worded by Python
        ({"character_classes": []}, Failed("Cannot choose from an empty sequence", "IndexError")),
        ({"character_sequences": [{"sequence": ""}]},
         Failed("Cannot choose from an empty sequence", "IndexError")),
        # an unchecked class from `sequence` trips Heat's bare assertion
        ({"sequence": "bogus"}, Failed("", "AssertionError")),
    ],
)
def test_create_failures(raw: dict[str, Any], expected: Failed) -> None:
    assert _create(raw) == expected


@pytest.mark.parametrize("action", [Action.UPDATE, Action.DELETE, Action.SUSPEND, Action.RESUME])
def test_other_actions_complete_at_once(action: Action) -> None:
    assert RANDOM.start(action, make_ctx(_props({}), physical_id=PID, data={"value": "v"})) == Done()


def test_check_is_not_supported() -> None:
    assert RANDOM.start(Action.CHECK, make_ctx(_props({}), physical_id=PID)) == Done(
        reason="CHECK not supported for OS::Heat::RandomString")


# ---- references, attributes, replacement ------------------------------------------------------------

@pytest.mark.parametrize(
    ("physical_id", "data", "reference"),
    [(PID, {"value": "s3cr3t"}, "s3cr3t"), (None, {}, "s")],
)
def test_reference_id(physical_id: str | None, data: dict[str, str], reference: str) -> None:
    assert RANDOM.reference_id(physical_id, data, resource_name="s") == reference


def test_attributes() -> None:
    props = _props({})
    assert RANDOM.attribute("value", PID, {"value": "s3cr3t"}, props) == "s3cr3t"
    assert RANDOM.all_attributes(PID, {"value": "s3cr3t"}, props) == {"value": "s3cr3t"}
    assert RANDOM.attribute("show", PID, {"value": "s3cr3t"}, props) is None
    assert RANDOM.secret_data == frozenset({"value"})


@pytest.mark.parametrize(
    ("old", "new", "replace"),
    [
        ({}, {}, False),
        ({"salt": "a"}, {"salt": "a"}, False),
        ({"salt": "a"}, {"salt": "b"}, True),
        ({}, {"salt": "first"}, True),
        ({}, {"length": 33}, True),
        ({}, {"character_classes": [{"class": "digits"}]}, True),
        ({}, {"sequence": "lettersdigits"}, False),  # translates to the default classes
        ({}, {"sequence": "digits"}, True),
    ],
)
def test_needs_replace(old: dict[str, Any], new: dict[str, Any], replace: bool) -> None:
    assert RANDOM.needs_replace(_props(old), _props(new)) is replace
