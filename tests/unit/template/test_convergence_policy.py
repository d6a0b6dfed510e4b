"""The environment's ``convergence`` section: parsed into policy, or refused naming the bad part."""

from __future__ import annotations

from typing import Any

import pytest

from libs.template import loader
from libs.template.convergence import (
    ConvergencePolicy,
    DriftPolicy,
    FieldPolicy,
    ResourcePolicy,
    parse,
)
from libs.template.environment import Environment, merge_environments
from libs.template.errors import InvalidEnvironment

HEAL, OBSERVE = DriftPolicy.HEAL, DriftPolicy.OBSERVE


@pytest.mark.parametrize(("section", "expected"), [
    (None, ConvergencePolicy(OBSERVE)),
    ({}, ConvergencePolicy(OBSERVE)),
    ({"policy": "heal"}, ConvergencePolicy(HEAL)),
    ({"interval": 30}, ConvergencePolicy(OBSERVE, interval=30.0)),
    ({"policy": "heal", "interval": 2.5}, ConvergencePolicy(HEAL, interval=2.5)),
    ({"policy": "heal", "resources": {"db": {"policy": "observe"}}},
     ConvergencePolicy(HEAL, (("db", ResourcePolicy(OBSERVE)),))),
    # A resource without its own policy takes the section's.
    ({"policy": "heal", "resources": {"web*": {"fields": {"name": "ignore", "metadata": "accept"}}}},
     ConvergencePolicy(HEAL, (("web*", ResourcePolicy(HEAL, {"name": FieldPolicy.IGNORE,
                                                              "metadata": FieldPolicy.ACCEPT})),))),
])
def test_parse(section: Any, expected: ConvergencePolicy) -> None:
    assert parse(section) == expected


def test_the_installations_default_stands_where_the_section_names_no_policy() -> None:
    assert parse(None, HEAL) == ConvergencePolicy(HEAL)
    assert parse({"resources": {"a": {}}}, HEAL).for_resource("a") == ResourcePolicy(HEAL)


@pytest.mark.parametrize(("section", "message"), [
    ("heal", "convergence: expected a map, got str"),
    ({"policy": "fix"}, "convergence.policy: 'fix' is not one of observe, heal"),
    ({"every": 5}, "convergence: unknown key 'every' (expected policy, interval, resources)"),
    ({"interval": 0.5}, "convergence.interval: 0.5 is not a number of seconds of at least 1"),
    ({"interval": "30"}, "convergence.interval: '30' is not a number of seconds of at least 1"),
    ({"interval": True}, "convergence.interval: True is not a number of seconds of at least 1"),
    ({"resources": ["web"]}, "convergence.resources: expected a map of resource names"),
    ({"resources": {"web": "heal"}}, "convergence.resources.web: expected a map with policy and/or fields"),
    ({"resources": {"web": {"policy": "maybe"}}}, "convergence.resources.web.policy: 'maybe' is not one of"
     " observe, heal"),
    ({"resources": {"web": {"fields": {"name": "keep"}}}},
     "convergence.resources.web.fields.name: 'keep' is not one of revert, accept, ignore"),
    ({"resources": {"web": {"fields": ["name"]}}}, "convergence.resources.web.fields: expected a map"
     " of property names"),
])
def test_a_bad_section_is_refused_naming_where(section: Any, message: str) -> None:
    with pytest.raises(InvalidEnvironment) as caught:
        loader.validate_environment({"convergence": section})
    assert caught.value.message == message


@pytest.mark.parametrize(("name", "expected"), [
    ("db", ResourcePolicy(OBSERVE)),            # the exact name wins over an earlier pattern
    ("web-1", ResourcePolicy(HEAL, {"name": FieldPolicy.IGNORE})),
    ("cache", ResourcePolicy(HEAL)),            # no entry: the section's policy
])
def test_for_resource(name: str, expected: ResourcePolicy) -> None:
    policy = parse({"policy": "heal", "resources": {
        "d*": {"policy": "heal"}, "db": {"policy": "observe"}, "web-*": {"fields": {"name": "ignore"}}}})
    assert policy.for_resource(name) == expected
    assert expected.field("flavor") == FieldPolicy.REVERT


def test_the_section_is_kept_layered_and_passed_down_only_where_given() -> None:
    plain = Environment.from_dict({"parameters": {}})
    assert "convergence" not in plain.to_dict()  # Heat's answers stay Heat's
    env = Environment.from_dict({"convergence": {"policy": "heal",
                                                 "resources": {"a": {"policy": "observe"}}}})
    layered = env.with_layer({"convergence": {"resources": {"b": {"policy": "heal"}}}})
    assert layered.to_dict()["convergence"] == {
        "policy": "heal", "resources": {"a": {"policy": "observe"}, "b": {"policy": "heal"}}}
    assert env.child_environment("nested").to_dict()["convergence"] == env.convergence


def test_environment_files_merge_the_section() -> None:
    files = {"a.yaml": "convergence: {policy: heal}",
             "b.yaml": "convergence: {resources: {x: {policy: observe}}}"}
    merged = merge_environments(["a.yaml", "b.yaml"], files, {})
    assert merged["convergence"] == {"policy": "heal", "resources": {"x": {"policy": "observe"}}}
