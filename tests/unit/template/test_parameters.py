"""Parsing the parameters section: HOT by version, CFN, and Heat's schema errors."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from libs.template import constraints as c
from libs.template.errors import InvalidSchemaError, TemplateError, UnhandledPythonError
from libs.template.parameters import ParamSchema, parse_cfn_parameters, parse_hot_parameters


def hot(text: str, version: str = "2021-04-16") -> dict[str, ParamSchema]:
    return parse_hot_parameters(yaml.safe_load(text), version_date=version)


def test_full_hot_schema() -> None:
    schemas = hot("""
        db_port:
          type: number
          label: Port
          description: The database port
          default: 3306
          hidden: true
          immutable: true
          tags: [db, net]
          constraints:
            - range: {min: 1024, max: 65535}
              description: unprivileged
            - modulo: {step: 2, offset: 0}
        """)
    assert schemas == {"db_port": ParamSchema(
        "db_port", "number", label="Port", description="The database port", default=3306, hidden=True,
        immutable=True, tags=["db", "net"],
        constraints=(c.Range(1024, 65535, "unprivileged"), c.Modulo(2, 0)))}
    assert schemas["db_port"].type_name == "number"


@pytest.mark.parametrize("kind", ["string", "number", "json", "comma_delimited_list", "boolean"])
def test_every_hot_type(kind: str) -> None:
    assert hot(f"p: {{type: {kind}}}")["p"] == ParamSchema("p", kind)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "field", "expected"),
    [
        ("p: {type: string}", "hidden", False),
        ("p: {type: string, hidden: false}", "hidden", False),
        # Heat only tests truthiness, so a quoted "false" hides the parameter
        ("p: {type: string, hidden: 'false'}", "hidden", True),
        ("p: {type: string, hidden: 1}", "hidden", True),
        ("p: {type: string, immutable: yes}", "immutable", True),
        ("p: {type: string, immutable: ''}", "immutable", False),
        ("p: {type: string, label: 5}", "label", 5),
        ("p: {type: string, schema: {anything: goes}}", "default", None),  # 'schema' is allowed, ignored
        ("p: {type: string, constraints: null}", "constraints", ()),
        ("p: {type: string, default: null}", "default", None),
        ("p: {type: comma_delimited_list, default: [1, true]}", "default", [1, True]),
    ],
)
def test_hot_fields(text: str, field: str, expected: Any) -> None:
    assert getattr(hot(text)["p"], field) == expected


@pytest.mark.parametrize(
    ("section", "expected"),
    [(None, {}), ({}, {}), ("", {}), ([], {})],
)
def test_empty_sections(section: Any, expected: dict[str, Any]) -> None:
    assert parse_hot_parameters(section, version_date="2013-05-23") == expected
    assert parse_cfn_parameters(section) == expected


def test_order_is_the_templates() -> None:
    assert list(hot("{b: {type: string}, a: {type: string}, c: {type: number}}")) == ["b", "a", "c"]


@pytest.mark.parametrize(
    ("text", "version", "error", "message"),
    [
        ("p: {foo: bar}", "2013-05-23", InvalidSchemaError, "Invalid key 'foo' for parameter (p)"),
        ("p: {type: string, Type: string}", "2013-05-23", InvalidSchemaError,
         "Invalid key 'Type' for parameter (p)"),
        ("p: {description: Hi!}", "2013-05-23", InvalidSchemaError,
         "Missing parameter type for parameter: p"),
        ("p: {type: Unicode}", "2013-05-23", InvalidSchemaError, "Invalid type (Unicode)"),
        ("p: {type: String}", "2013-05-23", InvalidSchemaError, "Invalid type (String)"),
        ("p: {type: [string]}", "2013-05-23", InvalidSchemaError, "Invalid type (['string'])"),
        ("p: {type: null}", "2013-05-23", InvalidSchemaError, "Invalid type (None)"),
        ("p: No attribute.", "2013-05-23", InvalidSchemaError, "Invalid parameter (p), expected a mapping"),
        ("p:", "2013-05-23", InvalidSchemaError, "Invalid parameter (p), expected a mapping"),
        ("5: {foo: 1}", "2013-05-23", InvalidSchemaError, "Invalid key 'foo' for parameter (5)"),
        # constraint errors come before the type check, as in Heat
        ("p: {type: Unicode, constraints: [{foo: 1}]}", "2013-05-23", InvalidSchemaError,
         "Invalid key 'foo' for parameter constraints"),
        # modulo only from 2017-02-24
        ("p: {type: number, constraints: [{modulo: {step: 2, offset: 1}}]}", "2016-10-14",
         InvalidSchemaError, "No constraint expressed"),
        ("p: {type: number, constraints: [{modulo: {step: 2, offset: 1}}]}", "newton",
         InvalidSchemaError, "No constraint expressed"),
        # tags only from 2018-03-02
        ("p: {type: string, tags: [a]}", "2017-09-01", InvalidSchemaError,
         "Invalid key 'tags' for parameter (p)"),
        ("p: {type: string, tags: [a]}", "pike", InvalidSchemaError, "Invalid key 'tags' for parameter (p)"),
        ("p: {type: string, tags: a}", "2018-03-02", InvalidSchemaError,
         "Tags property should be a list for parameter: p"),
        ("p: {type: string, tags: null}", "2018-08-31", InvalidSchemaError,
         "Tags property should be a list for parameter: p"),
        ("p: {tags: a}", "2018-08-31", InvalidSchemaError, "Missing parameter type for parameter: p"),
        ("p: {type: string, constraints: 1}", "2013-05-23", InvalidSchemaError,
         "Invalid parameter constraints for parameter p, expected a list"),
        ("p: {type: number, constraints: [{range: {min: abc}}]}", "2013-05-23", UnhandledPythonError,
         "could not convert string to float: 'abc'"),
        # the first bad parameter in template order wins
        ("{a: {type: string}, b: {type: bad}, c: {foo: 1}}", "2013-05-23", InvalidSchemaError,
         "Invalid type (bad)"),
    ],
)
def test_hot_schema_errors(text: str, version: str, error: type[TemplateError], message: str) -> None:
    with pytest.raises(error) as err:
        hot(text, version)
    assert str(err.value) == message


@pytest.mark.parametrize(
    ("version", "modulo", "tags"),
    [
        ("2013-05-23", False, False), ("2016-10-14", False, False), ("2017-02-24", True, False),
        ("ocata", True, False), ("2017-09-01", True, False), ("2018-03-02", True, True),
        ("queens", True, True), ("rocky", True, True), ("2021-04-16", True, True), ("wallaby", True, True),
    ],
)
def test_features_by_version(version: str, modulo: bool, tags: bool) -> None:
    text = "p: {type: number, constraints: [{modulo: {step: 2, offset: 1}}]}"
    if modulo:
        assert hot(text, version)["p"].constraints == (c.Modulo(2, 1),)
    else:
        with pytest.raises(InvalidSchemaError):
            hot(text, version)
    if tags:
        assert hot("p: {type: string, tags: [x]}", version)["p"].tags == ["x"]
    else:
        with pytest.raises(InvalidSchemaError):
            hot("p: {type: string, tags: [x]}", version)


def test_section_that_is_not_a_map() -> None:
    with pytest.raises(UnhandledPythonError) as err:
        parse_hot_parameters(["p"], version_date="2013-05-23")
    assert (err.value.error_type, str(err.value)) == (
        "AttributeError", "'list' object has no attribute 'items'")


def test_full_cfn_schema() -> None:
    schemas = parse_cfn_parameters(yaml.safe_load("""
        KeyName:
          Type: String
          Description: Name of an existing EC2KeyPair
          Label: Key
          Default: heat_key
          NoEcho: "true"
          MinLength: "1"
          MaxLength: 64
          AllowedPattern: "[a-z_]*"
          AllowedValues: [heat_key, other]
          ConstraintDescription: must be a key
        Size:
          Type: Number
          MinValue: "1"
          MaxValue: 8.5
        """))
    assert schemas == {
        "KeyName": ParamSchema(
            "KeyName", "string", label="Key", description="Name of an existing EC2KeyPair",
            default="heat_key", hidden=True,
            constraints=(c.Length(1, 64, "must be a key"),
                         c.AllowedValues(("heat_key", "other"), "must be a key"),
                         c.AllowedPattern("[a-z_]*", "must be a key")),
            dialect="cfn"),
        "Size": ParamSchema("Size", "number", constraints=(c.Range(1, 8.5),), dialect="cfn"),
    }
    assert schemas["Size"].type_name == "Number"


@pytest.mark.parametrize(
    ("kind", "expected"),
    [("String", "string"), ("Number", "number"), ("CommaDelimitedList", "comma_delimited_list"),
     ("Json", "json"), ("Boolean", "boolean")],
)
def test_every_cfn_type(kind: str, expected: str) -> None:
    schema = parse_cfn_parameters({"p": {"Type": kind}})["p"]
    assert (schema.type, schema.type_name) == (expected, kind)


@pytest.mark.parametrize(
    ("no_echo", "hidden"),
    [("true", True), ("TrUe", True), (True, True), ("false", False), ("yes", False), (1, False)],
)
def test_cfn_no_echo(no_echo: Any, hidden: bool) -> None:
    assert parse_cfn_parameters({"p": {"Type": "String", "NoEcho": no_echo}})["p"].hidden is hidden


@pytest.mark.parametrize(
    ("schema", "error", "message"),
    [
        ({"foo": "bar"}, InvalidSchemaError, "Invalid key 'foo' for parameter (p)"),
        ({"Type": "String", "Immutable": True}, InvalidSchemaError,
         "Invalid key 'Immutable' for parameter (p)"),
        ({"Type": "String", "Tags": ["a"]}, InvalidSchemaError, "Invalid key 'Tags' for parameter (p)"),
        ({"type": "String"}, InvalidSchemaError, "Invalid key 'type' for parameter (p)"),
        ({"Description": "Hi!"}, InvalidSchemaError, "Missing parameter type for parameter: p"),
        ({"Type": "List"}, InvalidSchemaError, "Invalid type (List)"),
        ({"Type": "string"}, InvalidSchemaError, "Invalid type (string)"),
        ({"Type": "List", "MinValue": None}, InvalidSchemaError,
         "A range constraint must have a min value and/or a max value specified."),
        ({"Type": "Number", "MinValue": "one"}, UnhandledPythonError,
         "could not convert string to float: 'one'"),
        ("No attribute.", InvalidSchemaError, "Invalid parameter (p), expected a mapping"),
    ],
)
def test_cfn_schema_errors(schema: Any, error: type[TemplateError], message: str) -> None:
    with pytest.raises(error) as err:
        parse_cfn_parameters({"p": schema})
    assert str(err.value) == message
