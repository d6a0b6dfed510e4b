"""Property validation: Heat's conversions, defaults, constraints, and messages with their paths."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from libs.resources.properties import UNKNOWN, PropSchema, validate_properties
from libs.template.constraints import (
    AllowedPattern,
    AllowedValues,
    CustomConstraint,
    Length,
    Modulo,
    Range,
)
from libs.template.custom_constraints import CustomConstraintRegistry, default_custom_constraints
from libs.template.errors import InvalidSchemaError, StackValidationFailed

PREFIX = "Property error: resources.r.properties"


def _typed(schema: Mapping[str, PropSchema], values: Mapping[str, Any] | None, **kw: Any) -> dict[str, Any]:
    return validate_properties(schema, values, resource_name="r", **kw)


def _error(schema: Mapping[str, PropSchema], values: Mapping[str, Any] | None, **kw: Any) -> str:
    with pytest.raises(StackValidationFailed) as caught:
        _typed(schema, values, **kw)
    assert caught.value.error_type == "StackValidationFailed"
    return str(caught.value)


# ---- conversions, one type at a time ---------------------------------------------------------------

@pytest.mark.parametrize(
    ("prop", "raw", "expected"),
    [
        # string: ints and booleans are str()-ed, None becomes the default or ""
        (PropSchema("string"), "abc", "abc"),
        (PropSchema("string"), 3, "3"),
        (PropSchema("string"), True, "True"),
        (PropSchema("string"), None, ""),
        (PropSchema("string", default="dflt"), None, "dflt"),
        (PropSchema("string"), "", ""),
        # integer: int(), so floats truncate and padded strings parse
        (PropSchema("integer"), "42", 42),
        (PropSchema("integer"), " 7 ", 7),
        (PropSchema("integer"), 2.9, 2),
        (PropSchema("integer"), True, 1),
        (PropSchema("integer"), None, 0),
        (PropSchema("integer", default=5), None, 5),
        # number: ints stay ints, other strings become floats
        (PropSchema("number"), "1", 1),
        (PropSchema("number"), "1.5", 1.5),
        (PropSchema("number"), 2.5, 2.5),
        (PropSchema("number"), None, 0),
        (PropSchema("number", default=-1), None, -1),
        # boolean: real booleans, or "true"/"false" in any case; nothing else
        (PropSchema("boolean"), True, True),
        (PropSchema("boolean"), "TRUE", True),
        (PropSchema("boolean"), "False", False),
        (PropSchema("boolean"), None, False),
        (PropSchema("boolean", default=True), None, True),
        # map: copied; None is {} or the default
        (PropSchema("map"), {"a": 1}, {"a": 1}),
        (PropSchema("map"), None, {}),
        (PropSchema("map", default={"d": 1}), None, {"d": 1}),
        # list: any sequence but a string; None is [] or the default
        (PropSchema("list"), ["a", 1], ["a", 1]),
        (PropSchema("list"), None, []),
        (PropSchema("list", default=["x"]), None, ["x"]),
        (PropSchema("list", schema=PropSchema("integer")), ["1", 2], [1, 2]),
        # any: as given, null included, and a default is never used
        (PropSchema("any"), {"k": [1]}, {"k": [1]}),
        (PropSchema("any"), None, None),
        (PropSchema("any", default="d"), None, None),
    ],
)
def test_conversion(prop: PropSchema, raw: Any, expected: Any) -> None:
    typed = _typed({"p": prop}, {"p": raw})
    assert typed["p"] == expected
    assert type(typed["p"]) is type(expected)


@pytest.mark.parametrize(
    ("prop", "raw", "message"),
    [
        (PropSchema("string"), {"not": "a string"}, "Value must be a string; got {'not': 'a string'}"),
        (PropSchema("string"), ["foo", "bar"], "Value must be a string; got ['foo', 'bar']"),
        (PropSchema("string"), 1.5, "Value must be a string; got 1.5"),
        (PropSchema("integer"), "abc", "Value 'abc' is not an integer"),
        (PropSchema("integer"), "3.5", "Value '3.5' is not an integer"),
        (PropSchema("integer"), [1],
         "int() argument must be a string, a bytes-like object or a real number, not 'list'"),
        (PropSchema("integer"), float("inf"), "cannot convert float infinity to integer"),
        (PropSchema("number"), "abc", "could not convert string to float: 'abc'"),
        (PropSchema("number"), {"one": "x"},
         "int() argument must be a string, a bytes-like object or a real number, not 'dict'"),
        # the message shows the lowered text
        (PropSchema("boolean"), "YES", '"yes" is not a valid boolean'),
        (PropSchema("boolean"), "fish", '"fish" is not a valid boolean'),
        (PropSchema("boolean"), 1, '"1" is not a valid boolean'),
        (PropSchema("boolean"), [True], '"[True]" is not a valid boolean'),
        (PropSchema("map"), "a,b", '"a,b" is not a map'),
        (PropSchema("map"), '{"a": 1}', '"{"a": 1}" is not a map'),
        (PropSchema("map"), [1, 2], '"[1, 2]" is not a map'),
        (PropSchema("list"), "a,b", "\"'a,b'\" is not a list"),
        (PropSchema("list"), {"a": 1}, "\"{'a': 1}\" is not a list"),
        (PropSchema("list"), 5, '"5" is not a list'),
    ],
)
def test_conversion_errors(prop: PropSchema, raw: Any, message: str) -> None:
    assert _error({"p": prop}, {"p": raw}) == f"{PREFIX}.p: {message}"


# ---- presence: given, defaulted, missing, unknown -----------------------------------------------------

SCHEMA = {
    "req": PropSchema("string", required=True),
    "opt": PropSchema("string"),
    "dflt": PropSchema("integer", default=3),
    "opt_map": PropSchema("map", schema={"x": PropSchema("number")}),
}


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        # absent without default -> None; absent with default -> the default
        ({"req": "a"}, {"req": "a", "opt": None, "dflt": 3, "opt_map": None}),
        # explicit null is given: the default, or the type's empty value, never "missing"
        ({"req": None, "opt": None, "dflt": None, "opt_map": None},
         {"req": "", "opt": "", "dflt": 3, "opt_map": {"x": None}}),
        ({"req": "a", "opt_map": {}}, {"req": "a", "opt": None, "dflt": 3, "opt_map": {"x": None}}),
        ({"req": "a", "opt_map": {"x": "2"}}, {"req": "a", "opt": None, "dflt": 3, "opt_map": {"x": 2}}),
    ],
)
def test_presence(values: dict[str, Any], expected: dict[str, Any]) -> None:
    assert _typed(SCHEMA, values) == expected


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({}, f"{PREFIX}: Property req not assigned"),
        (None, f"{PREFIX}: Property req not assigned"),
        ({"req": "a", "foo": 1}, f"{PREFIX}: Unknown Property foo"),
        # unknown names are reported before any value
        ({"foo": 1}, f"{PREFIX}: Unknown Property foo"),
        ({"req": "a", "opt_map": {"y": 1}}, f"{PREFIX}.opt_map: Unknown Property y"),
        ({"req": "a", "opt_map": {"x": "q"}},
         f"{PREFIX}.opt_map.x: could not convert string to float: 'q'"),
    ],
)
def test_presence_errors(values: dict[str, Any] | None, message: str) -> None:
    assert _error(SCHEMA, values) == message


def test_first_error_in_schema_order() -> None:
    schema = {"b": PropSchema("integer"), "a": PropSchema("integer")}
    assert _error(schema, {"a": "x", "b": "y"}) == f"{PREFIX}.b: Value 'y' is not an integer"


# ---- nesting: Heat's paths -------------------------------------------------------------------------

ITEM = PropSchema("map", schema={"Key": PropSchema("string", required=True),
                                 "Value": PropSchema("boolean", default=True)})
NESTED = {
    "foo": PropSchema("list", schema=ITEM),
    "bar": PropSchema("map", schema={"boo": PropSchema("map", schema={
        "doo": PropSchema("map", schema={"Key": PropSchema("string", required=True)})})}),
    "ints": PropSchema("list", schema=PropSchema("integer", constraints=(Range(0, 9),))),
}


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"foo": [{"Key": "Test", "bar": "baz"}]}, f"{PREFIX}.foo[0]: Unknown Property bar"),
        ({"foo": [{"Key": "a"}, {"Key": "b", "Value": "fish"}]},
         f'{PREFIX}.foo[1].Value: "fish" is not a valid boolean'),
        ({"foo": [{"Key": "a"}, {}]}, f"{PREFIX}.foo[1]: Property Key not assigned"),
        ({"foo": ["x"]}, f'{PREFIX}.foo[0]: "x" is not a map'),
        ({"bar": {"boo": {"doo": {"Key": "Test", "bar": "baz"}}}},
         f"{PREFIX}.bar.boo.doo: Unknown Property bar"),
        ({"bar": {"boo": {"doo": {}}}}, f"{PREFIX}.bar.boo.doo: Property Key not assigned"),
        ({"ints": [42, "fish"]}, f"{PREFIX}.ints[0]: 42 is out of range (min: 0, max: 9)"),
        ({"ints": [1, "fish"]}, f"{PREFIX}.ints[1]: Value 'fish' is not an integer"),
    ],
)
def test_nested_errors(values: dict[str, Any], message: str) -> None:
    assert _error(NESTED, values) == message


def test_nested_values() -> None:
    typed = _typed(NESTED, {"foo": [{"Key": "k"}, {"Key": "j", "Value": "false"}],
                            "bar": {"boo": {}}})
    assert typed == {
        "foo": [{"Key": "k", "Value": True}, {"Key": "j", "Value": False}],
        "bar": {"boo": {"doo": None}},
        "ints": None,
    }


# ---- constraints -----------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("prop", "raw", "message"),
    [
        (PropSchema("integer", constraints=(Range(1, 512),)), 513,
         "513 is out of range (min: 1, max: 512)"),
        (PropSchema("number", constraints=(Range(None, 2.5),)), "3",
         "3 is out of range (min: None, max: 2.5)"),
        (PropSchema("string", constraints=(Length(2, 3),)), "abcd",
         "length (4) is out of range (min: 2, max: 3)"),
        (PropSchema("list", constraints=(Length(1, None),)), [],
         "length (0) is out of range (min: 1, max: None)"),
        (PropSchema("map", constraints=(Length(None, 1),)), {"a": 1, "b": 2},
         "length (2) is out of range (min: None, max: 1)"),
        (PropSchema("integer", constraints=(Modulo(2, 1),)), 4,
         "4 is not a multiple of 2 with an offset of 1"),
        (PropSchema("string", constraints=(AllowedValues(("a", "b")),)), "x",
         '"x" is not an allowed value ["a", "b"]'),
        (PropSchema("integer", constraints=(AllowedValues((1, 2)),)), "3",
         "3 is not an allowed value [1, 2]"),
        (PropSchema("integer", constraints=(AllowedValues((1, 2.5)),)), 1,
         'Value "2.5" is invalid for data type "Integer".'),
        (PropSchema("integer", constraints=(AllowedValues(("one",)),)), 1,
         'Value "one" is invalid for data type "Integer".'),
        (PropSchema("number", constraints=(AllowedValues(("one",)),)), 1,
         'Value "one" is invalid for data type "Number".'),
        (PropSchema("boolean", constraints=(AllowedValues((True,)),)), "false",
         "false is not an allowed value [true]"),
        (PropSchema("list", constraints=(AllowedValues(("a", "b")),)), ["a", "c"],
         '["a", "c"] is not an allowed value ["a", "b"]'),
        (PropSchema("string", constraints=(AllowedPattern("[a-z]*"),)), "aB",
         '"aB" does not match pattern "[a-z]*"'),
        # the description replaces Heat's own verdict
        (PropSchema("string", constraints=(AllowedValues(("a",), "only a"),)), "b", "only a"),
        # custom constraints: registered, failing with a reason, unknown, escaping a Python error
        (PropSchema("string", constraints=(CustomConstraint("ip_addr"),)), "1.2.3",
         "Error validating value '1.2.3': Invalid IP address"),
        (PropSchema("string", constraints=(CustomConstraint("no.such_thing"),)), "x",
         '"x" does not validate no.such_thing (constraint not found)'),
        (PropSchema("number", constraints=(CustomConstraint("test_constr"),)), -1,
         "sleep length must be non-negative"),
    ],
)
def test_constraint_errors(prop: PropSchema, raw: Any, message: str) -> None:
    assert _error({"p": prop}, {"p": raw}) == f"{PREFIX}.p: {message}"


@pytest.mark.parametrize(
    ("prop", "raw"),
    [
        (PropSchema("integer", constraints=(Range(1, 512),)), "512"),
        (PropSchema("string", constraints=(AllowedValues(("a", "b")),)), "b"),
        (PropSchema("integer", constraints=(AllowedValues((1, 2)),)), "2"),
        (PropSchema("list", constraints=(AllowedValues(("a", "b")),)), ["b", "a"]),
        (PropSchema("string", constraints=(CustomConstraint("ip_addr"),)), "10.0.0.1"),
        (PropSchema("number", constraints=(CustomConstraint("test_constr"),)), 0),
        # a default is checked against custom constraints when it is used
        (PropSchema("number", default=0, constraints=(CustomConstraint("test_constr"),)), None),
    ],
)
def test_constraint_passes(prop: PropSchema, raw: Any) -> None:
    _typed({"p": prop}, {"p": raw})


def test_custom_constraints_come_from_the_caller() -> None:
    only_mine = CustomConstraintRegistry()
    only_mine.register("even", lambda v: None if v % 2 == 0 else "odd")
    prop = PropSchema("integer", constraints=(CustomConstraint("even"),))
    _typed({"p": prop}, {"p": 2}, custom_constraints=only_mine)
    assert (_error({"p": prop}, {"p": 3}, custom_constraints=only_mine)
            == f"{PREFIX}.p: Error validating value '3': odd")
    assert _error({"p": prop}, {"p": 2}, custom_constraints=default_custom_constraints()) == (
        f'{PREFIX}.p: "2" does not validate even (constraint not found)')


# ---- values not known yet ---------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("prop", "raw", "expected"),
    [
        (PropSchema("integer", required=True, constraints=(Range(1, 2),)), UNKNOWN, UNKNOWN),
        (PropSchema("string", constraints=(CustomConstraint("nova.flavor"),)), UNKNOWN, UNKNOWN),
        (PropSchema("list", schema=PropSchema("integer")), ["1", UNKNOWN], [1, UNKNOWN]),
        # a list holding an unknown item cannot be judged as a whole
        (PropSchema("list", constraints=(AllowedValues(("a",)),)), ["a", UNKNOWN], ["a", UNKNOWN]),
        (PropSchema("map", schema={"x": PropSchema("boolean")}), {"x": UNKNOWN}, {"x": UNKNOWN}),
    ],
)
def test_unknown_values_pass(prop: PropSchema, raw: Any, expected: Any) -> None:
    assert _typed({"p": prop}, {"p": raw}) == {"p": expected}


def test_unknown_is_one_object() -> None:
    import copy
    import pickle

    assert copy.deepcopy(UNKNOWN) is UNKNOWN
    assert pickle.loads(pickle.dumps(UNKNOWN)) is UNKNOWN
    assert repr(UNKNOWN) == "UNKNOWN"


# ---- sections, and validation without values ---------------------------------------------------------

def test_cfn_spelling_of_sections() -> None:
    message = _error({"p": PropSchema("integer")}, {"p": "x"}, resource_section="Resources",
                     properties_section="Properties")
    assert message == "Property error: Resources.r.Properties.p: Value 'x' is not an integer"


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        # values are not checked: kept as given where they do not convert
        ({"p": "x", "q": "abc"}, {"p": "x", "q": "abc", "req": None}),
        ({"p": "7", "q": "9"}, {"p": 7, "q": "9", "req": None}),
    ],
)
def test_lenient_validation(values: dict[str, Any], expected: dict[str, Any]) -> None:
    schema = {"p": PropSchema("integer"), "q": PropSchema("string", constraints=(Length(1, 1),)),
              "req": PropSchema("string", required=True)}
    assert _typed(schema, values, strict_values=False) == expected
    # ...but unknown names are still errors
    assert (_error(schema, {"zz": 1}, strict_values=False) == f"{PREFIX}: Unknown Property zz")


# ---- declaring schemas ------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: PropSchema("float"), "Invalid type (float)"),  # type: ignore[arg-type]
        (lambda: PropSchema("map", schema=PropSchema("string")),
         "Single schema valid only for List, not Map"),
        (lambda: PropSchema("string", schema={"a": PropSchema("string")}),
         "Schema valid only for List or Map, not String"),
        (lambda: PropSchema("integer", constraints=(AllowedPattern("x"),)),
         "AllowedPattern constraint invalid for Integer"),
        (lambda: PropSchema("map", constraints=(AllowedValues(("a",)),)),
         "AllowedValues constraint invalid for Map"),
        (lambda: PropSchema("boolean", constraints=(Range(1, 2),)), "Range constraint invalid for Boolean"),
        (lambda: PropSchema("any", constraints=(Length(1, 2),)), "Length constraint invalid for Any"),
        (lambda: PropSchema("string", update_allowed=True, immutable=True),
         "Options UpdateAllowed and Immutable cannot both be True"),
        (lambda: PropSchema("integer", default=0, constraints=(Range(1, 512),)),
         "Invalid default 0 (0 is out of range (min: 1, max: 512))"),
    ],
)
def test_schema_declaration_errors(build: Any, message: str) -> None:
    with pytest.raises(InvalidSchemaError) as caught:
        build()
    assert str(caught.value) == message


def test_defaults_are_not_checked_against_custom_constraints_when_declared() -> None:
    PropSchema("string", default="x", constraints=(CustomConstraint("nova.flavor"),))
