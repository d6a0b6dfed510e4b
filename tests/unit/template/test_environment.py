"""Environment as Heat's: what it reads, stores, layers and passes to nested stacks."""

from __future__ import annotations

from typing import Any

import pytest

from libs.template.environment import Environment
from libs.template.errors import UnhandledPythonError
from libs.template.registry import ResourceRegistry
from services.api.faults import status_of

BUILTINS = frozenset({"OS::Heat::None", "OS::Nova::Server"})
EMPTY_STORED = {"resource_registry": {"resources": {}}, "parameters": {}, "parameter_defaults": {},
                "event_sinks": [], "encrypted_param_names": []}


def stored(**sections: Any) -> dict[str, Any]:
    return {**EMPTY_STORED, **sections}


# ---- reading and storing ---------------------------------------------------------------

@pytest.mark.parametrize(("env", "expected"), [
    (None, stored()),
    ({}, stored()),
    # old-style flat parameters
    ({"a": "ff", "b": "ss"}, stored(parameters={"a": "ff", "b": "ss"})),
    # ...where Heat forgot parameter_merge_strategies, which becomes a parameter
    ({"a": 1, "parameter_merge_strategies": {"default": "merge"}, "parameter_defaults": {"d": 2}},
     stored(parameters={"a": 1, "parameter_merge_strategies": {"default": "merge"}},
            parameter_defaults={"d": 2})),
    ({"parameters": {"a": "ff"}, "encrypted_param_names": ["a"], "parameter_defaults": {"ff": "x"},
      "event_sinks": [{"type": "zaqar-queue", "target": "q", "ttl": 60}],
      "resource_registry": {"OS::Food": "fruity.yaml", "resources": {}},
      "parameter_merge_strategies": {"a": "merge"}},
     {"resource_registry": {"resources": {}, "OS::Food": "fruity.yaml"}, "parameters": {"a": "ff"},
      "parameter_defaults": {"ff": "x"}, "event_sinks": [{"type": "zaqar-queue", "target": "q", "ttl": 60}],
      "encrypted_param_names": ["a"]}),
])
def test_from_dict_to_dict(env: dict[str, Any] | None, expected: dict[str, Any]) -> None:
    environment = Environment.from_dict(env)
    assert environment.to_dict() == expected
    user = dict(expected)
    del user["encrypted_param_names"]
    assert environment.user_dict() == user


def test_stored_shape_and_order() -> None:
    environment = Environment.from_dict({"parameters": {"a": 1},
                                         "parameter_merge_strategies": {"a": "merge"}})
    assert list(environment.to_dict()) == ["resource_registry", "parameters", "parameter_defaults",
                                           "event_sinks", "encrypted_param_names"]
    assert environment.parameter_merge_strategies == {"a": "merge"}


def test_input_is_not_shared() -> None:
    source: dict[str, Any] = {"parameters": {"a": [1]}, "parameter_defaults": {"b": {"c": 1}}}
    environment = Environment.from_dict(source)
    environment.to_dict()["parameters"]["a"].append(2)
    source["parameters"]["a"].append(3)
    assert environment.parameters == {"a": [1]}


# ---- event sinks: checked when the environment is built ----------------------------------------

@pytest.mark.parametrize(("sinks", "sink_types", "error_type", "status", "message"), [
    ([{"type": "zaqar-queue", "target": "q"}], None, None, 0, ""),
    ([{"type": "zaqar-queue", "target": "q", "ttl": 5}], {"zaqar-queue"}, None, 0, ""),
    ([{"type": "webhook", "target": "http://x", "secret": "s", "kinds": ["hook"]}],
     {"zaqar-queue", "webhook"}, None, 0, ""),
    ([{"type": "webhook", "target": "ftp://x"}], {"webhook"}, "ValueError", 400,
     "webhook event sink target must be an http(s) URL, not 'ftp://x'"),
    ([{"type": "webhook", "target": "http://x", "kinds": ["mail"]}], {"webhook"}, "ValueError", 400,
     "webhook event sink kinds must be a list of event, hook"),
    ([{"type": "anything", "at": "all"}], None, None, 0, ""),
    ({}, {"zaqar-queue"}, None, 0, ""),
    ([{"type": "webhook", "target": "http://x"}], {"zaqar-queue"}, "KeyError", 400, "'webhook'"),
    ([{"target": "q"}], {"zaqar-queue"}, "KeyError", 400, "'type'"),
    ([{"type": "zaqar-queue"}], {"zaqar-queue"}, "TypeError", 400,
     "ZaqarEventSink.__init__() missing 1 required positional argument: 'target'"),
    ([{"type": "zaqar-queue", "target": "q", "queue": "x"}], {"zaqar-queue"}, "TypeError", 400,
     "ZaqarEventSink.__init__() got an unexpected keyword argument 'queue'"),
    (["zaqar-queue"], {"zaqar-queue"}, "AttributeError", 400, "'str' object has no attribute 'copy'"),
    (5, {"zaqar-queue"}, "TypeError", 400, "'int' object is not iterable"),
])
def test_event_sinks(sinks: Any, sink_types: set[str] | None, error_type: str | None, status: int,
                     message: str) -> None:
    env = {"event_sinks": sinks}
    if error_type is None:
        kept = Environment.from_dict(env, event_sink_types=sink_types).event_sinks
        assert kept == list(sinks)
        return
    with pytest.raises(UnhandledPythonError) as info:
        Environment.from_dict(env, event_sink_types=sink_types)
    assert (info.value.error_type, status_of(info.value), str(info.value)) == (error_type, status, message)


def test_default_sink_types_are_heats_and_embers_webhook() -> None:
    with pytest.raises(UnhandledPythonError, match="'mqtt'"):
        Environment.from_dict({"event_sinks": [{"type": "mqtt"}]})
    sinks = Environment.from_dict({"event_sinks": [{"type": "webhook", "target": "https://h/x"}]}).event_sinks
    assert sinks == [{"type": "webhook", "target": "https://h/x"}]


# ---- layering (PATCH) ----------------------------------------------------------------------

def test_with_layer() -> None:
    existing = Environment.from_dict({
        "parameters": {"a": 1, "b": 2}, "parameter_defaults": {"d": 1},
        "resource_registry": {"OS::A": "a.yaml", "OS::B": "b.yaml",
                              "resources": {"r": {"hooks": "pre-create"}}},
        "encrypted_param_names": ["a"], "event_sinks": [{"type": "zaqar-queue", "target": "one"}],
    }, builtin_types=BUILTINS)
    layered = existing.with_layer({
        "parameters": {"b": 3, "c": 4}, "parameter_defaults": {"e": 2},
        "resource_registry": {"OS::A": None, "resources": {"r": {"hooks": None}}},
        "encrypted_param_names": ["zzz"], "event_sinks": [{"type": "zaqar-queue", "target": "two"}],
    })
    assert layered.to_dict() == {
        "resource_registry": {"resources": {"r": {}}, "OS::B": "b.yaml"},
        "parameters": {"a": 1, "b": 3, "c": 4},
        "parameter_defaults": {"d": 1, "e": 2},
        "event_sinks": [{"type": "zaqar-queue", "target": "one"}, {"type": "zaqar-queue", "target": "two"}],
        "encrypted_param_names": ["a"],
    }
    assert layered.registry.builtin_types == BUILTINS
    assert existing.parameters == {"a": 1, "b": 2}
    assert existing.registry.to_dict()["OS::A"] == "a.yaml"


# ---- nested stacks -------------------------------------------------------------------------

@pytest.mark.parametrize(("parent", "child_params", "expected"), [
    # a template resource's properties arrive flat and become the parameters
    ({}, {"foo": "bar", "tester": "Yes"}, stored(parameters={"foo": "bar", "tester": "Yes"})),
    ({}, {"parameters": {"foo": "bar"}}, stored(parameters={"foo": "bar"})),
    ({"parameters": {"gone": "hopefully"}}, {"parameters": {"foo": "bar"}},
     stored(parameters={"foo": "bar"})),
    ({"parameters": {"gone": "hopefully"}}, None, stored()),
    # one property named like a section makes Heat read them all as an environment
    ({}, {"event_sinks": [], "size": 3}, stored()),
    # parameter_defaults and event sinks pass down; encrypted_param_names do not
    ({"parameter_defaults": {"d": 1}, "encrypted_param_names": ["p"],
      "event_sinks": [{"type": "zaqar-queue", "target": "q"}]}, {"p": 1},
     stored(parameters={"p": 1}, parameter_defaults={"d": 1},
            event_sinks=[{"type": "zaqar-queue", "target": "q"}])),
    ({"parameter_defaults": {"d": 1}}, {"parameter_defaults": {"d": 2, "e": 3}},
     stored(parameter_defaults={"d": 2, "e": 3})),
    # the registry merges, the child's entries winning
    ({"resource_registry": {"OS::Food": "fruity.yaml"}}, {"resource_registry": {"OS::Fruit": "apples.yaml"}},
     stored(resource_registry={"resources": {}, "OS::Food": "fruity.yaml", "OS::Fruit": "apples.yaml"})),
    ({"resource_registry": {"OS::Food": "carrots.yaml"}}, {"resource_registry": {"OS::Food": "apples.yaml"}},
     stored(resource_registry={"resources": {}, "OS::Food": "apples.yaml"})),
    # resources are trimmed to what is under the parent's name
    ({"resource_registry": {"resources": {"nested": {"inner": {"hooks": "pre-delete"}},
                                          "other": {"hooks": "pre-create"}}}}, None,
     stored(resource_registry={"resources": {"inner": {"hooks": "pre-delete"}}})),
])
def test_child_environment(parent: dict[str, Any], child_params: dict[str, Any] | None,
                           expected: dict[str, Any]) -> None:
    child = Environment.from_dict(parent).child_environment("nested", child_params)
    assert child.to_dict() == expected


def test_child_environment_drops_the_parents_template() -> None:
    parent = Environment.from_dict({"resource_registry": {"OS::Nova::Server": "server.yaml"},
                                    "parameter_defaults": {"flavor": "m1"}}, builtin_types=BUILTINS)
    resolved = parent.registry.resolve("srv", "OS::Nova::Server")
    assert resolved is not None
    child = parent.child_environment("srv", {"image": "x"}, remove=resolved)
    assert child.to_dict() == stored(parameters={"image": "x"}, parameter_defaults={"flavor": "m1"})
    inner = child.registry.resolve("server", "OS::Nova::Server")
    assert inner is not None and inner.kind == "builtin"
    assert parent.registry.resolve("srv", "OS::Nova::Server") == resolved


def test_child_environment_keeps_sink_types() -> None:
    parent = Environment.from_dict({"event_sinks": [{"type": "custom", "url": "u"}]},
                                   event_sink_types={"custom"})
    child = parent.child_environment("n", {})
    assert child.event_sinks == [{"type": "custom", "url": "u"}]
    assert child.event_sink_types == frozenset({"custom"})


def test_equal_environments() -> None:
    env = {"parameters": {"a": 1}, "resource_registry": {"OS::A": "a.yaml"}}
    assert Environment.from_dict(env) == Environment.from_dict(env)
    assert Environment.from_dict(env) != Environment.from_dict({**env, "parameters": {}})
    assert Environment().registry == ResourceRegistry()
