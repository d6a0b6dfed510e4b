"""Constraint kinds: Heat's verdicts and messages, and how templates declare them."""

from __future__ import annotations

from typing import Any

import pytest

from libs.template import constraints as c
from libs.template.custom_constraints import default_custom_constraints
from libs.template.errors import InvalidSchemaError, TemplateError, UnhandledPythonError


def _failure(constraint: c.Constraint, value: Any, param_type: c.ParamType = "string",
             type_name: str = "string") -> str | None:
    try:
        c.check(constraint, value, param_type, type_name, default_custom_constraints())
    except ValueError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize(
    ("constraint", "value", "param_type", "expected"),
    [
        # range: bounds inclusive, strings converted like Heat's str_to_num
        (c.Range(1, 10), 5, "number", None),
        (c.Range(1, 10), 1, "number", None),
        (c.Range(1, 10), 10, "number", None),
        (c.Range(1, 10), "10", "number", None),
        (c.Range(1, 10), 11, "number", "11 is out of range (min: 1, max: 10)"),
        (c.Range(1, 10), "0", "number", "0 is out of range (min: 1, max: 10)"),
        (c.Range(1, None), 0, "number", "0 is out of range (min: 1, max: None)"),
        (c.Range(None, 2.5), "3.50", "number", "3.50 is out of range (min: None, max: 2.5)"),
        (c.Range(1, 10), "abc", "number", "could not convert string to float: 'abc'"),
        # a description replaces Heat's own text, but not a conversion error
        (c.Range(1, 10, "between 1 and 10"), 11, "number", "between 1 and 10"),
        (c.Range(1, 10, "between 1 and 10"), "x", "number", "could not convert string to float: 'x'"),
        (c.Range(1, 10, ""), 11, "number", "11 is out of range (min: 1, max: 10)"),
        (c.Range(1, 10, 42), 11, "number", "42"),
        # length of strings, lists, maps
        (c.Length(2, 3), "ab", "string", None),
        (c.Length(2, 3), "abcd", "string", "length (4) is out of range (min: 2, max: 3)"),
        (c.Length(2, None), "a", "string", "length (1) is out of range (min: 2, max: None)"),
        (c.Length(None, 1), ["a", "b"], "comma_delimited_list",
         "length (2) is out of range (min: None, max: 1)"),
        (c.Length(1, None), {}, "json", "length (0) is out of range (min: 1, max: None)"),
        (c.Length(1, 2, "too long"), "abc", "string", "too long"),
        # modulo
        (c.Modulo(2, 1), 3, "number", None),
        (c.Modulo(2, 1), "777777", "number", None),
        (c.Modulo(2, 1), 4, "number", "4 is not a multiple of 2 with an offset of 1"),
        (c.Modulo(2, 0), "5", "number", "5 is not a multiple of 2 with an offset of 0"),
        (c.Modulo(-2, -1), -3, "number", None),
        (c.Modulo(2.0, 0), 3, "number", "3 is not a multiple of 2.0 with an offset of 0"),
        (c.Modulo(2, 1, "odd please"), 2, "number", "odd please"),
        # allowed_values: JSON-rendered value and list
        (c.AllowedValues(("a", "b")), "a", "string", None),
        (c.AllowedValues(("a", "b")), "x", "string", '"x" is not an allowed value ["a", "b"]'),
        (c.AllowedValues(("é",)), "x", "string", '"x" is not an allowed value ["\\u00e9"]'),
        (c.AllowedValues((1, 2, 4)), "2", "number", None),
        (c.AllowedValues((1, 2, 4)), 3, "number", "3 is not an allowed value [1, 2, 4]"),
        (c.AllowedValues((1, 2, 4)), "3", "number", '"3" is not an allowed value [1, 2, 4]'),
        (c.AllowedValues(("1", "2")), 1, "number", None),
        (c.AllowedValues(("1.1", "2.2")), "1.10", "number", None),
        (c.AllowedValues(("1.1", "2.2")), 3.3, "number", '3.3 is not an allowed value ["1.1", "2.2"]'),
        (c.AllowedValues((1, 2)), 2, "string", None),  # both sides str()-ed for strings
        (c.AllowedValues((True,)), "yes", "boolean", None),
        (c.AllowedValues((True,)), False, "boolean", "false is not an allowed value [true]"),
        (c.AllowedValues(("maybe",)), True, "boolean", 'Value "maybe" is invalid for data type "boolean".'),
        (c.AllowedValues(("abc",)), 1, "number", 'Value "abc" is invalid for data type "number".'),
        # lists: every item must be allowed, compared as they are
        (c.AllowedValues(("a", "b")), ["b", "a"], "comma_delimited_list", None),
        (c.AllowedValues(("a", "b")), ["a", "c"], "comma_delimited_list",
         '["a", "c"] is not an allowed value ["a", "b"]'),
        (c.AllowedValues((1, 3)), ["1", "3"], "comma_delimited_list",
         '["1", "3"] is not an allowed value [1, 3]'),
        (c.AllowedValues(("a",), "pick a"), "b", "string", "pick a"),
        # allowed_pattern: match() anchored at the start, then must reach the end
        (c.AllowedPattern("[a-z]*"), "foo", "string", None),
        (c.AllowedPattern("[a-z]*"), "foo1", "string", '"foo1" does not match pattern "[a-z]*"'),
        (c.AllowedPattern("[a-z]*"), "1foo", "string", '"1foo" does not match pattern "[a-z]*"'),
        (c.AllowedPattern("[a-z]*"), "", "string", None),
        (c.AllowedPattern("a|ab"), "ab", "string", '"ab" does not match pattern "a|ab"'),
        (c.AllowedPattern("ab|a"), "ab", "string", None),
        (c.AllowedPattern("[0-9]+", "digits only"), "x", "string", "digits only"),
        # custom constraints go through the registry
        (c.CustomConstraint("ip_addr"), "10.0.0.1", "string", None),
        (c.CustomConstraint("ip_addr"), "10.0.0", "string",
         "Error validating value '10.0.0': Invalid IP address"),
        (c.CustomConstraint("ip_addr", "an address"), "x", "string", "an address"),
        (c.CustomConstraint("no.such_thing"), "m1.tiny", "string",
         '"m1.tiny" does not validate no.such_thing (constraint not found)'),
        # a cloud's constraint passes: the resource resolves the name through the cloud
        (c.CustomConstraint("nova.flavor"), "m1.tiny", "string", None),
        (c.CustomConstraint(None), "v", "string", '"v" does not validate None (constraint not found)'),
    ],
)
def test_check(constraint: c.Constraint, value: Any, param_type: c.ParamType,
               expected: str | None) -> None:
    assert _failure(constraint, value, param_type, param_type) == expected


@pytest.mark.parametrize(
    ("constraint", "value", "message"),
    [
        (c.Length(1, 2), 5, "object of type 'int' has no len()"),
        (c.AllowedPattern("x"), 5, "expected string or bytes-like object, got 'int'"),
        (c.Range(1, 2), [1], "int() argument must be a string, a bytes-like object or a real number, "
                            "not 'list'"),
    ],
)
def test_check_lets_python_type_errors_escape_as_heat_does(constraint: c.Constraint, value: Any,
                                                          message: str) -> None:
    with pytest.raises(TypeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        c.check(constraint, value, "string", "string")


@pytest.mark.parametrize(
    ("constraint", "param_type", "type_name", "message"),
    [
        (c.Range(1, 2), "string", "string", "Range constraint invalid for string"),
        (c.Range(1, 2), "comma_delimited_list", "CommaDelimitedList",
         "Range constraint invalid for CommaDelimitedList"),
        (c.Modulo(2, 1), "boolean", "boolean", "Modulo constraint invalid for boolean"),
        (c.Length(1, 2), "number", "number", "Length constraint invalid for number"),
        (c.Length(1, 2), "boolean", "Boolean", "Length constraint invalid for Boolean"),
        (c.AllowedValues(("a",)), "json", "Json", "AllowedValues constraint invalid for Json"),
        (c.AllowedPattern("a"), "number", "number", "AllowedPattern constraint invalid for number"),
        (c.AllowedPattern("a"), "comma_delimited_list", "comma_delimited_list",
         "AllowedPattern constraint invalid for comma_delimited_list"),
        (c.CustomConstraint("x"), "json", "json", "CustomConstraint constraint invalid for json"),
        (c.Length(1, 2), "json", "json", None),
        (c.Length(1, 2), "comma_delimited_list", "comma_delimited_list", None),
        (c.AllowedValues(("a",)), "comma_delimited_list", "comma_delimited_list", None),
        (c.AllowedValues((True,)), "boolean", "boolean", None),
        (c.CustomConstraint("x"), "number", "number", None),
        (c.Range(1, 2), "number", "number", None),
    ],
)
def test_check_applicable(constraint: c.Constraint, param_type: c.ParamType, type_name: str,
                          message: str | None) -> None:
    if message is None:
        c.check_applicable(constraint, param_type, type_name)
    else:
        with pytest.raises(InvalidSchemaError) as err:
            c.check_applicable(constraint, param_type, type_name)
        assert str(err.value) == message


NEW = {"with_modulo": True}
OLD = {"with_modulo": False}


@pytest.mark.parametrize(
    ("raw", "options", "expected"),
    [
        (None, NEW, ()),
        ([], NEW, ()),
        ([{"length": {"min": 1}}], NEW, (c.Length(1, None),)),
        ([{"length": {"min": "1", "max": 8}, "description": "d"}], NEW, (c.Length(1, 8, "d"),)),
        ([{"range": {"max": "2.5"}}], NEW, (c.Range(None, 2.5),)),
        ([{"range": {"min": 1, "max": 1}}], NEW, (c.Range(1, 1),)),
        ([{"modulo": {"step": 2, "offset": 1}}], NEW, (c.Modulo(2, 1),)),
        ([{"modulo": {"step": "2", "offset": "0"}}], NEW, (c.Modulo(2, 0),)),
        ([{"allowed_values": ["a", 1]}], NEW, (c.AllowedValues(("a", 1)),)),
        ([{"allowed_values": []}], NEW, (c.AllowedValues(()),)),
        ([{"allowed_pattern": "[a-z]+"}], NEW, (c.AllowedPattern("[a-z]+"),)),
        ([{"custom_constraint": "nova.flavor", "description": "a flavor"}], NEW,
         (c.CustomConstraint("nova.flavor", "a flavor"),)),
        # only the first kind in Heat's order counts; the rest is ignored
        ([{"allowed_values": ["a"], "length": {"max": 3}}], NEW, (c.Length(None, 3),)),
        ([{"modulo": {"step": 2, "offset": 1}, "range": {"min": 1}}], NEW, (c.Modulo(2, 1),)),
        # before 2017-02-24 a modulo beside another kind is silently dropped
        ([{"modulo": {"step": 2, "offset": 1}, "range": {"min": 1}}], OLD, (c.Range(1, None),)),
        ([{"length": {"min": 1}}, {"allowed_pattern": "x"}], OLD,
         (c.Length(1, None), c.AllowedPattern("x"))),
    ],
)
def test_parse_hot_constraints(raw: Any, options: dict[str, bool], expected: tuple[Any, ...]) -> None:
    assert c.parse_hot_constraints("p", raw, **options) == expected


@pytest.mark.parametrize(
    ("raw", "options", "error", "message"),
    [
        ("x", NEW, InvalidSchemaError, "Invalid parameter constraints for parameter p, expected a list"),
        ({"length": {}}, NEW, InvalidSchemaError,
         "Invalid parameter constraints for parameter p, expected a list"),
        (["foo"], NEW, InvalidSchemaError, "Invalid parameter constraints, expected a mapping"),
        ([None], NEW, InvalidSchemaError, "Invalid parameter constraints, expected a mapping"),
        ([{"allowed_valus": ["a"]}], NEW, InvalidSchemaError,
         "Invalid key 'allowed_valus' for parameter constraints"),
        ([{"description": "only words"}], NEW, InvalidSchemaError, "No constraint expressed"),
        ([{}], NEW, InvalidSchemaError, "No constraint expressed"),
        ([{"modulo": {"step": 2, "offset": 1}}], OLD, InvalidSchemaError, "No constraint expressed"),
        ([{"range": "foo"}], NEW, InvalidSchemaError, "Invalid range constraint, expected a mapping"),
        ([{"range": {"min": 1, "foo": 2}}], NEW, InvalidSchemaError,
         "Invalid key 'foo' for range constraint"),
        ([{"range": {}}], NEW, InvalidSchemaError,
         "A range constraint must have a min value and/or a max value specified."),
        ([{"range": {"min": None}}], NEW, InvalidSchemaError,
         "A range constraint must have a min value and/or a max value specified."),
        ([{"range": {"min": "abc"}}], NEW, UnhandledPythonError, "could not convert string to float: 'abc'"),
        ([{"range": {"min": [1]}}], NEW, UnhandledPythonError,
         "int() argument must be a string, a bytes-like object or a real number, not 'list'"),
        ([{"length": "foo"}], NEW, InvalidSchemaError, "Invalid length constraint, expected a mapping"),
        ([{"length": {"min": 1, "foo": "bar"}}], NEW, InvalidSchemaError,
         "Invalid key 'foo' for length constraint"),
        ([{"length": {}}], NEW, InvalidSchemaError,
         "A length constraint must have a min value and/or a max value specified."),
        ([{"length": {"min": 1.5}}], NEW, InvalidSchemaError, "min/max length must be integral"),
        ([{"length": {"max": "2.0"}}], NEW, InvalidSchemaError, "min/max length must be integral"),
        ([{"modulo": "x"}], NEW, InvalidSchemaError, "Invalid modulo constraint, expected a mapping"),
        ([{"modulo": {"step": 2, "min": 1}}], NEW, InvalidSchemaError,
         "Invalid key 'min' for modulo constraint"),
        ([{"modulo": {"step": 2}}], NEW, InvalidSchemaError,
         "A modulo constraint must have a step value and an offset value specified."),
        ([{"modulo": {"offset": 1}}], NEW, InvalidSchemaError,
         "A modulo constraint must have a step value and an offset value specified."),
        ([{"modulo": {"step": 2.5, "offset": 1}}], NEW, InvalidSchemaError, "step/offset must be integer"),
        ([{"modulo": {"step": 0, "offset": 0}}], NEW, InvalidSchemaError, "step cannot be 0."),
        ([{"modulo": {"step": 111, "offset": 111}}], NEW, InvalidSchemaError,
         "offset must be smaller (by absolute value) than step."),
        ([{"modulo": {"step": 2, "offset": -3}}], NEW, InvalidSchemaError,
         "offset must be smaller (by absolute value) than step."),
        ([{"modulo": {"step": -2, "offset": 1}}], NEW, InvalidSchemaError,
         "step and offset must be both positive or both negative."),
        ([{"allowed_values": "a"}], NEW, InvalidSchemaError, "AllowedValues must be a list"),
        ([{"allowed_values": {"a": 1}}], NEW, InvalidSchemaError, "AllowedValues must be a list"),
        ([{"allowed_values": None}], NEW, InvalidSchemaError, "AllowedValues must be a list"),
        ([{"allowed_pattern": ["foo", "bar"]}], NEW, InvalidSchemaError, "AllowedPattern must be a string"),
        ([{"allowed_pattern": "("}], NEW, UnhandledPythonError,
         "missing ), unterminated subpattern at position 0"),
        # the first bad item wins
        ([{"length": {"min": 1}}, {"range": {}}, "x"], NEW, InvalidSchemaError,
         "A range constraint must have a min value and/or a max value specified."),
    ],
)
def test_parse_hot_constraints_errors(raw: Any, options: dict[str, bool], error: type[TemplateError],
                                      message: str) -> None:
    with pytest.raises(error) as err:
        c.parse_hot_constraints("p", raw, **options)
    assert type(err.value) is error
    assert str(err.value) == message


def test_unhandled_python_errors_keep_heats_type_but_answer_400() -> None:
    # Heat answers 500 for a TypeError or re.error here; no template may give a 5xx in Ember.
    with pytest.raises(UnhandledPythonError) as value_error:
        c.parse_hot_constraints("p", [{"range": {"min": "abc"}}], with_modulo=True)
    assert (value_error.value.error_type, value_error.value.http_status) == ("ValueError", 400)
    with pytest.raises(UnhandledPythonError) as type_error:
        c.parse_hot_constraints("p", [{"length": {"max": {}}}], with_modulo=True)
    assert (type_error.value.error_type, type_error.value.http_status) == ("TypeError", 400)
    with pytest.raises(UnhandledPythonError) as re_error:
        c.parse_hot_constraints("p", [{"allowed_pattern": "[a"}], with_modulo=True)
    assert (re_error.value.error_type, re_error.value.http_status) == ("error", 400)


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({}, ()),
        ({"MinValue": "3", "MaxValue": "3"}, (c.Range(3, 3),)),
        ({"MaxValue": 4.0, "ConstraintDescription": "small"}, (c.Range(None, 4.0, "small"),)),
        ({"MinLength": "4"}, (c.Length(4, None),)),
        ({"AllowedValues": ["a"], "AllowedPattern": "[a-z]*", "MinLength": 1, "MinValue": 0,
          "ConstraintDescription": "w"},
         (c.Range(0, None, "w"), c.Length(1, None, "w"), c.AllowedValues(("a",), "w"),
          c.AllowedPattern("[a-z]*", "w"))),
    ],
)
def test_parse_cfn_constraints(schema: dict[str, Any], expected: tuple[Any, ...]) -> None:
    assert c.parse_cfn_constraints(schema) == expected


@pytest.mark.parametrize(
    ("schema", "error", "message"),
    [
        ({"MinValue": None}, InvalidSchemaError,
         "A range constraint must have a min value and/or a max value specified."),
        ({"MinLength": "1.5"}, InvalidSchemaError, "min/max length must be integral"),
        ({"MaxLength": None}, InvalidSchemaError,
         "A length constraint must have a min value and/or a max value specified."),
        ({"MinValue": "x"}, UnhandledPythonError, "could not convert string to float: 'x'"),
        ({"AllowedValues": "a,b"}, InvalidSchemaError, "AllowedValues must be a list"),
        ({"AllowedPattern": 5}, InvalidSchemaError, "AllowedPattern must be a string"),
    ],
)
def test_parse_cfn_constraints_errors(schema: dict[str, Any], error: type[TemplateError],
                                      message: str) -> None:
    with pytest.raises(error) as err:
        c.parse_cfn_constraints(schema)
    assert str(err.value) == message


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        *[(v, True) for v in ("1", "t", "true", "on", "y", "yes", "TRUE", "Yes", " on ", True, 1)],
        *[(v, False) for v in ("0", "f", "false", "off", "n", "no", "FALSE", "No", False, 0)],
    ],
)
def test_parse_bool(value: Any, expected: bool) -> None:
    assert c.parse_bool(value) is expected


@pytest.mark.parametrize("value", ["foo", "", 2, 1.0, "truth", None])
def test_parse_bool_rejects(value: Any) -> None:
    with pytest.raises(ValueError) as err:
        c.parse_bool(value)
    assert str(err.value) == (
        f"Unrecognized value '{value}', acceptable values are: '0', '1', 'f', 'false', 'n', 'no', "
        "'off', 'on', 't', 'true', 'y', 'yes'")


@pytest.mark.parametrize(
    ("value", "expected"),
    [("1", 1), ("1.5", 1.5), (" 7 ", 7), ("1e3", 1000.0), (3, 3), (2.5, 2.5), (True, True), ("-0", 0)],
)
def test_to_number(value: Any, expected: Any) -> None:
    result = c.to_number(value)
    assert result == expected
    assert type(result) is type(expected)
