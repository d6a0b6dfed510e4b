"""resource_registry semantics as Heat's ResourceRegistry: types, hooks, restrictions, nesting."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from libs.template import loader
from libs.template.errors import (
    InvalidBreakPointHook,
    InvalidRestrictedAction,
    StackValidationFailed,
    UnhandledPythonError,
)
from libs.template.registry import HOOK_TYPES, ResolvedType, ResourceRegistry
from services.api.faults import status_of

FIXTURES = Path(__file__).parent / "fixtures" / "environments"
BUILTINS = frozenset({"OS::Heat::None", "OS::Heat::RandomString", "OS::Nova::Server",
                      "OS::Neutron::Net", "OS::Neutron::Port"})

Expected = tuple[str, str, str | None] | None


def fixture_registry() -> ResourceRegistry:
    env = loader.parse_environment((FIXTURES / "registry.yaml").read_text())
    return ResourceRegistry.from_dict(env["resource_registry"], BUILTINS)


def summary(found: ResolvedType | None) -> Expected:
    return None if found is None else (found.kind, found.type_name, found.template)


# ---- type resolution ---------------------------------------------------------------

@pytest.mark.parametrize(("resource", "type_name", "expected"), [
    ("x", "OS::Heat::None", ("builtin", "OS::Heat::None", None)),
    ("x", "OS::Unknown", None),
    # aliases, chained; a dead alias is not found
    ("x", "OS::Networking::Net", ("builtin", "OS::Neutron::Net", None)),
    ("x", "My::Chain::A", ("builtin", "OS::Heat::RandomString", None)),
    ("x", "My::Broken", None),
    # wildcards: the matched prefix is swapped, or everything maps to one type
    ("x", "OSX::Net::Port", ("builtin", "OS::Neutron::Port", None)),
    ("x", "OSX::Network", None),
    ("x", "Noop::Anything::At::All", ("builtin", "OS::Heat::None", None)),
    # provider templates: the value's suffix decides; a URL without one is a type name
    ("x", "My::Server", ("template", "My::Server", "servers/server.yaml")),
    ("x", "Legacy::Server", ("template", "Legacy::Server", "https://example.org/server.template")),
    ("x", "My::Remote", None),
    # a key that is a template name is that template, whatever its value
    ("x", "lib/thing.yaml", ("template", "lib/thing.yaml", "lib/thing.yaml")),
    # a template name used directly as a type needs no entry
    ("x", "other/direct.yaml", ("template", "other/direct.yaml", "other/direct.yaml")),
    ("x", "old.template", ("template", "old.template", "old.template")),
    # per-resource overrides match the name exactly, never as a pattern
    ("db", "OS::Nova::Server", ("template", "OS::Nova::Server", "db_server.yaml")),
    ("db2", "OS::Nova::Server", ("builtin", "OS::Nova::Server", None)),
    ("web_1", "OS::Nova::Server", ("builtin", "OS::Nova::Server", None)),
    ("web_*", "OS::Nova::Server", ("template", "OS::Nova::Server", "not_for_patterns.yaml")),
    (None, "OS::Nova::Server", ("builtin", "OS::Nova::Server", None)),
])
def test_resolve_against_fixture(resource: str | None, type_name: str, expected: Expected) -> None:
    assert summary(fixture_registry().resolve(resource, type_name)) == expected


@pytest.mark.parametrize(("registry", "resource", "type_name", "expected"), [
    # Heat tries same-length paths in lexical order and "*" sorts before letters,
    # so a wildcard beats an exact entry it shares a prefix with...
    ({"OS::*": "OS::Heat::None", "OS::Nova::Server": "my.yaml"}, "r", "OS::Nova::Server",
     ("builtin", "OS::Heat::None", None)),
    # ...unless the exact key is a prefix of the wildcard's
    ({"OS::Nova::Server*": "OS::Heat::None", "OS::Nova::Server": "my.yaml"}, "r", "OS::Nova::Server",
     ("template", "OS::Nova::Server", "my.yaml")),
    # an alias that leads nowhere lets the next candidate answer
    ({"OS::*": "Missing::*", "OS::Nova::Server": "my.yaml"}, "r", "OS::Nova::Server",
     ("template", "OS::Nova::Server", "my.yaml")),
    ({"resources": {"r": {"OS::A": "Missing::T"}}, "OS::A": "a.yaml"}, "r", "OS::A",
     ("template", "OS::A", "a.yaml")),
    # a per-resource override beats everything else
    ({"OS::A": "a.yaml", "resources": {"r": {"OS::A": "OS::Heat::None"}}}, "r", "OS::A",
     ("builtin", "OS::Heat::None", None)),
    ({"OS::A": "a.yaml", "resources": {"r": {"OS::A": "OS::Heat::None"}}}, "s", "OS::A",
     ("template", "OS::A", "a.yaml")),
    # many-to-one wildcards do not apply to their own target
    ({"OS::*": "OS::Heat::None"}, "r", "OS::Heat::None", ("builtin", "OS::Heat::None", None)),
    ({"OS::*": "OS::Heat::None"}, "r", "OS::Some::Name", ("builtin", "OS::Heat::None", None)),
    # a builtin can be replaced by a template, and an alias can lead to one
    ({"OS::Heat::None": "none.yaml"}, "r", "OS::Heat::None", ("template", "OS::Heat::None", "none.yaml")),
    ({"OS::X": "OS::Y", "OS::Y": "y.yaml"}, "r", "OS::X", ("template", "OS::Y", "y.yaml")),
    # a wildcard can build a template name
    ({"Tmpl::*": "tmpl/*"}, "r", "Tmpl::x.yaml", ("template", "tmpl/x.yaml", "tmpl/x.yaml")),
    # a wildcard key with a template value never matches anything
    ({"My::*": "lib.yaml"}, "r", "My::X", None),
    # null cannot remove a builtin from a user environment
    ({"OS::Heat::None": None, "OS::*": None}, "r", "OS::Heat::None", ("builtin", "OS::Heat::None", None)),
])
def test_resolve_order(registry: dict[str, Any], resource: str, type_name: str, expected: Expected) -> None:
    assert summary(ResourceRegistry.from_dict(registry, BUILTINS).resolve(resource, type_name)) == expected


@pytest.mark.parametrize(("registry", "type_name"), [
    ({"A": "B", "B": "A"}, "A"),
    ({"A": "A"}, "A"),
    ({"OS::Heat::None": "OS::Heat::None"}, "OS::Heat::None"),
    ({"OS::*": "OS::Heat::*"}, "OS::Nova::Server"),       # grows forever
])
def test_alias_loops_fail_as_heat_does(registry: dict[str, str], type_name: str) -> None:
    with pytest.raises(UnhandledPythonError) as info:
        ResourceRegistry.from_dict(registry, BUILTINS).resolve("r", type_name)
    # Heat answers 500 (its RecursionError escapes); no environment may give a 5xx in Ember.
    assert (info.value.error_type, status_of(info.value)) == ("RecursionError", 400)


def test_ignore_finds_the_facade_behind_a_template() -> None:
    registry = ResourceRegistry.from_dict({"OS::Nova::Server": "my.yaml", "OS::X": "x.yaml"}, BUILTINS)
    template = registry.resolve("srv", "OS::Nova::Server")
    assert template is not None and template.is_template
    assert summary(registry.resolve("srv", "OS::Nova::Server", ignore=template)) == (
        "builtin", "OS::Nova::Server", None)
    other = registry.resolve("x", "OS::X")
    assert registry.resolve("x", "OS::X", ignore=other) is None


def test_template_types_used_directly_are_recorded() -> None:
    # Heat registers them while resolving, then stores and shows them.
    registry = ResourceRegistry.from_dict({}, BUILTINS)
    registry.resolve("r", "nested.yaml")
    assert registry.to_dict() == {"resources": {}, "nested.yaml": "nested.yaml"}


@pytest.mark.parametrize(("type_name", "message"), [
    ("", 'Resource "r" has no type'),
    (None, 'Non-empty resource type is required for resource "r"'),
    (5, 'Resource "r" type is not a string'),
    ("OS::Nope", "The Resource Type (OS::Nope) could not be found."),
])
def test_check_type_messages(type_name: object, message: str) -> None:
    with pytest.raises(StackValidationFailed) as info:
        ResourceRegistry.from_dict({}, BUILTINS).check_type("r", type_name)
    assert str(info.value) == message


# ---- loading, null removal, what Heat stores --------------------------------------------

@pytest.mark.parametrize(("layers", "expected"), [
    ([{}], {"resources": {}}),
    ([{"OS::Food": "fruity.yaml"}], {"resources": {}, "OS::Food": "fruity.yaml"}),
    ([{"lib/a.yaml": "whatever"}], {"resources": {}, "lib/a.yaml": "lib/a.yaml"}),
    ([{"resources": {0: {"hooks": "pre-create"}, True: {"hooks": []}, "empty": {}}}],
     {"resources": {"0": {"hooks": "pre-create"}, "true": {"hooks": []}}}),
    # null removes a mapping; "Prefix*": null every mapping with the prefix at that level
    ([{"OS::A": "a.yaml", "OS::B": "OS::Heat::None"}, {"OS::A": None}],
     {"resources": {}, "OS::B": "OS::Heat::None"}),
    ([{"OS::A": "a.yaml", "OS::B": "b.yaml", "X::C": "c.yaml", "resources": {"OS::r": {"hooks": []}}},
      {"OS::*": None}],
     {"resources": {"OS::r": {"hooks": []}}, "X::C": "c.yaml"}),
    # within one map the order of keys decides
    ([{"OS::A": "a.yaml", "OS::*": None}], {"resources": {}}),
    ([{"OS::*": None, "OS::A": "a.yaml"}], {"resources": {}, "OS::A": "a.yaml"}),
    # removing creates the enclosing maps, and they show
    ([{"resources": {"x": {"OS::Y": None}}}], {"resources": {"x": {}}}),
    ([{"resources": {"x": {"hooks": "pre-create", "OS::Y": "y.yaml"}}},
      {"resources": {"x": {"hooks": None}}}],
     {"resources": {"x": {"OS::Y": "y.yaml"}}}),
    ([{"resources": {"x": {"hooks": "pre-create"}, "y": {"hooks": "pre-update"}}},
      {"resources": {"x": None}}],
     {"resources": {"y": {"hooks": "pre-update"}}}),
])
def test_layers_to_dict(layers: list[dict[Any, Any]], expected: dict[str, Any]) -> None:
    registry = ResourceRegistry(BUILTINS)
    for layer in layers:
        registry = registry.load(layer)
    assert registry.to_dict() == expected


def test_load_returns_a_new_registry() -> None:
    first = ResourceRegistry.from_dict({"OS::A": "a.yaml"})
    second = first.load({"OS::A": None})
    assert first.to_dict() == {"resources": {}, "OS::A": "a.yaml"}
    assert second.to_dict() == {"resources": {}}
    assert first == ResourceRegistry.from_dict({"OS::A": "a.yaml"})


@pytest.mark.parametrize(("registry", "error_type", "status", "message"), [
    ({"OS::X": 5}, "AttributeError", 400, "'int' object has no attribute 'support_status'"),
    ({"resources": {"r": {"OS::X": ["a.yaml"]}}}, "AttributeError", 400,
     "'list' object has no attribute 'support_status'"),
    ([{"OS::X": "x.yaml"}], "AttributeError", 400, "'list' object has no attribute 'items'"),
    ({"resources": None}, "KeyError", 400, "'resources'"),
    ({"resources": "r.yaml"}, "AttributeError", 400, "'TemplateResourceInfo' object has no attribute 'get'"),
])
def test_bad_values_fail_as_heat_does(registry: Any, error_type: str, status: int, message: str) -> None:
    with pytest.raises(UnhandledPythonError) as info:
        ResourceRegistry.from_dict(registry)
    assert (info.value.error_type, status_of(info.value), str(info.value)) == (error_type, status, message)


# ---- hooks and restricted actions ----------------------------------------------------------

@pytest.mark.parametrize(("resource", "hooks", "restricted"), [
    ("db", {"pre-create", "pre-update"}, {"update"}),
    ("web_1", {"pre-delete"}, {"replace", "update"}),
    ("web_", {"pre-delete"}, {"replace", "update"}),
    ("xweb_1", set(), {"update"}),
    ("nested", set(), {"update"}),
    ("inner", set(), {"update"}),     # nested paths only apply inside the nested stack
])
def test_settings_from_fixture(resource: str, hooks: set[str], restricted: set[str]) -> None:
    registry = fixture_registry()
    assert registry.hooks_for(resource) == hooks
    assert registry.restricted_actions(resource) == restricted
    for hook in HOOK_TYPES:
        assert registry.matches_hook(resource, hook) == (hook in hooks)


@pytest.mark.parametrize("hook", HOOK_TYPES)
def test_hook_matching(hook: str) -> None:
    other = next(h for h in HOOK_TYPES if h != hook)
    registry = ResourceRegistry.from_dict({"OS::Fruit": "apples.yaml", "resources": {
        "a": {"OS::Fruit": "apples.yaml", "hooks": [hook, other]},
        "b": {"OS::Food": "fruity.yaml"},
        "nested": {"res": {"hooks": hook}},
        "prefix_*": {"hooks": hook},
        "*_suffix": {"hooks": hook},
        "not-hook": {"hooks": [h for h in HOOK_TYPES if h != hook]},
        "all": {"hooks": list(HOOK_TYPES)},
        "?ingle": {"hooks": hook},
    }})
    table = {"a": True, "b": False, "OS::Fruit": False, "res": False, "unknown": False,
             "prefix_": True, "prefix_some": True, "some_prefix": False,
             "_suffix": True, "some_suffix": True, "_suffix_blah": False,
             "not-hook": False, "all": True, "single": True, "ssingle": False}
    assert {name: registry.matches_hook(name, hook) for name in table} == table


@pytest.mark.parametrize(("registry", "error", "message"), [
    ({"resources": {"a": {"hooks": "invalid-type"}}}, InvalidBreakPointHook,
     "Invalid hook type \"invalid-type\" for resource breakpoint, acceptable hook types are: "
     "('pre-create', 'pre-update', 'pre-delete', 'post-create', 'post-update', 'post-delete')"),
    ({"resources": {"a": {"hooks": ["pre-create", "bad"]}}}, InvalidBreakPointHook,
     "Invalid hook type \"['pre-create', 'bad']\" for resource breakpoint, acceptable hook types are: "
     "('pre-create', 'pre-update', 'pre-delete', 'post-create', 'post-update', 'post-delete')"),
    ({"resources": {"a": {"b": {"hooks": {"pre-create": True}}}}}, InvalidBreakPointHook,
     "Invalid hook type \"{'pre-create': True}\" for resource breakpoint, acceptable hook types are: "
     "('pre-create', 'pre-update', 'pre-delete', 'post-create', 'post-update', 'post-delete')"),
    ({"hooks": True}, InvalidBreakPointHook,
     "Invalid hook type \"True\" for resource breakpoint, acceptable hook types are: "
     "('pre-create', 'pre-update', 'pre-delete', 'post-create', 'post-update', 'post-delete')"),
    ({"resources": {"a": {"restricted_actions": "delete"}}}, InvalidRestrictedAction,
     "Invalid restricted_action type \"delete\" for resource, acceptable restricted_action types are: "
     "('update', 'replace')"),
    ({"resources": {"a": {"restricted_actions": ["update", 1]}}}, InvalidRestrictedAction,
     "Invalid restricted_action type \"['update', 1]\" for resource, acceptable restricted_action "
     "types are: ('update', 'replace')"),
])
def test_invalid_settings(registry: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        ResourceRegistry.from_dict(registry)
    assert str(info.value) == message


def test_empty_hook_list_is_valid() -> None:
    assert ResourceRegistry.from_dict({"resources": {"a": {"hooks": []}}}).hooks_for("a") == set()


# ---- nested stacks -------------------------------------------------------------------------

DRILL_DOWN = {
    "OS::Food": "fruity.yaml",
    "resources": {
        "a": {"OS::Fruit": "apples.yaml", "hooks": "pre-create"},
        "nested": {"b": {"OS::Fruit": "carrots.yaml"}, "nested_res": {"hooks": "pre-create"}},
        "*_doesnt_match_nested": {"other_res": {"hooks": "pre-create"}},
        "nest*": {"wild_res": {"hooks": "pre-update"}},
    },
}

PREFER_EXACT = {"resources": {
    "*esource": {"hooks": "pre-create"},
    "res*": {"hooks": "pre-create"},
    "resource": {"OS::Fruit": "carrots.yaml", "hooks": "pre-update"},
    "resource*": {"hooks": "pre-create"},
    "*resource": {"hooks": "pre-create"},
    "*sour*": {"hooks": "pre-create"},
}}


@pytest.mark.parametrize(("registry", "parent", "expected_resources"), [
    (DRILL_DOWN, "nested", {"b": {"OS::Fruit": "carrots.yaml"}, "nested_res": {"hooks": "pre-create"},
                            "wild_res": {"hooks": "pre-update"}}),
    (DRILL_DOWN, "a", {"OS::Fruit": "apples.yaml", "hooks": "pre-create"}),
    (DRILL_DOWN, "unrelated", {}),
    # the exact key is merged last, so it wins over every pattern
    (PREFER_EXACT, "resource", {"hooks": "pre-update", "OS::Fruit": "carrots.yaml"}),
    # ResourceGroup members are "0", "1", ...
    ({"resources": {"grp": {"0": {"hooks": "pre-create"}, "1*": {"hooks": "pre-delete"}}}}, "grp",
     {"0": {"hooks": "pre-create"}, "1*": {"hooks": "pre-delete"}}),
])
def test_child_resources(registry: dict[str, Any], parent: str, expected_resources: dict[str, Any]) -> None:
    child = ResourceRegistry.from_dict(registry, BUILTINS).child_registry(parent)
    assert child.to_dict()["resources"] == expected_resources


def test_child_keeps_type_mappings_and_drills_down() -> None:
    parent = ResourceRegistry.from_dict(DRILL_DOWN, BUILTINS)
    child = parent.child_registry("nested")
    assert summary(child.resolve("abc", "OS::Food")) == ("template", "OS::Food", "fruity.yaml")
    assert child.resolve("a", "OS::Fruit") is None
    assert summary(child.resolve("b", "OS::Fruit")) == ("template", "OS::Fruit", "carrots.yaml")
    assert child.hooks_for("nested_res") == {"pre-create"}
    assert child.builtin_types == BUILTINS
    assert parent == ResourceRegistry.from_dict(DRILL_DOWN, BUILTINS)


def test_wildcard_hooks_do_not_reach_children() -> None:
    # "*" matches the parent, so its *content* becomes the child's resources map:
    # the hooks of a child resource literally called "hooks".
    child = ResourceRegistry.from_dict({"resources": {"*": {"hooks": "pre-create"}}}).child_registry("grp")
    assert child.to_dict()["resources"] == {"hooks": "pre-create"}
    assert child.hooks_for("0") == set()


def test_heatclient_nested_hook_paths() -> None:
    # The shape heatclient's hooks_to_env sends for --pre-create server,
    # --pre-update group/0 and --pre-create nested/deeper/leaf.
    env = loader.parse_environment((FIXTURES / "heatclient_hooks.json").read_text())
    top = ResourceRegistry.from_dict(env["resource_registry"], BUILTINS)
    assert top.hooks_for("server") == {"pre-create"}
    assert top.child_registry("group").hooks_for("0") == {"pre-update"}
    leaf = top.child_registry("nested").child_registry("deeper")
    assert leaf.hooks_for("leaf") == {"pre-create"}
    assert top.hooks_for("leaf") == set() and top.child_registry("nested").hooks_for("leaf") == set()
    assert json.loads((FIXTURES / "heatclient_hooks.json").read_text()) == env


@pytest.mark.parametrize(("registry", "resource", "type_name", "expected_in_child"), [
    # the parent's own template is taken out, so inside it the type is the builtin again
    ({"OS::Nova::Server": "server.yaml"}, "srv", "OS::Nova::Server", ("builtin", "OS::Nova::Server", None)),
    # the most specific entry is the one removed; the general one remains
    ({"OS::Food": "fruity.yaml", "resources": {"abc": {"OS::Food": "nutty.yaml"}}}, "abc", "OS::Food",
     ("template", "OS::Food", "fruity.yaml")),
    # a template type used directly is removed too
    ({}, "n", "nested.yaml", ("template", "nested.yaml", "nested.yaml")),
])
def test_child_without_the_parents_template(registry: dict[str, Any], resource: str, type_name: str,
                                            expected_in_child: Expected) -> None:
    parent = ResourceRegistry.from_dict(registry, BUILTINS)
    resolved = parent.resolve(resource, type_name)
    assert resolved is not None and resolved.is_template
    child = parent.child_registry(resource, remove=resolved)
    general = None if len(resolved.path) == 1 else parent.to_dict()[type_name]
    assert child.to_dict().get(type_name) == general
    # in the child, the same name resolves afresh (a direct template name re-registers)
    assert summary(child.resolve(resource, type_name)) == expected_in_child
    assert parent.resolve(resource, type_name) == resolved


def test_removing_a_builtin_is_a_no_op() -> None:
    parent = ResourceRegistry.from_dict({"OS::X": "OS::Heat::None"}, BUILTINS)
    resolved = parent.resolve("r", "OS::X")
    assert resolved is not None
    assert parent.child_registry("r", remove=resolved).to_dict() == parent.to_dict()
