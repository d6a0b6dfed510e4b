"""Every template version Heat accepts, as data: its functions, sections and keys.

One :class:`VersionSpec` per version (Heat's ``heat.templates`` entry points and
its ``HOTemplate*``/``CfnTemplate`` classes), :func:`lookup` to find a
template's version with Heat's errors, and the bodies of Heat's
``GET /template_versions`` and ``GET /template_versions/{v}/functions``.

The CFN functions come from :mod:`libs.template.functions.cfn`, imported when a
version that uses them is first built.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal

from libs.template.errors import InvalidTemplateVersion, NotFound
from libs.template.functions import hot
from libs.template.functions.base import Function, Invalid, ParseContext, Resolver

HOT = "heat_template_version"
AWS = "AWSTemplateFormatVersion"
HEAT = "HeatTemplateFormatVersion"
VERSION_KEYS = (HOT, AWS, HEAT)

FunctionTable = Mapping[str, type[Function]]


@dataclasses.dataclass(frozen=True)
class VersionSpec:
    """What one template version allows."""

    key: str  # heat_template_version | AWSTemplateFormatVersion | HeatTemplateFormatVersion
    date: str  # "2016-10-14"
    aliases: tuple[str, ...]  # ("newton",)
    kind: Literal["hot", "cfn"]
    # Function name -> class, Heat's table order; dropped functions map to Removed.
    functions: FunctionTable
    # The table for parsing conditions: condition functions, every other function
    # Invalid (Removed stays Removed in HOT). Empty where the version has no conditions.
    condition_functions: FunctionTable
    sections: tuple[str, ...]
    resource_keys: tuple[str, ...]
    output_keys: tuple[str, ...]
    deletion_policies: Mapping[str, str]  # as written -> canonical ("delete" -> "Delete")
    param_modulo: bool  # the ``modulo`` parameter constraint
    param_tags: bool  # the ``tags`` parameter key

    @property
    def full_name(self) -> str:
        """The name Heat's API uses: ``heat_template_version.2016-10-14``."""
        return f"{self.key}.{self.date}"

    @property
    def names(self) -> tuple[str, ...]:
        """Every value the version key may have for this version: the date, then aliases."""
        return (self.date, *self.aliases)

    def parse_context(self, resolver: Resolver | None = None, *,
                      mappings: Mapping[str, Any] | None = None,
                      parameter_names: frozenset[str] = frozenset(),
                      resource_names: frozenset[str] = frozenset()) -> ParseContext:
        """A context for parsing snippets of this version (see ParseContext for the options)."""
        return ParseContext(self.functions, self.condition_functions, self.full_name,
                            resolver=resolver, mappings=dict(mappings or {}),
                            parameter_names=parameter_names, resource_names=resource_names)


# ---- HOT function tables ------------------------------------------------------------
# Each name with the class it maps to from a version on, in the order of Heat's tables
# from 2014-10-16 (2013-05-23 has its own order, below). Removed: gone from then on.
_CFN_SELECT = "<CFN Fn::Select>"
_GONE_IN_2014: dict[str, type[Function] | str] = {"2014-10-16": hot.Removed}
_HOT_FUNCTIONS: tuple[tuple[str, dict[str, type[Function] | str]], ...] = (
    ("get_attr", {"2014-10-16": hot.GetAtt, "2015-10-15": hot.GetAttAllAttributes}),
    ("get_file", {"2014-10-16": hot.GetFile}),
    ("get_param", {"2014-10-16": hot.GetParam}),
    ("get_resource", {"2014-10-16": hot.GetResource}),
    ("list_join", {"2014-10-16": hot.Join, "2015-10-15": hot.JoinMultiple}),
    ("repeat", {"2015-04-30": hot.Repeat, "2016-10-14": hot.RepeatWithMap,
                "2017-09-01": hot.RepeatWithNestedLoop}),
    ("resource_facade", {"2014-10-16": hot.ResourceFacade}),
    ("str_replace", {"2014-10-16": hot.Replace, "2015-10-15": hot.ReplaceJson}),
    ("Fn::Select", {"2014-10-16": _CFN_SELECT, "2015-10-15": hot.Removed}),
    ("digest", {"2015-04-30": hot.Digest}),
    ("str_split", {"2015-10-15": hot.StrSplit}),
    ("map_merge", {"2016-04-08": hot.MapMerge}),
    ("yaql", {"2016-10-14": hot.Yaql}),
    ("map_replace", {"2016-10-14": hot.MapReplace}),
    ("if", {"2016-10-14": hot.If, "2021-04-16": hot.IfNullable}),
    ("filter", {"2017-02-24": hot.Filter}),
    ("str_replace_strict", {"2017-02-24": hot.ReplaceJsonStrict}),
    ("make_url", {"2017-09-01": hot.MakeURL}),
    ("list_concat", {"2017-09-01": hot.ListConcat}),
    ("str_replace_vstrict", {"2017-09-01": hot.ReplaceJsonVeryStrict}),
    ("list_concat_unique", {"2017-09-01": hot.ListConcatUnique}),
    ("contains", {"2017-09-01": hot.Contains}),
    *((name, _GONE_IN_2014) for name in (
        "Fn::GetAZs", "Fn::Join", "Fn::Split", "Fn::Replace", "Fn::Base64",
        "Fn::MemberListToMap", "Fn::ResourceFacade", "Ref")),
)

# 2013-05-23 in Heat's order; a str is a CFN function taken from HOT_20130523_CFN_FUNCTIONS.
_HOT_20130523: tuple[tuple[str, type[Function] | None], ...] = (
    ("Fn::GetAZs", None), ("get_param", hot.GetParam), ("get_resource", hot.GetResource),
    ("Ref", None), ("get_attr", hot.GetAttThenSelect), ("Fn::Select", None), ("Fn::Join", None),
    ("list_join", hot.Join), ("Fn::Split", None), ("str_replace", hot.Replace),
    ("Fn::Replace", None), ("Fn::Base64", None), ("Fn::MemberListToMap", None),
    ("resource_facade", hot.ResourceFacade), ("Fn::ResourceFacade", None),
    ("get_file", hot.GetFile),
)

_HOT_CONDITIONS: tuple[tuple[str, str, type[Function]], ...] = (
    ("get_param", "2016-10-14", hot.GetParam),
    ("equals", "2016-10-14", hot.Equals),
    ("not", "2016-10-14", hot.Not),
    ("and", "2016-10-14", hot.And),
    ("or", "2016-10-14", hot.Or),
    ("yaql", "2017-09-01", hot.Yaql),
    ("contains", "2017-09-01", hot.Contains),
)

# ---- the versions -------------------------------------------------------------------
# (key, date, aliases), in setup.cfg's order.
_VERSIONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (AWS, "2010-09-09", ()),
    (HEAT, "2012-12-12", ()),
    (HOT, "2013-05-23", ()),
    (HOT, "2014-10-16", ()),
    (HOT, "2015-04-30", ()),
    (HOT, "2015-10-15", ()),
    (HOT, "2016-04-08", ()),
    (HOT, "2016-10-14", ("newton",)),
    (HOT, "2017-02-24", ("ocata",)),
    (HOT, "2017-09-01", ("pike",)),
    (HOT, "2018-03-02", ("queens",)),
    (HOT, "2018-08-31", ("rocky",)),
    (HOT, "2021-04-16", ("wallaby",)),
)

_POLICIES = {"Delete": "Delete", "Retain": "Retain", "Snapshot": "Snapshot"}
_LOWERCASE_POLICIES = {**_POLICIES, "delete": "Delete", "retain": "Retain", "snapshot": "Snapshot"}

# Heat's HOT sections include MAPPINGS under the name "__undefined__", so a
# top-level key of that name passes its section check.
_HOT_SECTIONS = ("heat_template_version", "description", "parameter_groups", "parameters",
                 "resources", "outputs", "__undefined__")
_HOT_RESOURCE_KEYS = ("type", "properties", "metadata", "depends_on", "deletion_policy",
                      "update_policy", "description")
_CFN_SECTIONS = ("AWSTemplateFormatVersion", "HeatTemplateFormatVersion", "Description",
                 "Mappings", "Parameters", "Resources", "Outputs")
_CFN_RESOURCE_KEYS = ("Type", "Properties", "Metadata", "DependsOn", "DeletionPolicy",
                      "UpdatePolicy", "Description")


def _cfn() -> Any:
    from libs.template.functions import cfn
    return cfn


def _frozen(table: Mapping[str, Any]) -> FunctionTable:
    return MappingProxyType(dict(table))


def _hot_functions(date: str) -> FunctionTable:
    if date == "2013-05-23":
        cfn = _cfn().HOT_20130523_CFN_FUNCTIONS
        return _frozen({name: cls or cfn[name] for name, cls in _HOT_20130523})
    table: dict[str, type[Function]] = {}
    for name, since in _HOT_FUNCTIONS:
        known = [first for first in since if first <= date]
        if known:
            cls = since[max(known)]
            table[name] = _cfn().CFN_SELECT if isinstance(cls, str) else cls
    return _frozen(table)


def _condition_table(functions: FunctionTable, condition_functions: FunctionTable,
                     keep_removed: bool) -> FunctionTable:
    """Heat's table for parsing conditions: every function Invalid, then the condition ones."""
    table: dict[str, type[Function]] = {
        name: cls if keep_removed and cls is hot.Removed else Invalid
        for name, cls in functions.items()}
    table.update({name: cls for name, cls in condition_functions.items() if cls is not Invalid})
    return _frozen(table)


def _hot(date: str, aliases: tuple[str, ...]) -> VersionSpec:
    functions = _hot_functions(date)
    has_conditions = date >= "2016-10-14"
    conditions = _frozen({name: cls for name, since, cls in _HOT_CONDITIONS if since <= date})
    return VersionSpec(
        key=HOT, date=date, aliases=aliases, kind="hot", functions=functions,
        condition_functions=_condition_table(functions, conditions, True) if has_conditions
        else _frozen({}),
        sections=_HOT_SECTIONS + (("conditions",) if has_conditions else ()),
        resource_keys=_HOT_RESOURCE_KEYS + (("external_id", "condition") if has_conditions else ()),
        output_keys=("description", "value") + (("condition",) if has_conditions else ()),
        deletion_policies=MappingProxyType(_LOWERCASE_POLICIES if has_conditions else _POLICIES),
        param_modulo=date >= "2017-02-24",
        param_tags=date >= "2018-03-02",
    )


def _cfn_spec(key: str, date: str) -> VersionSpec:
    cfn = _cfn()
    aws = key == AWS
    functions = _frozen(cfn.CFN_FUNCTIONS if aws else cfn.HEAT_CFN_FUNCTIONS)
    return VersionSpec(
        key=key, date=date, aliases=(), kind="cfn", functions=functions,
        condition_functions=_condition_table(functions, cfn.CFN_CONDITION_FUNCTIONS, False) if aws
        else _frozen({}),
        sections=_CFN_SECTIONS + (("Conditions",) if aws else ()),
        resource_keys=_CFN_RESOURCE_KEYS + (("Condition",) if aws else ()),
        output_keys=("Description", "Value") + (("Condition",) if aws else ()),
        deletion_policies=MappingProxyType(_POLICIES),
        param_modulo=False,
        param_tags=False,
    )


@functools.cache
def _spec(key: str, date: str) -> VersionSpec:
    aliases = next(a for k, d, a in _VERSIONS if (k, d) == (key, date))
    return _hot(date, aliases) if key == HOT else _cfn_spec(key, date)


def _by_value(key: str, value: str) -> VersionSpec | None:
    for k, date, aliases in _VERSIONS:
        if k == key and value in (date, *aliases):
            return _spec(k, date)
    return None


def all_versions() -> tuple[VersionSpec, ...]:
    """Every version, in the order Heat's API lists them."""
    return tuple(sorted((_spec(k, d) for k, d, _ in _VERSIONS), key=lambda v: v.full_name))


def lookup(template: Mapping[Any, Any]) -> VersionSpec:
    """The version a template declares, or Heat's InvalidTemplateVersion.

    Only a version key with a string value counts (Heat's rule), so an unquoted
    date that a YAML 1.1 loader made a date object reads as "not provided".
    """
    present = sorted(k for k in VERSION_KEYS if isinstance(template.get(k), str))
    if len(present) > 1:
        # Heat joins a set here; sorted is one of its possible orders.
        raise InvalidTemplateVersion(f"Ambiguous versions ({', '.join(present)})")
    if not present:
        raise InvalidTemplateVersion("Template version was not provided")
    key = present[0]
    value: str = template[key]
    spec = _by_value(key, value)
    if spec is None:
        accepted = sorted(name for k, d, a in _VERSIONS if k == key for name in (d, *a))
        should = "should be one of" if len(accepted) > 1 else "should be"
        raise InvalidTemplateVersion(
            f'"{key}: {value}". "{key}" {should}: {", ".join(accepted)}')
    return spec


def by_name(name: str) -> VersionSpec:
    """A version by its API name (``heat_template_version.2016-10-14`` or ``...newton``)."""
    key, _, value = name.partition(".")
    spec = _by_value(key, value) if key in VERSION_KEYS else None
    if spec is None:
        raise NotFound(f"Template with version {name} not found")
    return spec


def template_versions_api() -> dict[str, Any]:
    """The body of ``GET /template_versions``."""
    return {"template_versions": [
        {"version": spec.full_name, "type": spec.kind,
         "aliases": [f"{spec.key}.{alias}" for alias in spec.aliases]}
        for spec in all_versions()]}


def functions_api(version_name: str, with_condition_func: bool = False) -> dict[str, Any]:
    """The body of ``GET /template_versions/{version_name}/functions``.

    As Heat: the version's functions in table order, then (with
    ``with_condition_func``) the condition functions not already listed; a
    condition function of the same name takes the listed one's place (CFN's
    ``Ref`` becomes the parameter-only Ref). Removed functions are left out.
    """
    spec = by_name(version_name)
    listed: dict[str, type[Function]] = dict(spec.functions)
    if with_condition_func:
        listed.update({name: cls for name, cls in spec.condition_functions.items()
                       if cls is not Invalid and cls is not hot.Removed})
    return {"template_functions": [
        {"functions": name, "description": describe(cls)}
        for name, cls in listed.items() if cls is not hot.Removed]}


def describe(cls: type[Function]) -> str:
    """The first line of a function's docstring, as ``pydoc.splitdoc`` takes it."""
    lines = (inspect.getdoc(cls) or "").strip().split("\n")
    if len(lines) == 1:
        return lines[0]
    # A summary line counts only when a blank line follows it.
    return lines[0] if not lines[1].rstrip() else ""
