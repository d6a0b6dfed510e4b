"""CFN intrinsic functions: snippet in, Heat's value or Heat's exact error out.

The value cases are YAML files under fixtures/cfn. Each file has a ``context``
(the template's world: parameters, pseudo parameter values, Mappings,
resources, conditions, the parent's facade, availability zones, which
function table, and whether ``Fn::If`` is decided while parsing) and
``cases``: a ``snippet`` parsed at ``path`` (default ``Outputs.o.Value``; with
``condition: true`` as a condition), then resolved, giving ``value`` or
``error`` (a class name from libs.template.errors or a builtin exception) and
``message``. ``when`` says whether the error comes from parsing (the default
for StackValidationFailed) or resolving. A case may override context keys
under ``context``.

The structural behaviour (tables, dependencies, parse-time ``Fn::If``) and
messages awkward to write in YAML are plain tests below.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from libs.template import cfn_format, errors
from libs.template.functions import base, cfn

FIXTURES = Path(__file__).parent / "fixtures" / "cfn"

TABLES: dict[str, tuple[str, cfn.FunctionTable, cfn.FunctionTable]] = {
    "cfn": ("AWSTemplateFormatVersion.2010-09-09", cfn.CFN_FUNCTIONS, cfn.CFN_CONDITION_FUNCTIONS),
    "heat": ("HeatTemplateFormatVersion.2012-12-12", cfn.HEAT_CFN_FUNCTIONS,
             cfn.HEAT_CFN_CONDITION_FUNCTIONS),
    "hot2013": ("heat_template_version.2013-05-23", cfn.HOT_20130523_CFN_FUNCTIONS, {}),
}


class DictResolver:
    """A resolver backed by dicts; it raises what Ember's real resolvers raise."""

    def __init__(self, world: Mapping[str, Any]) -> None:
        # Pseudo parameters have values but are not the template's parameters.
        self.params: dict[str, Any] = {**(world.get("pseudo") or {}), **(world.get("parameters") or {})}
        self.resources: dict[str, Any] = dict(world.get("resources") or {})
        self.conditions: dict[str, bool] = dict(world.get("conditions") or {})
        self.facade_fields: dict[str, Any] | None = world.get("facade")
        self.azs: list[str] = list(world.get("azs") or ["nova"])
        self.asked: list[str] = []

    def parameter(self, name: str) -> Any:
        if self.params.get(name) is None:
            raise errors.UserParameterMissing(name)
        return self.params[name]

    def reference(self, resource: str) -> Any:
        return self._resource(resource)["ref"]

    def attribute(self, resource: str, attribute: str, path: Sequence[Any]) -> Any:
        assert list(path) == [], "Fn::GetAtt has no path"
        return self._resource(resource).get("attributes", {}).get(attribute)

    def all_attributes(self, resource: str) -> dict[str, Any]:
        return dict(self._resource(resource).get("attributes", {}))

    def _resource(self, name: str) -> dict[str, Any]:
        if name not in self.resources:
            raise errors.InvalidTemplateReference(name, "unknown")
        return dict(self.resources[name])

    def file(self, key: str) -> str | None:
        return None

    def facade(self, field: str) -> Any:
        if self.facade_fields is None:
            attribute = "metadata_get" if field == "metadata" else "t"
            raise AttributeError(f"'NoneType' object has no attribute '{attribute}'")
        return self.facade_fields[field]

    def condition(self, name: str) -> bool:
        self.asked.append(name)
        if name not in self.conditions:
            raise ValueError(f'Invalid condition "{name}"')
        return self.conditions[name]

    def availability_zones(self) -> list[str]:
        return self.azs


def context(world: Mapping[str, Any], resolver: DictResolver | None = None) -> base.ParseContext:
    version, functions, condition_functions = TABLES[world.get("table", "cfn")]
    return base.ParseContext(
        functions=functions, condition_functions=condition_functions, version=version,
        mappings=cfn_format.mappings_section(world), parameter_names=frozenset(world.get("parameters") or {}),
        resource_names=frozenset(world.get("resources") or {}),
        resolver=resolver if world.get("decide_while_parsing") else None)


def parse(snippet: Any, world: Mapping[str, Any], path: str = "Outputs.o.Value", *,
          condition: bool = False) -> tuple[Any, DictResolver]:
    resolver = DictResolver(world)
    ctx = context(world, resolver)
    return base.parse(snippet, path, ctx.for_conditions() if condition else ctx), resolver


def evaluate(snippet: Any, world: Mapping[str, Any], **kwargs: Any) -> Any:
    parsed, resolver = parse(snippet, world, **kwargs)
    return base.resolve(parsed, resolver)


# ---- the YAML tables ------------------------------------------------------------------------


def _cases() -> Iterator[Any]:
    for path in sorted(FIXTURES.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        for case in doc["cases"]:
            world = {**(doc.get("context") or {}), **(case.get("context") or {})}
            yield pytest.param(world, case, id=f"{path.stem}: {case['name']}")


def _error_class(name: str) -> type[BaseException]:
    found = getattr(errors, name, None) or getattr(builtins, name)
    assert isinstance(found, type) and issubclass(found, BaseException)
    return found


def same(actual: Any, expected: Any) -> bool:
    """Equal, and of the same types all the way down (1 is not True, "1" is not 1)."""
    if type(actual) is not type(expected):
        return False
    if isinstance(expected, dict):
        return actual.keys() == expected.keys() and all(same(actual[k], v) for k, v in expected.items())
    if isinstance(expected, list):
        return len(actual) == len(expected) and all(map(same, actual, expected))
    return bool(actual == expected)


@pytest.mark.parametrize(("world", "case"), list(_cases()))
def test_case(world: dict[str, Any], case: dict[str, Any]) -> None:
    kwargs: dict[str, Any] = {"condition": bool(case.get("condition"))}
    if "path" in case:
        kwargs["path"] = case["path"]
    if "error" not in case:
        assert "value" in case, "a case expects a value or an error"
        result = evaluate(case["snippet"], world, **kwargs)
        assert same(result, case["value"]), f"{result!r} != {case['value']!r}"
        return
    expected = _error_class(case["error"])
    when = case.get("when", "parse" if expected is errors.StackValidationFailed else "resolve")
    assert when in ("parse", "resolve")
    if when == "parse":
        with pytest.raises(expected) as caught:
            parse(case["snippet"], world, **kwargs)
    else:
        parsed, resolver = parse(case["snippet"], world, **kwargs)
        with pytest.raises(expected) as caught:
            base.resolve(parsed, resolver)
    assert type(caught.value) is expected
    assert str(caught.value) == case["message"]


def test_every_fixture_file_has_cases() -> None:
    files = sorted(FIXTURES.glob("*.yaml"))
    assert files
    for path in files:
        assert yaml.safe_load(path.read_text())["cases"], path


# ---- the tables -----------------------------------------------------------------------------

CFN_NAMES = {"Ref", "Fn::GetAtt", "Fn::Join", "Fn::Select", "Fn::Split", "Fn::Replace", "Fn::Base64",
             "Fn::FindInMap", "Fn::GetAZs", "Fn::MemberListToMap", "Fn::ResourceFacade", "Fn::If"}


def test_function_tables_are_heats() -> None:
    assert set(cfn.CFN_FUNCTIONS) == CFN_NAMES
    assert set(cfn.HEAT_CFN_FUNCTIONS) == CFN_NAMES - {"Fn::If"}
    assert set(cfn.HOT_20130523_CFN_FUNCTIONS) == CFN_NAMES - {"Fn::GetAtt", "Fn::FindInMap", "Fn::If"}
    for name, cls in cfn.HOT_20130523_CFN_FUNCTIONS.items():
        assert cls is cfn.CFN_FUNCTIONS[name]
    assert cfn.CFN_SELECT is cfn.CFN_FUNCTIONS["Fn::Select"] is cfn.Select


def test_condition_tables() -> None:
    valid = {"Fn::Equals": cfn.Equals, "Ref": cfn.ParamRef, "Fn::FindInMap": cfn.FindInMap,
             "Fn::Not": cfn.Not, "Fn::And": cfn.And, "Fn::Or": cfn.Or}
    table = cfn.CFN_CONDITION_FUNCTIONS
    assert {name: table[name] for name in valid} == valid
    assert {name for name, cls in table.items() if cls is base.Invalid} == CFN_NAMES - set(valid)
    assert set(cfn.HEAT_CFN_CONDITION_FUNCTIONS.values()) == {base.Invalid}


def test_every_function_class_has_a_one_line_docstring() -> None:
    classes = set(cfn.CFN_FUNCTIONS.values()) | set(cfn.CFN_CONDITION_FUNCTIONS.values()) | {
        cfn.ParamRef, cfn.ResourceRef}
    for cls in classes - {base.Invalid}:
        doc = cls.__doc__ or ""
        assert doc.strip() and "\n" not in doc.strip(), cls


# ---- Ref: parameter or resource ---------------------------------------------------------------

WORLD: dict[str, Any] = {
    "parameters": {"env": "prod", "res_name": "server", "attr_name": "ip"},
    "pseudo": {"AWS::StackName": "s"},
    "resources": {"server": {"ref": "srv-1", "attributes": {"ip": "10.0.0.1", "name": "vm"}},
                  "volume": {"ref": "vol-1"}},
    "conditions": {"is_prod": True, "is_test": False},
}


@pytest.mark.parametrize(("table", "name", "kind"), [
    ("cfn", "env", cfn.ParamRef),
    ("cfn", "AWS::StackId", cfn.ParamRef),
    ("cfn", "AWS::StackName", cfn.ParamRef),
    ("cfn", "AWS::Region", cfn.ParamRef),
    ("cfn", "server", cfn.ResourceRef),
    ("cfn", "nowhere", cfn.ParamRef),
    ("cfn", "OS::stack_name", cfn.ParamRef),
    ("cfn", 5, cfn.ParamRef),
    ("heat", "env", cfn.ParamRef),
    ("hot2013", "OS::stack_name", cfn.ParamRef),
    ("hot2013", "OS::stack_id", cfn.ParamRef),
    ("hot2013", "OS::project_id", cfn.ParamRef),
    ("hot2013", "OS::region", cfn.ParamRef),
    ("hot2013", "AWS::StackName", cfn.ParamRef),
])
def test_ref_kind(table: str, name: Any, kind: type[base.Function]) -> None:
    parsed, _ = parse({"Ref": name}, {**WORLD, "table": table})
    assert type(parsed) is kind


def test_ref_is_always_a_parameter_in_conditions() -> None:
    parsed, _ = parse({"Ref": "server"}, WORLD, condition=True)
    assert type(parsed) is cfn.ParamRef


# ---- dependencies and attributes --------------------------------------------------------------


def deps(snippet: Any, world: Mapping[str, Any] = WORLD,
         path: str | None = "r.Properties") -> list[tuple[str, ...]]:
    parsed, _ = parse(snippet, world, "Resources.r.Properties")
    return [(ref.resource, ref.path, ref.function_path) for ref in base.dependencies(parsed, path)]


def test_ref_to_resource_is_a_dependency() -> None:
    assert deps({"p": {"Ref": "server"}}) == [
        ("server", "r.Properties.p", "Resources.r.Properties.p.Ref")]


def test_ref_to_parameter_is_not_a_dependency() -> None:
    assert deps({"p": {"Ref": "env"}, "q": {"Ref": "AWS::Region"}}) == []


def test_getatt_is_a_dependency() -> None:
    assert deps({"p": [{"Fn::GetAtt": ["server", "ip"]}]}) == [
        ("server", "r.Properties.p[0]", "Resources.r.Properties.p[0].Fn::GetAtt")]


def test_nested_dependencies_have_heats_paths() -> None:
    snippet = {"p": {"Fn::Join": [",", [{"Ref": "env"}, {"Fn::Select": [0, [{"Ref": "volume"}]]}]]}}
    assert deps(snippet) == [("volume", "r.Properties.p.Fn::Join[1][1].Fn::Select[1][0]",
                              "Resources.r.Properties.p.Fn::Join[1][1].Fn::Select[1][0].Ref")]


def test_dependencies_without_a_path_carry_the_parse_location() -> None:
    assert deps({"p": {"Ref": "server"}}, path=None) == [
        ("server", "Resources.r.Properties.p", "Resources.r.Properties.p.Ref")]


def test_getatt_with_a_computed_resource_name() -> None:
    snippet = {"p": {"Fn::GetAtt": [{"Ref": "res_name"}, "ip"]}}
    # Without a resolver while parsing, the name is unknown until resolved.
    assert deps(snippet) == []
    assert deps(snippet, {**WORLD, "decide_while_parsing": True}) == [
        ("server", "r.Properties.p", "Resources.r.Properties.p.Fn::GetAtt")]


def test_dependencies_inside_getazs_and_findinmap_arguments() -> None:
    world = {**WORLD, "Mappings": {"m": {"srv-1": {"k": "v"}}}}
    assert [d[0] for d in deps({"p": {"Fn::GetAZs": {"Ref": "server"}},
                                "q": {"Fn::FindInMap": ["m", {"Ref": "volume"}, "k"]}}, world)] == [
        "server", "volume"]


def test_dep_attrs() -> None:
    parsed, _ = parse([{"Fn::GetAtt": ["server", "ip"]}, {"Fn::GetAtt": ["volume", "size"]},
                       {"Fn::Join": ["", [{"Fn::GetAtt": ["server", "name"]}]]}], WORLD)
    assert sorted(base.dep_attrs(parsed, "server")) == ["ip", "name"]
    assert list(base.dep_attrs(parsed, "volume")) == ["size"]
    assert list(base.dep_attrs(parsed, "other")) == []


def test_dep_attrs_of_a_computed_attribute_name() -> None:
    snippet = {"Fn::GetAtt": ["server", {"Ref": "attr_name"}]}
    parsed, _ = parse(snippet, WORLD)
    assert list(base.dep_attrs(parsed, "server")) == [base.ALL_ATTRIBUTES]
    parsed, _ = parse(snippet, {**WORLD, "decide_while_parsing": True})
    assert list(base.dep_attrs(parsed, "server")) == ["ip"]


# ---- Fn::If: decided while parsing when parsing has a resolver, else when resolved ----------------

IF_SNIPPET = {"Fn::If": ["is_test", {"Ref": "volume"}, {"Fn::GetAtt": ["server", "ip"]}]}


def test_if_without_a_resolver_keeps_both_branches() -> None:
    assert [d[0] for d in deps({"p": IF_SNIPPET})] == ["volume", "server"]
    assert deps({"p": IF_SNIPPET})[0][1] == "r.Properties.p.Fn::If"
    assert evaluate(IF_SNIPPET, WORLD) == "10.0.0.1"
    assert evaluate(IF_SNIPPET, {**WORLD, "conditions": {"is_test": True}}) == "vol-1"


def test_if_decided_while_parsing_keeps_only_the_branch_taken() -> None:
    world = {**WORLD, "decide_while_parsing": True}
    assert deps({"p": IF_SNIPPET}, world) == [
        ("server", "r.Properties.p.Fn::If", "Resources.r.Properties.p.Fn::If.Fn::GetAtt")]
    parsed, _ = parse(IF_SNIPPET, world)
    assert list(base.dep_attrs(parsed, "server")) == ["ip"]
    # The choice is made once, whatever the resolver says later.
    assert base.resolve(parsed, DictResolver({**WORLD, "conditions": {"is_test": True}})) == "10.0.0.1"


def test_if_decided_while_parsing_ignores_the_other_branch() -> None:
    snippet = {"Fn::If": [True, "kept", {"Fn::Join": "bad"}]}
    assert evaluate(snippet, {**WORLD, "decide_while_parsing": True}) == "kept"
    with pytest.raises(errors.StackValidationFailed) as caught:
        parse(snippet, WORLD)
    assert str(caught.value) == ('Outputs.o.Value.Fn::If.Fn::Join: Incorrect arguments to "Fn::Join" '
                                 'should be: "Fn::Join" : [ " ", [ "str1", "str2"]]')


def test_if_validates_its_live_branches() -> None:
    parsed, _ = parse({"v": IF_SNIPPET}, {**WORLD, "decide_while_parsing": True})
    base.validate(parsed, "Outputs.o.Value")


def test_or_stops_at_the_first_true_condition() -> None:
    resolver = DictResolver(WORLD)
    parsed = base.parse({"Fn::Or": ["is_prod", "is_test"]}, "c", context(WORLD).for_conditions())
    assert base.resolve(parsed, resolver) is True
    assert resolver.asked == ["is_prod"]


# ---- messages awkward in YAML -----------------------------------------------------------------


def test_member_list_to_map_wrong_arguments() -> None:
    with pytest.raises(errors.StackValidationFailed) as caught:
        parse({"Fn::MemberListToMap": ["Key", [".member.2.Key=metric"]]}, WORLD)
    assert str(caught.value) == (
        "Outputs.o.Value.Fn::MemberListToMap: Wrong Arguments try: \""
        "\n            {'Fn::MemberListToMap': ['Name', 'Value',"
        "\n                                     ['.member.0.Name=key',"
        "\n                                      '.member.0.Value=door']]}"
        "\n            \"")


def test_join_shows_at_most_200_characters_of_a_bad_item() -> None:
    item = ["x" * 10] * 30
    with pytest.raises(TypeError) as caught:
        evaluate({"Fn::Join": [",", [item]]}, WORLD)
    assert str(caught.value) == "Items to join must be strings not " + repr(item)[:200]


def test_replace_with_mixed_key_types_fails_in_the_sort() -> None:
    with pytest.raises(TypeError) as caught:
        evaluate({"Fn::Replace": [{1: "one", "a": "b"}, "1a"]}, WORLD)
    keys: list[Any] = [1, "a"]
    with pytest.raises(TypeError) as python:
        sorted(keys)
    assert str(caught.value) == str(python.value)


# ---- cfn_format -------------------------------------------------------------------------------


def test_format_sections_and_keys() -> None:
    assert cfn_format.SECTIONS == ("AWSTemplateFormatVersion", "HeatTemplateFormatVersion", "Description",
                                   "Mappings", "Parameters", "Resources", "Outputs", "Conditions")
    assert "Conditions" not in cfn_format.HEAT_SECTIONS
    assert cfn_format.RESOURCE_KEYS == ("Type", "Properties", "Metadata", "DependsOn", "DeletionPolicy",
                                        "UpdatePolicy", "Description", "Condition")
    assert "Condition" not in cfn_format.HEAT_RESOURCE_KEYS
    assert set(cfn_format.OUTPUT_KEYS) == {"Value", "Description", "Condition"}
    assert set(cfn_format.HEAT_OUTPUT_KEYS) == {"Value", "Description"}
    assert dict(cfn_format.DELETION_POLICIES) == {"Delete": "Delete", "Retain": "Retain",
                                                  "Snapshot": "Snapshot"}
    assert cfn_format.DEFAULT_REGION == "ap-southeast-1" and cfn_format.DEFAULT_REGION in cfn_format.REGIONS


@pytest.mark.parametrize(("section", "expected"), [(None, {}), ("", {}), ([], {}), ({"m": {}}, {"m": {}})])
def test_mappings_section(section: Any, expected: dict[str, Any]) -> None:
    assert dict(cfn_format.mappings_section({"Mappings": section})) == expected
    assert dict(cfn_format.mappings_section({})) == {}


@pytest.mark.parametrize(("section", "message"), [
    (["m"], "list indices must be integers or slices, not str"),
    ("mapping", "string indices must be integers, not 'str'"),
])
def test_a_mappings_section_that_is_no_map_fails_where_heat_fails(section: Any, message: str) -> None:
    with pytest.raises(TypeError) as caught:
        evaluate({"Fn::FindInMap": ["m", "k", "v"]}, {**WORLD, "Mappings": section})
    assert str(caught.value) == message
