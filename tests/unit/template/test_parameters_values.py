"""Parameter values: coercion, precedence, pseudo parameters, rendering, validation, updates."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from libs.template.custom_constraints import CustomConstraintRegistry
from libs.template.errors import (
    ImmutableParameterModified,
    InvalidSchemaError,
    StackValidationFailed,
    TemplateError,
    UnhandledPythonError,
    UnknownUserParameter,
    UserParameterMissing,
)
from libs.template.parameters import (
    Parameters,
    check_immutable,
    immutable_changes,
    parse_cfn_parameters,
    parse_hot_parameters,
)

ACCEPTABLE = "'0', '1', 'f', 'false', 'n', 'no', 'off', 'on', 't', 'true', 'y', 'yes'"


def hot_params(text: str, user: dict[str, Any] | None = None, defaults: dict[str, Any] | None = None,
               version: str = "2021-04-16", **identity: Any) -> Parameters:
    schemas = parse_hot_parameters(yaml.safe_load(text), version_date=version)
    identity = identity or {"stack_name": "st", "stack_id": "sid", "project_id": "proj"}
    return Parameters(schemas, user_params=user, param_defaults=defaults, **identity)


def single(kind: str, user: Any = None, extra: str = "") -> Parameters:
    return hot_params(f"p: {{type: {kind}{extra}}}", {"p": user} if user is not None else None)


@pytest.mark.parametrize(
    ("kind", "raw", "typed", "text"),
    [
        ("string", "test", "test", "test"),
        ("string", "test\u2665", "test\u2665", "test\u2665"),
        ("string", 111, "111", "111"),
        ("string", True, "True", "True"),
        ("string", "", "", ""),
        ("number", "1", 1, "1"),
        ("number", "1.5", 1.5, "1.5"),
        ("number", "1.50", 1.5, "1.5"),
        ("number", 10, 10, "10"),
        ("number", 2.5, 2.5, "2.5"),
        ("number", " 3 ", 3, "3"),
        ("number", "1e3", 1000.0, "1000.0"),
        ("number", "-7", -7, "-7"),
        *[("boolean", v, True, "True") for v in ("1", "t", "true", "on", "y", "yes", "YES", "True", True, 1)],
        *[("boolean", v, False, "False") for v in ("0", "f", "false", "off", "n", "no", "Off", False, 0)],
        ("comma_delimited_list", "a,b,c", ["a", "b", "c"], "a,b,c"),
        ("comma_delimited_list", "a, b ,c", ["a", " b ", "c"], "a, b ,c"),
        ("comma_delimited_list", "", [], ""),
        ("comma_delimited_list", "a,,b", ["a", "", "b"], "a,,b"),
        ("comma_delimited_list", ["x", 2, True], ["x", "2", "True"], "x,2,True"),
        ("comma_delimited_list", ["a,b", "c"], ["a,b", "c"], "a,b,c"),  # rendering is lossy
        ("comma_delimited_list", [], [], ""),
        ("json", {"a": "1"}, {"a": "1"}, '{"a": "1"}'),
        ("json", {"a": 1, "b": [1, 2]}, {"a": 1, "b": [1, 2]}, '{"a": 1, "b": [1, 2]}'),
        ("json", '{"foo": "bar", "items": [1, 2, 3]}', {"foo": "bar", "items": [1, 2, 3]},
         '{"foo": "bar", "items": [1, 2, 3]}'),
        ("json", '["fizz", "buzz"]', ["fizz", "buzz"], '["fizz", "buzz"]'),
        ("json", ["fizz", "buzz"], ["fizz", "buzz"], '["fizz", "buzz"]'),
        ("json", "5", 5, "5"),
        ("json", "null", None, "null"),
        ("json", "", "", '""'),  # Heat keeps an empty string as it is
        ("json", {1: "a"}, {"1": "a"}, '{"1": "a"}'),  # round-tripped through JSON
        ("json", {"k": "\u00e9"}, {"k": "\u00e9"}, '{"k": "\\u00e9"}'),
    ],
)
def test_typed_value_and_display(kind: str, raw: Any, typed: Any, text: str) -> None:
    params = single(kind, raw)
    params.validate()
    assert params.value("p") == typed
    assert type(params.value("p")) is type(typed)
    assert params.display()["p"] == text


@pytest.mark.parametrize(
    ("kind", "default", "typed"),
    [
        ("string", "default", "default"),
        ("string", 5, "5"),
        ("number", 13, 13),
        ("number", "42", 42),
        ("comma_delimited_list", "d,e,f", ["d", "e", "f"]),
        ("comma_delimited_list", ["d", "e", "f"], ["d", "e", "f"]),
        ("comma_delimited_list", [1, 3, 5], ["1", "3", "5"]),
        ("comma_delimited_list", "", []),
        ("json", {"d": "1"}, {"d": "1"}),
        ("json", '{"d": 1}', {"d": 1}),
        ("boolean", True, True),
        ("boolean", "off", False),
    ],
)
def test_template_defaults(kind: str, default: Any, typed: Any) -> None:
    params = hot_params(yaml.safe_dump({"p": {"type": kind, "default": default}}))
    params.validate()
    assert params.value("p") == typed
    assert params.has_default("p")
    assert params.default("p") == default


@pytest.mark.parametrize(
    ("kind", "default", "param_default", "user", "expected"),
    [
        ("comma_delimited_list", "4,2", None, None, ["4", "2"]),
        ("comma_delimited_list", "4,2", "7,7", None, ["7", "7"]),
        ("comma_delimited_list", "4,2", "7,7", "1,1,1", ["1", "1", "1"]),
        ("number", 42, None, None, 42),
        ("number", 42, 77, None, 77),
        ("number", 42, 77, 111, 111),
        ("string", "42", "77", None, "77"),
        ("string", "42", "77", "111", "111"),
        ("json", {"4": "2"}, {"7": "7"}, None, {"7": "7"}),
        ("json", {"4": "2"}, {"7": "7"}, {"1": "11"}, {"1": "11"}),
        ("boolean", False, False, True, True),
        ("boolean", False, True, None, True),
        ("boolean", True, False, None, False),
        ("boolean", True, False, False, False),
        ("string", None, "from defaults", None, "from defaults"),
        ("string", "tmpl", None, None, "tmpl"),
        # a user value of None (an explicit null) does not count as a value
        ("string", "tmpl", "env", None, "env"),
    ],
)
def test_precedence(kind: str, default: Any, param_default: Any, user: Any, expected: Any) -> None:
    schema: dict[str, Any] = {"type": kind}
    if default is not None:
        schema["default"] = default
    params = hot_params(yaml.safe_dump({"a": schema}), {"a": user},
                        {"a": param_default, "unknown": "ignored"})
    params.validate()
    assert params.value("a") == expected


def test_validate_response_default_prefers_parameter_defaults() -> None:
    params = hot_params("a: {type: string, default: tmpl}", defaults={"a": "env"})
    assert params.default("a") == "env"
    assert params.schema("a").default == "tmpl"


@pytest.mark.parametrize(
    ("text", "user", "error", "message"),
    [
        ("p: {type: number}", "str", StackValidationFailed,
         "Parameter 'p' is invalid: could not convert string to float: 'str'"),
        ("p: {type: number}", ["foo"], StackValidationFailed,
         "Parameter 'p' is invalid: int() argument must be a string, a bytes-like object or a real number, "
         "not 'list'"),
        ("p: {type: number}", "", StackValidationFailed,
         "Parameter 'p' is invalid: could not convert string to float: ''"),
        ("p: {type: boolean}", "foo", StackValidationFailed,
         f"Parameter 'p' is invalid: Unrecognized value 'foo', acceptable values are: {ACCEPTABLE}"),
        ("p: {type: boolean}", 2, StackValidationFailed,
         f"Parameter 'p' is invalid: Unrecognized value '2', acceptable values are: {ACCEPTABLE}"),
        ("p: {type: comma_delimited_list}", 0, StackValidationFailed,
         "Parameter 'p' is invalid: Value must be a comma-delimited list string: "
         "'int' object has no attribute 'split'"),
        ("p: {type: comma_delimited_list}", {"a": 1}, StackValidationFailed,
         "Parameter 'p' is invalid: Value must be a comma-delimited list string: "
         "'dict' object has no attribute 'split'"),
        ("p: {type: json}", "I am not a map", StackValidationFailed,
         "Parameter 'p' is invalid: Value must be valid JSON: Expecting value: line 1 column 1 (char 0)"),
        ("p: {type: json}", '{"foo": "bar", "invalid": ]}', StackValidationFailed,
         "Parameter 'p' is invalid: Value must be valid JSON: Expecting value: line 1 column 27 (char 26)"),
        ("p: {type: string, constraints: [{allowed_pattern: '[a-z]*'}]}", "234", StackValidationFailed,
         "Parameter 'p' is invalid: \"234\" does not match pattern \"[a-z]*\""),
        ("p: {type: string, constraints: [{length: {min: 4}, description: wibble}]}", "foo",
         StackValidationFailed, "Parameter 'p' is invalid: wibble"),
        ("p: {type: string, constraints: [{length: {max: 2}}]}", "foo", StackValidationFailed,
         "Parameter 'p' is invalid: length (3) is out of range (min: None, max: 2)"),
        ("p: {type: string, constraints: [{allowed_values: [foo, bar]}]}", "blarg", StackValidationFailed,
         "Parameter 'p' is invalid: \"blarg\" is not an allowed value [\"foo\", \"bar\"]"),
        ("p: {type: number, constraints: [{allowed_values: ['1', '3', '5']}]}", "2", StackValidationFailed,
         "Parameter 'p' is invalid: \"2\" is not an allowed value [\"1\", \"3\", \"5\"]"),
        ("p: {type: number, constraints: [{range: {min: 4}, description: wibble}]}", "3",
         StackValidationFailed, "Parameter 'p' is invalid: wibble"),
        ("p: {type: number, constraints: [{range: {min: 1, max: 10}}]}", 11, StackValidationFailed,
         "Parameter 'p' is invalid: 11 is out of range (min: 1, max: 10)"),
        ("p: {type: number, constraints: [{modulo: {step: 2, offset: 1}}]}", "4", StackValidationFailed,
         "Parameter 'p' is invalid: 4 is not a multiple of 2 with an offset of 1"),
        ("p: {type: comma_delimited_list, constraints: [{allowed_values: [foo, bar, baz]}]}", "foo,baz,blarg",
         StackValidationFailed,
         "Parameter 'p' is invalid: [\"foo\", \"baz\", \"blarg\"] is not an allowed value "
         "[\"foo\", \"bar\", \"baz\"]"),
        ("p: {type: comma_delimited_list, constraints: [{length: {min: 1}}]}", "", StackValidationFailed,
         "Parameter 'p' is invalid: length (0) is out of range (min: 1, max: None)"),
        ("p: {type: json, constraints: [{length: {min: 3}}]}", {"foo": "bar", "items": [1, 2, 3]},
         StackValidationFailed, "Parameter 'p' is invalid: length (2) is out of range (min: 3, max: None)"),
        ("p: {type: boolean, constraints: [{allowed_values: [true]}]}", "no", StackValidationFailed,
         "Parameter 'p' is invalid: \"no\" is not an allowed value [true]"),
        ("p: {type: string, constraints: [{custom_constraint: ip_addr}]}", "x", StackValidationFailed,
         "Parameter 'p' is invalid: Error validating value 'x': Invalid IP address"),
        ("p: {type: string, constraints: [{custom_constraint: no.such}]}", "m1", StackValidationFailed,
         "Parameter 'p' is invalid: \"m1\" does not validate no.such (constraint not found)"),
        ("p: {type: string, constraints: [{custom_constraint: no.such, description: a flavor}]}", "m1",
         StackValidationFailed, "Parameter 'p' is invalid: a flavor"),
        # a string parameter whose environment value is a number: Heat's len() crashes (HTTP 500)
        ("p: {type: string, constraints: [{length: {max: 3}}]}", 5, UnhandledPythonError,
         "object of type 'int' has no len()"),
        ("p: {type: string}", None, UserParameterMissing, "The Parameter (p) was not provided."),
        ("p: {type: json}", None, UserParameterMissing, "The Parameter (p) was not provided."),
        ("p: {type: comma_delimited_list}", None, UserParameterMissing,
         "The Parameter (p) was not provided."),
    ],
)
def test_value_errors(text: str, user: Any, error: type[TemplateError], message: str) -> None:
    params = hot_params(text, {"p": user} if user is not None else None)
    with pytest.raises(error) as err:
        params.validate()
    assert type(err.value) is error
    assert str(err.value) == message
    params.validate(validate_value=False)  # POST /validate does not look at values


MULTI = """
db_name:
  type: string
  default: wordpress
  constraints:
    - length: {min: 8, max: 16}
      description: string length should be between 8 and 16
    - allowed_pattern: "[a-zA-Z]+"
      description: Value must consist of characters only
    - allowed_pattern: "[a-z]+[a-zA-Z]*"
      description: Value must start with a lowercase character
"""


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("wp", "string length should be between 8 and 16"),
        ("abcdefghijklmnopq", "string length should be between 8 and 16"),
        ("abcdefgh1", "Value must consist of characters only"),
        ("Abcdefghi", "Value must start with a lowercase character"),
        ("abcdefghi", None),
        ("abcdefghI", None),
    ],
)
def test_first_failing_constraint_speaks(value: str, message: str | None) -> None:
    params = hot_params(MULTI, {"db_name": value})
    if message is None:
        params.validate()
    else:
        with pytest.raises(StackValidationFailed) as err:
            params.validate()
        assert str(err.value) == f"Parameter 'db_name' is invalid: {message}"


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        ("p: {type: number, constraints: [{length: {min: 1}}]}", InvalidSchemaError,
         "Parameter 'p' is invalid: Length constraint invalid for number"),
        ("p: {type: string, constraints: [{range: {min: 1}}]}", InvalidSchemaError,
         "Parameter 'p' is invalid: Range constraint invalid for string"),
        ("p: {type: json, constraints: [{allowed_values: [a]}]}", InvalidSchemaError,
         "Parameter 'p' is invalid: AllowedValues constraint invalid for json"),
        ("p: {type: boolean, constraints: [{allowed_pattern: x}]}", InvalidSchemaError,
         "Parameter 'p' is invalid: AllowedPattern constraint invalid for boolean"),
        ("p: {type: json, constraints: [{custom_constraint: x}]}", InvalidSchemaError,
         "Parameter 'p' is invalid: CustomConstraint constraint invalid for json"),
        ("p: {type: number, default: 15, constraints: [{range: {min: 30000, max: 50000}, "
         "description: Value must be between 30000 and 50000}]}", InvalidSchemaError,
         "Parameter 'p' is invalid: Invalid default 15 (Value must be between 30000 and 50000)"),
        ("p: {type: number, default: 15, constraints: [{range: {min: 30000}}]}", InvalidSchemaError,
         "Parameter 'p' is invalid: Invalid default 15 (15 is out of range (min: 30000, max: None))"),
        ("p: {type: number, default: abc, constraints: [{range: {min: 1}}]}", InvalidSchemaError,
         "Parameter 'p' is invalid: Invalid default abc (could not convert string to float: 'abc')"),
        ("p: {type: number, default: 2, constraints: [{modulo: {step: 2, offset: 1}, "
         "description: Value must be an odd number}]}", InvalidSchemaError,
         "Parameter 'p' is invalid: Invalid default 2 (Value must be an odd number)"),
        ("p: {type: string, default: 5, constraints: [{length: {max: 3}}]}", InvalidSchemaError,
         "Parameter 'p' is invalid: Invalid default 5 (object of type 'int' has no len())"),
        ("p: {type: string, default: 5, constraints: [{allowed_pattern: '[0-9]'}]}", InvalidSchemaError,
         "Parameter 'p' is invalid: Invalid default 5 (expected string or bytes-like object, got 'int')"),
        ("p: {type: string, default: x, constraints: [{allowed_values: [a, b]}]}", InvalidSchemaError,
         "Parameter 'p' is invalid: Invalid default x (\"x\" is not an allowed value [\"a\", \"b\"])"),
        # a list default "" is [""] for this check (but [] as a value)
        ("p: {type: comma_delimited_list, default: '', constraints: [{allowed_values: [a]}]}",
         InvalidSchemaError,
         "Parameter 'p' is invalid: Invalid default  ([\"\"] is not an allowed value [\"a\"])"),
        ("p: {type: comma_delimited_list, default: 5}", InvalidSchemaError,
         "Parameter 'p' is invalid: Default must be a comma-delimited list string: "
         "'int' object has no attribute 'split'"),
        ("p: {type: comma_delimited_list, default: [1, 2], constraints: [{allowed_values: [1, 2]}]}",
         InvalidSchemaError,
         "Parameter 'p' is invalid: Invalid default [1, 2] ([\"1\", \"2\"] is not an allowed value [1, 2])"),
        # a json default is checked raw: here the length of the JSON text
        ("p: {type: json, default: '{\"a\": 1}', constraints: [{length: {max: 1}}]}", InvalidSchemaError,
         "Parameter 'p' is invalid: Invalid default {\"a\": 1} "
         "(length (8) is out of range (min: None, max: 1))"),
        ("p: {type: boolean, default: true, constraints: [{allowed_values: [maybe]}]}", InvalidSchemaError,
         "Parameter 'p' is invalid: Invalid default True "
         "(Value \"maybe\" is invalid for data type \"boolean\".)"),
        # the first parameter in order fails first
        ("{a: {type: number, constraints: [{length: {min: 1}}]}, b: {type: string, constraints: "
         "[{range: {min: 1}}]}}", InvalidSchemaError,
         "Parameter 'a' is invalid: Length constraint invalid for number"),
    ],
)
def test_schema_errors_found_without_values(text: str, error: type[TemplateError], message: str) -> None:
    params = hot_params(text)
    with pytest.raises(error) as err:
        params.validate(validate_value=False)
    assert type(err.value) is error
    assert str(err.value) == message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # custom constraints never judge the template default at schema level...
        ("p: {type: string, default: foo, constraints: [{custom_constraint: no.such, "
         "description: Must be skipped on default value}]}",
         "Parameter 'p' is invalid: Must be skipped on default value"),
        ("p: {type: string, default: foo, constraints: [{custom_constraint: ip_addr}]}",
         "Parameter 'p' is invalid: Error validating value 'foo': Invalid IP address"),
        # ...and types are not checked there either
        ("p: {type: number, default: abc}",
         "Parameter 'p' is invalid: could not convert string to float: 'abc'"),
        ("p: {type: boolean, default: maybe}",
         f"Parameter 'p' is invalid: Unrecognized value 'maybe', acceptable values are: {ACCEPTABLE}"),
    ],
)
def test_defaults_checked_only_with_values(text: str, message: str) -> None:
    params = hot_params(text)
    params.validate(validate_value=False)
    with pytest.raises(StackValidationFailed) as err:
        params.validate()
    assert str(err.value) == message


def test_parameter_defaults_are_checked_as_values_not_as_schema() -> None:
    params = hot_params("p: {type: number, constraints: [{range: {max: 5}}]}", defaults={"p": 9})
    params.validate(validate_value=False)
    with pytest.raises(StackValidationFailed) as err:
        params.validate()
    assert str(err.value) == "Parameter 'p' is invalid: 9 is out of range (min: None, max: 5)"


@pytest.mark.parametrize(
    ("user", "message"),
    [
        ({"Foo": "wibble"}, "The Parameter (Foo) was not defined in template."),
        ({"p": "x", "OS::stack_name": "y"}, "The Parameter (OS::stack_name) was not defined in template."),
        # unknown names are reported before any value problem, even with validate_value=False
        ({"p": None, "zzz": 1}, "The Parameter (zzz) was not defined in template."),
    ],
)
def test_unknown_user_parameters(user: dict[str, Any], message: str) -> None:
    params = hot_params("p: {type: number}", user)
    for validate_value in (True, False):
        with pytest.raises(UnknownUserParameter) as err:
            params.validate(validate_value=validate_value)
        assert str(err.value) == message


def test_custom_constraint_registry_is_the_callers() -> None:
    registry = CustomConstraintRegistry()
    registry.register("zero", lambda v: None if v == "0" else "")
    params = hot_params("p: {type: string, constraints: [{custom_constraint: zero}]}", {"p": "1"})
    with pytest.raises(StackValidationFailed) as err:
        params.validate(custom_constraints=registry)
    assert str(err.value) == "Parameter 'p' is invalid: Error validating value '1'"
    hot_params("p: {type: string, constraints: [{custom_constraint: zero}]}", {"p": "0"}).validate(
        custom_constraints=registry)


@pytest.mark.parametrize(
    ("identity", "expected"),
    [
        ({"stack_name": "st", "stack_id": "sid", "project_id": "proj"},
         {"OS::stack_id": "sid", "OS::project_id": "proj", "OS::stack_name": "st"}),
        # preview and validate: the stack is not stored yet
        ({"stack_name": "st", "stack_id": None, "project_id": "proj"},
         {"OS::stack_id": "None", "OS::project_id": "proj", "OS::stack_name": "st"}),
        # no stack at all (Heat's template-level checks)
        ({"stack_name": None}, {"OS::stack_id": "", "OS::project_id": ""}),
        ({"stack_name": "", "stack_id": "sid"}, {"OS::stack_id": "sid", "OS::project_id": ""}),
    ],
)
def test_hot_pseudo_parameters(identity: dict[str, Any], expected: dict[str, str]) -> None:
    params = Parameters({}, **identity)
    params.validate()
    assert params.display() == expected
    assert {n: params.value(n) for n in params.names()} == expected
    assert "OS::region" not in params
    with pytest.raises(UserParameterMissing, match=r"The Parameter \(OS::region\) was not provided."):
        params.value("OS::region")


@pytest.mark.parametrize(
    ("identity", "expected"),
    [
        ({"stack_name": "test_stack", "stack_id": None, "project_id": ""},
         {"AWS::StackId": "arn:openstack:heat:::stacks/test_stack/None", "AWS::StackName": "test_stack",
          "AWS::Region": "ap-southeast-1"}),
        ({"stack_name": "test_stack", "stack_id": "abc123", "project_id": "t"},
         {"AWS::StackId": "arn:openstack:heat::t:stacks/test_stack/abc123", "AWS::StackName": "test_stack",
          "AWS::Region": "ap-southeast-1"}),
        ({"stack_name": "a b", "stack_id": "x/y", "project_id": "p:q"},
         {"AWS::StackId": "arn:openstack:heat::p%3Aq:stacks/a%20b/x%2Fy", "AWS::StackName": "a b",
          "AWS::Region": "ap-southeast-1"}),
        ({"stack_name": None}, {"AWS::StackId": "None"}),
    ],
)
def test_cfn_pseudo_parameters(identity: dict[str, Any], expected: dict[str, str]) -> None:
    params = Parameters({}, dialect="cfn", **identity)
    params.validate()
    assert params.display() == expected


def test_names_put_pseudo_parameters_first() -> None:
    params = hot_params("{b: {type: string, default: x}, a: {type: number, default: 1}}")
    assert params.names() == ["OS::stack_id", "OS::project_id", "OS::stack_name", "b", "a"]
    assert params.template_names() == ["b", "a"]
    assert "a" in params and "zzz" not in params and 5 not in params
    cfn = Parameters(parse_cfn_parameters({"Foo": {"Type": "String", "Default": "f"}}), dialect="cfn",
                     stack_name="s")
    assert cfn.names() == ["AWS::StackId", "AWS::StackName", "AWS::Region", "Foo"]


def test_parameter_defaults_reach_pseudo_parameters() -> None:
    params = hot_params("p: {type: string, default: x}", defaults={"OS::stack_name": "renamed"})
    params.validate()
    assert params.value("OS::stack_name") == "renamed"
    cfn = Parameters({}, dialect="cfn", stack_name="s", param_defaults={"AWS::Region": "eu-central-1"})
    with pytest.raises(StackValidationFailed) as err:
        cfn.validate()
    assert str(err.value) == (
        "Parameter 'AWS::Region' is invalid: \"eu-central-1\" is not an allowed value [\"us-east-1\", "
        "\"us-west-1\", \"us-west-2\", \"sa-east-1\", \"eu-west-1\", \"ap-southeast-1\", \"ap-northeast-1\"]")


def test_template_parameter_named_like_a_pseudo_one_replaces_it() -> None:
    params = hot_params("{a: {type: string}, 'OS::stack_name': {type: string}}",
                        {"OS::stack_name": "mine", "a": "x"})
    params.validate()
    assert params.names() == ["OS::stack_id", "OS::project_id", "OS::stack_name", "a"]
    assert params.value("OS::stack_name") == "mine"
    assert params.template_names() == ["a"]


@pytest.mark.parametrize(
    ("text", "user", "expected"),
    [
        ("p: {type: string, hidden: true}", "secret", "******"),
        ("p: {type: number, hidden: true}", "5", "******"),
        ("p: {type: comma_delimited_list, hidden: true}", "a,b", "******"),
        ("p: {type: json, hidden: true}", {"a": 1}, "******"),
        ("p: {type: boolean, hidden: true}", "yes", "******"),
        ("p: {type: string, hidden: false}", "secret", "secret"),
    ],
)
def test_hidden_parameters_are_masked(text: str, user: Any, expected: str) -> None:
    params = hot_params(text, {"p": user})
    assert params.display()["p"] == expected
    assert params.value("p") != "******"


def test_cfn_no_echo_masks_too() -> None:
    schemas = parse_cfn_parameters({"Pw": {"Type": "String", "NoEcho": "TrUe"}, "N": {"Type": "Number"}})
    params = Parameters(schemas, dialect="cfn", user_params={"Pw": "x", "N": "42"}, stack_name="s",
                        stack_id="i", project_id="t")
    params.validate()
    assert params.display() == {"AWS::StackId": "arn:openstack:heat::t:stacks/s/i", "AWS::StackName": "s",
                                "AWS::Region": "ap-southeast-1", "Pw": "******", "N": "42"}
    assert params.value("N") == 42


def test_display_needs_every_value() -> None:
    with pytest.raises(UserParameterMissing):
        hot_params("p: {type: string, hidden: true}").display()


def test_value_of_an_unvalidated_bad_value() -> None:
    with pytest.raises(UnhandledPythonError) as err:
        single("number", "abc").value("p")
    assert (err.value.error_type, str(err.value)) == (
        "ValueError", "could not convert string to float: 'abc'")


IMMUTABLE = """
s: {type: string, immutable: true, default: foo}
n: {type: number, immutable: true, default: 5}
l: {type: comma_delimited_list, immutable: true, default: "a,b"}
m: {type: string, immutable: false, default: foo}
"""


@pytest.mark.parametrize(
    ("old_user", "new_user", "expected"),
    [
        ({}, {}, []),
        ({}, {"s": "foo"}, []),
        ({}, {"s": "bar"}, ["s"]),
        ({}, {"m": "bar"}, []),
        ({"s": "bar"}, {}, ["s"]),
        ({"s": "bar"}, {"s": "bar"}, []),
        # Heat compares the old typed value with the new raw one: "5" != 5
        ({}, {"n": "5"}, ["n"]),
        ({}, {"n": 5}, []),
        ({"n": "5"}, {"n": "5"}, ["n"]),
        ({}, {"l": "a,b"}, ["l"]),
        ({}, {"l": ["a", "b"]}, []),
        ({}, {"s": "x", "n": "6", "l": ["a"]}, ["s", "n", "l"]),
    ],
)
def test_immutable_changes(old_user: dict[str, Any], new_user: dict[str, Any], expected: list[str]) -> None:
    old = hot_params(IMMUTABLE, old_user)
    new = hot_params(IMMUTABLE, new_user)
    assert immutable_changes(old, new) == expected
    if expected:
        with pytest.raises(ImmutableParameterModified) as err:
            check_immutable(old, new)
        assert str(err.value) == ("The following parameters are immutable and may not be updated: "
                                  + ", ".join(expected))
    else:
        check_immutable(old, new)


def test_immutable_only_for_parameters_both_stacks_have() -> None:
    old = hot_params("a: {type: string, default: x}")
    new = hot_params("{a: {type: string, default: x}, b: {type: string, immutable: true, default: y}}")
    assert immutable_changes(old, new) == []
    # the immutable flag comes from the new template
    old2 = hot_params("a: {type: string, immutable: true, default: x}")
    new2 = hot_params("a: {type: string, default: z}")
    assert immutable_changes(old2, new2) == []
    assert immutable_changes(new2, old2) == ["a"]


def test_immutable_with_explicit_input_params() -> None:
    old = hot_params(IMMUTABLE)
    new = hot_params(IMMUTABLE, {"s": "bar"})
    assert immutable_changes(old, new, input_params={}) == ["s"]  # new typed value "bar" != "foo"
    assert immutable_changes(old, new, input_params={"s": "foo"}) == []


def test_immutable_check_needs_every_common_value() -> None:
    old = hot_params("a: {type: string}", {"a": "x"})
    new = hot_params("a: {type: string}")
    with pytest.raises(UserParameterMissing):
        immutable_changes(old, new)
