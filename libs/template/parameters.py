"""Template parameters: their schemas (HOT and CFN), values, validation and rendering.

Heat builds a stack's parameters in three steps, and Ember keeps them apart
because Heat's answers differ by step:

1. parsing the ``parameters`` section (:func:`parse_hot_parameters`,
   :func:`parse_cfn_parameters`): malformed schemas fail here, on every
   request, including ``POST /validate``;
2. :meth:`Parameters.validate` with ``validate_value=False`` (what
   ``POST /validate`` does): constraint kinds against types, and template
   defaults against constraints (custom constraints skipped);
3. the same with ``validate_value=True`` (preview, create, update): the
   values themselves, missing required values, custom constraints.

Values come from, in order: the request's ``parameters`` merged over the
environment's ``parameters`` (the caller merges them: ``user_params``), then
``parameter_defaults``, then the template default.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from typing import Any, Literal
from urllib.parse import quote

from libs.template import budgets
from libs.template.constraints import (
    AllowedValues,
    Constraint,
    CustomConstraint,
    CustomConstraints,
    ParamType,
    check,
    check_applicable,
    check_keys,
    parse_bool,
    parse_cfn_constraints,
    parse_hot_constraints,
    to_number,
)
from libs.template.custom_constraints import shared_defaults
from libs.template.errors import (
    ImmutableParameterModified,
    InvalidSchemaError,
    StackValidationFailed,
    UnhandledPythonError,
    UnknownUserParameter,
    UserParameterMissing,
)

Dialect = Literal["hot", "cfn"]

PARAM_TYPES: tuple[ParamType, ...] = ("string", "number", "comma_delimited_list", "json", "boolean")
# The CFN spelling of each type; also what POST /validate shows as "Type" for HOT.
CFN_TYPE_NAMES: dict[ParamType, str] = {
    "string": "String", "number": "Number", "comma_delimited_list": "CommaDelimitedList",
    "json": "Json", "boolean": "Boolean",
}
_FROM_CFN: dict[str, ParamType] = {v: k for k, v in CFN_TYPE_NAMES.items()}

# OS::region is declared pseudo (so it is filtered from POST /validate and
# update checks) but Heat never creates it: get_param OS::region fails.
HOT_PSEUDO_PARAMETERS = ("OS::stack_id", "OS::stack_name", "OS::region", "OS::project_id")
CFN_PSEUDO_PARAMETERS = ("AWS::StackId", "AWS::StackName", "AWS::Region")
PSEUDO_PARAMETERS: dict[Dialect, tuple[str, ...]] = {
    "hot": HOT_PSEUDO_PARAMETERS, "cfn": CFN_PSEUDO_PARAMETERS}
CFN_REGION = "ap-southeast-1"
_CFN_REGIONS = ("us-east-1", "us-west-1", "us-west-2", "sa-east-1", "eu-west-1", "ap-southeast-1",
                "ap-northeast-1")

HIDDEN_TEXT = "******"


@dataclasses.dataclass(frozen=True)
class ParamSchema:
    """One parameter's declaration. Fields keep the template's raw values where Heat does."""

    name: str
    type: ParamType
    label: Any = None
    description: Any = None
    default: Any = None
    hidden: bool = False
    immutable: bool = False
    tags: Any = None
    constraints: tuple[Constraint, ...] = ()
    dialect: Dialect = "hot"

    @property
    def type_name(self) -> str:
        """The type as Heat's messages spell it: ``number`` in HOT, ``Number`` in CFN."""
        return self.type if self.dialect == "hot" else CFN_TYPE_NAMES[self.type]


# ---- parsing --------------------------------------------------------------------------------------

_HOT_KEYS = ("type", "description", "default", "schema", "constraints", "hidden", "label", "immutable")
_HOT_VERSION_ALIASES = {"newton": "2016-10-14", "ocata": "2017-02-24", "pike": "2017-09-01",
                        "queens": "2018-03-02", "rocky": "2018-08-31", "wallaby": "2021-04-16"}
_MODULO_SINCE = "2017-02-24"
_TAGS_SINCE = "2018-03-02"
_CFN_KEYS = ("Type", "Default", "NoEcho", "AllowedValues", "AllowedPattern", "MaxLength", "MinLength",
             "MaxValue", "MinValue", "Description", "ConstraintDescription", "Label")


def _entries(section: Any) -> Iterator[tuple[Any, Any]]:
    if not section:  # a bare `parameters:` is None: no parameters
        return iter(())
    if not isinstance(section, Mapping):
        raise UnhandledPythonError(
            "AttributeError", f"'{type(section).__name__}' object has no attribute 'items'")
    return iter(section.items())


def parse_hot_parameters(section: Any, *, version_date: str) -> dict[str, ParamSchema]:
    """The ``parameters`` section of a HOT template of version ``version_date`` (2016-10-14)."""
    date = _HOT_VERSION_ALIASES.get(str(version_date), str(version_date))
    with_tags = date >= _TAGS_SINCE
    keys = (*_HOT_KEYS, "tags") if with_tags else _HOT_KEYS
    parsed: dict[str, ParamSchema] = {}
    for name, raw in _entries(section):
        schema = check_keys(raw, keys, f"parameter ({name})")
        if "type" not in schema:
            raise InvalidSchemaError(f"Missing parameter type for parameter: {name}")
        # `tags: null` counts as "not a list" too: Heat tests get('tags', []).
        if with_tags and "tags" in schema and not isinstance(schema["tags"], list):
            raise InvalidSchemaError(f"Tags property should be a list for parameter: {name}")
        constraints = parse_hot_constraints(name, schema.get("constraints"),
                                            with_modulo=date >= _MODULO_SINCE)
        kind = schema["type"]
        if kind not in PARAM_TYPES:
            raise InvalidSchemaError(f"Invalid type ({kind})")
        parsed[name] = ParamSchema(
            name, kind, label=schema.get("label"), description=schema.get("description"),
            default=schema.get("default"),
            # Heat only tests truthiness: `hidden: "false"` (a string) hides.
            hidden=bool(schema.get("hidden", False)), immutable=bool(schema.get("immutable", False)),
            tags=schema.get("tags"), constraints=constraints)
    return parsed


def parse_cfn_parameters(section: Any) -> dict[str, ParamSchema]:
    """The ``Parameters`` section of an AWSTemplateFormatVersion/HeatTemplateFormatVersion template."""
    parsed: dict[str, ParamSchema] = {}
    for name, raw in _entries(section):
        schema = check_keys(raw, _CFN_KEYS, f"parameter ({name})")
        if "Type" not in schema:
            raise InvalidSchemaError(f"Missing parameter type for parameter: {name}")
        constraints = parse_cfn_constraints(schema)
        kind = schema["Type"]
        if kind not in _FROM_CFN:
            raise InvalidSchemaError(f"Invalid type ({kind})")
        parsed[name] = ParamSchema(
            name, _FROM_CFN[kind], label=schema.get("Label"), description=schema.get("Description"),
            default=schema.get("Default"),
            hidden=str(schema.get("NoEcho", "false")).lower() == "true", constraints=constraints,
            dialect="cfn")
    return parsed


# ---- values ---------------------------------------------------------------------------------------

def parse_list(value: Any) -> list[str]:
    """comma_delimited_list: items are not stripped, list items are str()-ed, "" is []."""
    if isinstance(value, list):
        return [str(item) for item in value]
    if value == "":
        return []
    if not isinstance(value, str):
        raise ValueError("Value must be a comma-delimited list string: "
                         f"'{type(value).__name__}' object has no attribute 'split'")
    return value.split(",")


def parse_json(value: Any) -> Any:
    """json: maps and lists as they are (round-tripped), or JSON text. Heat keeps "" as ""."""
    try:
        text = value if isinstance(value, str) else json.dumps(value)
        parsed = json.loads(text) if text else value
    except (ValueError, TypeError) as exc:
        raise ValueError(f"Value must be valid JSON: {exc}") from None
    except RecursionError:
        raise ValueError(budgets.depth_message("The value")) from None
    budgets.check_depth(parsed, "The value", error=ValueError)
    return parsed


def typed_value(schema: ParamSchema, raw: Any) -> Any:
    """What get_param sees for a (validated) raw value."""
    if schema.type == "string":
        return str(raw)
    if schema.type == "number":
        return to_number(raw)
    if schema.type == "boolean":
        return parse_bool(str(raw))
    if schema.type == "comma_delimited_list":
        return parse_list(raw)
    return parse_json(raw)


def value_text(schema: ParamSchema, value: Any) -> str:
    """How stack show renders a typed value (lists lose their items' commas, as in Heat)."""
    if schema.type == "comma_delimited_list":
        return ",".join(value)
    if schema.type == "json":
        return json.dumps(value)
    return str(value)


def _check_value(schema: ParamSchema, raw: Any, custom: CustomConstraints) -> None:
    """A user value or effective default: the type first, then every constraint."""
    candidate = raw
    try:
        if schema.type == "number":
            to_number(raw)
        elif schema.type == "boolean":
            parse_bool(raw)
        elif schema.type == "comma_delimited_list":
            candidate = parse_list(raw)
        elif schema.type == "json":
            candidate = parse_json(raw)
    except (ValueError, TypeError) as exc:
        raise StackValidationFailed(str(exc)) from None
    try:
        for constraint in schema.constraints:
            check(constraint, candidate, schema.type, schema.type_name, custom)
    except ValueError as exc:
        raise StackValidationFailed(str(exc)) from None
    except TypeError as exc:  # Heat does not catch these (len() of a number): HTTP 500
        raise UnhandledPythonError("TypeError", str(exc)) from None


def _check_template_default(schema: ParamSchema) -> None:
    """Heat checks the template default even without values; never custom constraints."""
    if schema.default is None:
        return
    default = schema.default
    if schema.type == "comma_delimited_list":
        if isinstance(default, list):
            default = [str(item) for item in default]
        elif isinstance(default, str):
            default = default.split(",")  # so "" is [""] here, but [] as a value
        else:
            raise InvalidSchemaError("Default must be a comma-delimited list string: "
                                     f"'{type(default).__name__}' object has no attribute 'split'")
    try:
        for constraint in schema.constraints:
            if not isinstance(constraint, CustomConstraint):
                check(constraint, default, schema.type, schema.type_name)
    except (ValueError, TypeError) as exc:
        raise InvalidSchemaError(f"Invalid default {schema.default} ({exc})") from None


@dataclasses.dataclass
class _Param:
    schema: ParamSchema
    user_value: Any = None
    user_default: Any = None  # from parameter_defaults; beats the template default

    def has_default(self) -> bool:
        return self.schema.default is not None or self.user_default is not None

    def default(self) -> Any:
        return self.user_default if self.user_default is not None else self.schema.default

    def raw(self) -> Any:
        if self.user_value is not None:
            return self.user_value
        if self.has_default():
            return self.default()
        raise UserParameterMissing(self.schema.name)


def _pseudo_schemas(dialect: Dialect, stack_name: str | None, stack_id: str | None,
                    project_id: str) -> Iterator[ParamSchema]:
    # Heat declares pseudo parameters with its CFN schema class: type "String".
    identified = stack_name is not None
    if dialect == "hot":
        yield ParamSchema("OS::stack_id", "string", description="Stack ID",
                          default=str(stack_id) if identified else "", dialect="cfn")
        yield ParamSchema("OS::project_id", "string", description="Project ID",
                          default=project_id if identified else "", dialect="cfn")
        if stack_name:
            yield ParamSchema("OS::stack_name", "string", description="Stack Name", default=stack_name,
                              dialect="cfn")
        return
    arn = "None"
    if identified:
        arn = (f"arn:openstack:heat::{quote(project_id, safe='')}:stacks/"
               f"{quote(stack_name or '', safe='')}/{quote(str(stack_id), safe='')}")
    yield ParamSchema("AWS::StackId", "string", description="Stack ID", default=arn, dialect="cfn")
    if stack_name:
        yield ParamSchema("AWS::StackName", "string", description="Stack Name", default=stack_name,
                          dialect="cfn")
        yield ParamSchema("AWS::Region", "string", default=CFN_REGION,
                          constraints=(AllowedValues(_CFN_REGIONS),), dialect="cfn")


class Parameters:
    """A stack's parameters: pseudo parameters first, then the template's, in template order.

    ``stack_name=None`` means "no stack at all" (Heat's template-only checks:
    HOT then has ``OS::stack_id`` and ``OS::project_id`` = "" and no
    ``OS::stack_name``). ``stack_id=None`` with a name is a stack not stored
    yet (preview, validate): Heat shows ``OS::stack_id`` as "None" and an
    ``AWS::StackId`` ARN ending in "/None".
    """

    def __init__(self, schemas: Mapping[str, ParamSchema], *, dialect: Dialect = "hot",
                 user_params: Mapping[str, Any] | None = None,
                 param_defaults: Mapping[str, Any] | None = None,
                 stack_name: str | None = None, stack_id: str | None = None,
                 project_id: str = "") -> None:
        self.dialect: Dialect = dialect
        self.pseudo_names = PSEUDO_PARAMETERS[dialect]
        self.user_params: dict[str, Any] = dict(user_params or {})
        self._template_names = list(schemas)
        self._params: dict[str, _Param] = {
            s.name: _Param(s) for s in _pseudo_schemas(dialect, stack_name, stack_id, project_id)}
        # A template parameter named like a pseudo one replaces it (keeping its place).
        for name, schema in schemas.items():
            self._params[name] = _Param(schema, self.user_params.get(name))
        # parameter_defaults reach pseudo parameters too (OS::stack_name can be
        # overridden that way in Heat); unknown names are ignored.
        for name, value in (param_defaults or {}).items():
            if name in self._params:
                self._params[name].user_default = value

    # -- lookups used by functions, conditions and POST /validate --

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._params

    def names(self) -> list[str]:
        return list(self._params)

    def template_names(self) -> list[str]:
        """Every non-pseudo name (Heat's ``non_pseudo_param_keys``)."""
        return [n for n in self._params if n not in self.pseudo_names]

    def _param(self, name: str) -> _Param:
        try:
            return self._params[name]
        except KeyError:
            raise UserParameterMissing(name) from None

    def schema(self, name: str) -> ParamSchema:
        return self._param(name).schema

    def user_value(self, name: str) -> Any:
        return self._param(name).user_value

    def has_default(self, name: str) -> bool:
        return self._param(name).has_default()

    def default(self, name: str) -> Any:
        """``parameter_defaults`` if set there, else the template default."""
        return self._param(name).default()

    def value(self, name: str) -> Any:
        """The typed value (what get_param returns); UserParameterMissing if there is none."""
        param = self._param(name)
        try:
            return typed_value(param.schema, param.raw())
        except (ValueError, TypeError) as exc:  # only reachable for values never validated
            raise UnhandledPythonError(type(exc).__name__, str(exc)) from None

    def display(self) -> dict[str, str]:
        """Stack show's ``parameters``: every value as text, hidden ones masked."""
        shown: dict[str, str] = {}
        for name, param in self._params.items():
            text = value_text(param.schema, self.value(name))
            shown[name] = HIDDEN_TEXT if param.schema.hidden else text
        return shown

    # -- validation --

    def validate(self, *, validate_value: bool = True,
                 custom_constraints: CustomConstraints | None = None) -> None:
        """Heat's order: unknown user parameters, then each parameter, pseudo ones first."""
        for name in self.user_params:
            if name not in self._template_names:
                raise UnknownUserParameter(name)
        custom = custom_constraints if custom_constraints is not None else shared_defaults()
        for name, param in self._params.items():
            try:
                for constraint in param.schema.constraints:
                    check_applicable(constraint, param.schema.type, param.schema.type_name)
                _check_template_default(param.schema)
                if validate_value:
                    _check_value(param.schema, param.raw(), custom)
            except StackValidationFailed as exc:
                raise StackValidationFailed(f"Parameter '{name}' is invalid: {exc}") from None
            except InvalidSchemaError as exc:
                raise InvalidSchemaError(f"Parameter '{name}' is invalid: {exc}") from None


# ---- updates --------------------------------------------------------------------------------------

def immutable_changes(old: Parameters, new: Parameters,
                      input_params: Mapping[str, Any] | None = None) -> list[str]:
    """Names of immutable parameters an update changes, in the new template's order.

    Heat compares the old *typed* value with the *raw* value from the new
    environment's ``parameters`` (``input_params``, by default the new
    stack's user parameters) when there is one, else with the new typed value.
    So an immutable number set to 5 is "changed" by passing "5" again; Ember
    keeps that. (Heat lists the names in set order; Ember in template order.)
    """
    inputs = new.user_params if input_params is None else input_params
    previous = set(old.template_names())
    changed: list[str] = []
    for name in new.template_names():
        if name not in previous:
            continue
        # Computed before the immutability test, so a missing value fails here as in Heat.
        candidate = inputs[name] if name in inputs else new.value(name)
        if new.schema(name).immutable and old.value(name) != candidate:
            changed.append(name)
    return changed


def check_immutable(old: Parameters, new: Parameters,
                    input_params: Mapping[str, Any] | None = None) -> None:
    """ImmutableParameterModified if an update changes an immutable parameter."""
    changed = immutable_changes(old, new, input_params)
    if changed:
        raise ImmutableParameterModified(*changed)
