"""What groups and template resources answer to ``get_attr``, as Heat's do, end to end in memory.

A nested stack settles (its outputs, and the nested resources the parent reads:
of the child's rows, only those and only as much of them as the type's
``nested_reads`` asks for, as ``resources.nested_read`` reads them), the
resource keeps what it completes with (:meth:`ResourceType.stored_attributes`
over the template's reads), and the parent's outputs resolve over that, as the
worker and ``stack_end`` do it. The values are Heat 27.0.1's answers (the same
ones the ``groups/*`` parity cases recorded).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson
import pytest

from libs.engine.status import Action
from libs.resources.autoscaling import NAMES_KEY, AutoScalingGroup
from libs.resources.base import ResourceType
from libs.resources.deployment_group import SoftwareDeploymentGroup
from libs.resources.nested import NestedStackType, TemplateResource, unanswered
from libs.resources.resource_group import ResourceGroup
from libs.resources.steps import ChildStack, Done, NestedReads
from libs.template.attribute_store import (
    AttributeFailed,
    failure,
    read,
    read_all,
    read_key,
    shown,
    stored,
    with_reads,
)
from libs.template.parameters import Parameters
from libs.template.request import parameter_schemas
from libs.template.resolution import StackResolver, StaticResourceData
from libs.template.stack import StackDefinition
from libs.template.template import Template
from tests.unit.resources.resource_support import make_ctx

CHILD_ID = "0b7b0c6e-8f57-4a4f-9d45-2d7f3c1b1e01"


def _definition(resource_type: str, outputs: dict[str, Any]) -> StackDefinition:
    template = Template({"heat_template_version": "2016-10-14",
                        "resources": {"res": {"type": resource_type}},
                        "outputs": {k: {"value": v} for k, v in outputs.items()}})
    params = Parameters(parameter_schemas(template), dialect="hot", stack_name="st", stack_id="sid",
                        project_id="demo")
    return StackDefinition(template, params)


def _outputs(plugin: NestedStackType, child: ChildStack, outputs: dict[str, Any],
             resource_type: str = "OS::Heat::ResourceGroup", data: dict[str, str] | None = None
             ) -> dict[str, dict[str, Any]]:
    """The parent's outputs once ``plugin``'s resource completed over ``child``."""
    definition = _definition(resource_type, outputs)
    child = _read(plugin, child, definition)
    ctx = dataclasses.replace(make_ctx({}, resource_name="res", data=data, physical_id=child.id), child=child)
    done = plugin.check(Action.CREATE, ctx)
    assert isinstance(done, Done), done
    kept_data = {**(data or {}), **{k: v for k, v in done.data.items() if v is not None}}
    kept = plugin.stored_attributes(definition.attribute_reads.get("res", frozenset()), child.id,
                                    kept_data, {}, resource_name="res")
    reference = plugin.reference_id(child.id, kept_data, resource_name="res")
    resolver = StackResolver(definition, StaticResourceData({"res": reference}, {"res": kept}))
    return {o["output_key"]: o for o in resolver.outputs()}


def _read(plugin: NestedStackType, child: ChildStack, definition: StackDefinition) -> ChildStack:
    """``child`` as the worker gives it: of its rows (``child.resources``), what the reads ask for."""
    reads = plugin.nested_reads(definition.attribute_reads.get("res", frozenset()),
                                whole="res" in definition.whole_reads)
    rows = child.resources
    found = {name: rows[name] for name in reads.names if name in rows}
    if reads.every:
        found = {**{name: (ref, {k: v for k, v in kept.items() if k in reads.attributes})
                    for name, (ref, kept) in rows.items()}, **found}
    return dataclasses.replace(child, resources=found, every=reads.every, whole=reads.whole, size=len(rows))


def _values(outputs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {k: {"error": o["output_error"]} if "output_error" in o else o["output_value"]
            for k, o in outputs.items()}


def _group_child(names: list[str]) -> ChildStack:
    """A group's nested stack: its member rows (reference, attributes) and no outputs."""
    return ChildStack(id=CHILD_ID, name="st-res-abc", action="CREATE", status="COMPLETE", status_reason="",
                      project="demo",
                      resources={n: (f"ref-{n}", {"value": f"v{n}", "other": n}) for n in names})


def test_a_resource_group_answers_member_attributes_in_index_order() -> None:
    got = _values(_outputs(ResourceGroup(), _group_child(["0", "1", "2"]), {
        "values": {"get_attr": ["res", "value"]},
        "each_item": {"get_attr": ["res", "value", 1]},
        "member_ref": {"get_attr": ["res", "resource.1"]},
        "member_value": {"get_attr": ["res", "resource.1.value"]},
        "member_value_path": {"get_attr": ["res", "resource.1", "value"]},
        "member_value_item": {"get_attr": ["res", "resource.2.value", 0]},
        "by_name": {"get_attr": ["res", "attributes", "value"]},
        "attributes": {"get_attr": ["res", "attributes"]},
        "first_ref": {"get_attr": ["res", "refs", 0]},
        "refs_map": {"get_attr": ["res", "refs_map", "0"]},
        "removed": {"get_attr": ["res", "removed_rsrc_list", 0]},
        "missing": {"get_attr": ["res", "resource.7.value"]},
    }))
    assert got == {
        "values": ["v0", "v1", "v2"], "each_item": ["0", "1", "2"], "member_ref": "ref-1",
        "member_value": "v1", "member_value_path": "v1", "member_value_item": "v",
        "by_name": {"0": "v0", "1": "v1", "2": "v2"},
        "attributes": {"error": "The Referenced Attribute (res attributes) is incorrect."},
        "first_ref": "ref-0", "refs_map": {"0": "ref-0", "1": "ref-1", "2": "ref-2"}, "removed": [],
        "missing": {"error": "Member '7' not found in group resource 'res'."},
    }


def test_get_attr_of_a_group_alone_is_its_attributes_and_the_names_read_and_fails_with_them() -> None:
    child = _group_child(["0", "1"])
    got = _values(_outputs(ResourceGroup(), child, {"all": {"get_attr": ["res"]},
                                                    "r0": {"get_attr": ["res", "resource.0"]}}))
    assert got["all"] == {"refs": ["ref-0", "ref-1"], "refs_map": {"0": "ref-0", "1": "ref-1"},
                          "removed_rsrc_list": [], "resource.0": "ref-0"}
    got = _values(_outputs(ResourceGroup(), child, {"all": {"get_attr": ["res"]},
                                                    "r9": {"get_attr": ["res", "resource.9"]}}))
    assert got["all"] == {"error": "Member '9' not found in group resource 'res'."}


def test_a_group_reads_of_its_members_only_what_the_template_reads() -> None:
    def asked(outputs: dict[str, Any]) -> NestedReads:
        definition = _definition("OS::Heat::ResourceGroup", outputs)
        return ResourceGroup().nested_reads(definition.attribute_reads.get("res", frozenset()),
                                            whole="res" in definition.whole_reads)

    # Nothing read of the group: no member row is read, nothing the size of the group is kept.
    assert not asked({"ref": {"get_resource": "res"}, "removed": {"get_attr": ["res", "removed_rsrc_list"]}})
    assert asked({"one": {"get_attr": ["res", "resource.7.value"]}}) == NestedReads(
        names=frozenset({"7"}), member_reads=frozenset({("7", ("value",))}))
    assert asked({"refs": {"get_attr": ["res", "refs"]}}) == NestedReads(every=True)
    assert asked({"all": {"get_attr": ["res"]}}) == NestedReads(every=True, whole=True)
    assert asked({"v": {"get_attr": ["res", "value", 0]}, "m": {"get_attr": ["res", "attributes", "other"]}}
                 ) == NestedReads(every=True, attributes=frozenset({"value", "other"}),
                                  member_reads=frozenset({(None, ("value", 0)), (None, ("other",))}))
    kept_data = ResourceGroup().check(Action.CREATE, dataclasses.replace(
        make_ctx({}, resource_name="res", physical_id=CHILD_ID),
        child=_read(ResourceGroup(), _group_child(["0", "1"]), _definition("OS::Heat::ResourceGroup", {}))))
    assert isinstance(kept_data, Done)
    assert ResourceGroup().stored_attributes([], CHILD_ID, {k: v for k, v in kept_data.data.items() if v},
                                             {}, resource_name="res") == {"removed_rsrc_list": []}


def test_an_auto_scaling_group_takes_resource_n_as_an_index_into_its_members_oldest_first() -> None:
    # Named at random, the members are ordered as they were made, not by name.
    names = ["zzzzzzzzzzzz", "aaaaaaaaaaaa"]
    got = _values(_outputs(AutoScalingGroup(), _group_child(names), {
        "first": {"get_attr": ["res", "resource.0.value"]},
        "second_ref": {"get_attr": ["res", "resource.1"]},
        "values": {"get_attr": ["res", "outputs_list", "value"]},
        "size": {"get_attr": ["res", "current_size", 0]},
        "refs": {"get_attr": ["res", "refs", 0]},
        "past_the_end": {"get_attr": ["res", "resource.5"]},
        "not_an_index": {"get_attr": ["res", "resource.x"]},
        "outputs_list": {"get_attr": ["res", "outputs_list"]},
    }, resource_type="OS::Heat::AutoScalingGroup", data={NAMES_KEY: orjson.dumps(names).decode()}))
    assert got == {
        "first": "vzzzzzzzzzzzz", "second_ref": "ref-aaaaaaaaaaaa",
        "values": ["vzzzzzzzzzzzz", "vaaaaaaaaaaaa"], "size": 2,
        "refs": ["ref-zzzzzzzzzzzz", "ref-aaaaaaaaaaaa"],
        "past_the_end": {"error": "Member '5' not found in group resource 'res'."},
        "not_an_index": {"error": "invalid literal for int() with base 10: 'x'"},
        "outputs_list": {"error": "The Referenced Attribute (res outputs_list) is incorrect."},
    }


def test_a_deployment_group_answers_maps_by_member_name() -> None:
    names = ["web", "db"]
    members = {n: {"deploy_stdout": f"out-{n}", "deploy_stderr": "", "deploy_status_code": 0,
                   "url": f"http://{n}"} for n in names}
    child = ChildStack(id=CHILD_ID, name="st-res-abc", action="CREATE", status="COMPLETE", status_reason="",
                       project="demo", resources={n: (f"ref-{n}", members[n]) for n in names})
    got = _values(_outputs(SoftwareDeploymentGroup(), child, {
        "stdouts": {"get_attr": ["res", "deploy_stdouts"]},
        "codes": {"get_attr": ["res", "deploy_status_codes"]},
        "one_stdout": {"get_attr": ["res", "deploy_stdouts", "db"]},
        "urls": {"get_attr": ["res", "url"]},
        "member_ref": {"get_attr": ["res", "resource.web"]},
        "member_url": {"get_attr": ["res", "resource.web.url"]},
        "missing": {"get_attr": ["res", "resource.cache"]},
        "unknown": {"get_attr": ["res", "nothing"]},
    }, resource_type="OS::Heat::SoftwareDeploymentGroup"))
    assert got == {
        "stdouts": {"web": "out-web", "db": "out-db"}, "codes": {"web": 0, "db": 0}, "one_stdout": "out-db",
        "urls": {"web": "http://web", "db": "http://db"}, "member_ref": "ref-web", "member_url": "http://web",
        "missing": {"error": "Member 'cache' not found in group resource 'res'."},
        "unknown": {"error": "The Referenced Attribute (web nothing) is incorrect."},
    }
    alone = _values(_outputs(SoftwareDeploymentGroup(), child, {"all": {"get_attr": ["res"]}},
                             resource_type="OS::Heat::SoftwareDeploymentGroup"))
    assert alone == {"all": {"deploy_stdouts": {"web": "out-web", "db": "out-db"},
                             "deploy_stderrs": {"web": "", "db": ""},
                             "deploy_status_codes": {"web": 0, "db": 0}}}


def _nested_child(outputs: list[dict[str, Any]], resources: dict[str, Any] | None = None) -> ChildStack:
    return ChildStack(id=CHILD_ID, name="st-res-abc", action="CREATE", status="COMPLETE", status_reason="",
                      outputs=tuple(outputs), project="demo", resources=resources or {})


def test_a_template_resource_is_its_nested_stacks_arn_and_reads_nested_resources() -> None:
    plugin = TemplateResource("inner.yaml", "inner.yaml")
    reads = {"nested_path": {"get_attr": ["res", "resource.v", "value"]},
             "nested_dotted": {"get_attr": ["res", "resource.v.value"]},
             "nested_ref": {"get_attr": ["res", "resource.v"]},
             "missing": {"get_attr": ["res", "resource.w"]}}
    assert plugin.nested_reads(_definition("inner.yaml", reads).attribute_reads["res"]).names == {"v", "w"}
    child = _nested_child([{"output_key": "out", "output_value": "in-y"}],
                          {"v": ("st-res-abc-v-xyz", {"value": "in-y"})})
    got = _values(_outputs(plugin, child, {**reads, "ref": {"get_resource": "res"},
                                           "stack_id": {"get_attr": ["res", "OS::stack_id"]},
                                           "all": {"get_attr": ["res"]}}, resource_type="inner.yaml"))
    arn = f"arn:openstack:heat::demo:stacks/st-res-abc/{CHILD_ID}"
    assert got == {"nested_path": "in-y", "nested_dotted": "in-y", "nested_ref": "st-res-abc-v-xyz",
                   "missing": {"error": "Member 'w' not found in group resource 'res'."},
                   "ref": arn, "stack_id": arn,
                   "all": {"error": "Member 'w' not found in group resource 'res'."}}


def test_a_nested_stack_id_output_is_the_reference_and_get_attr_alone_is_the_outputs() -> None:
    child = _nested_child([{"output_key": "OS::stack_id", "output_value": "hello"},
                           {"output_key": "out", "output_value": "hello"}])
    got = _values(_outputs(TemplateResource("inner.yaml", "inner.yaml"), child,
                           {"ref": {"get_resource": "res"}, "all": {"get_attr": ["res"]}},
                           resource_type="inner.yaml"))
    assert got == {"ref": "hello", "all": {"OS::stack_id": "hello", "out": "hello"}}


def test_a_failed_nested_output_fails_every_read_of_it() -> None:
    error = 'Incorrect index to "str_split" should be between 0 and 1'
    child = _nested_child([{"output_key": "good", "output_value": "a,b"},
                           {"output_key": "bad", "output_value": None, "output_error": error}])
    got = _values(_outputs(TemplateResource("bad.yaml", "bad.yaml"), child, {
        "good": {"get_attr": ["res", "good"]}, "bad": {"get_attr": ["res", "bad"]},
        "all": {"get_attr": ["res"]},
        "inlist": [{"get_attr": ["res", "good"]}, {"get_attr": ["res", "bad"]}]}, resource_type="bad.yaml"))
    failed = {"error": f"Error in res output bad: {error}"}
    assert got == {"good": "a,b", "bad": failed, "all": failed, "inlist": failed}


def test_what_a_row_keeps_reads_back_as_get_attr_and_shows_failures_as_null() -> None:
    kept = stored({"a": {"b": [1, 2]}, "broken": failure("no")}, {'["x",0]': "first", '["y"]': 5})
    assert read(kept, "a", ["b", 1]) == 2
    assert read(kept, "x", [0]) == "first"
    assert read(kept, "missing", []) is None
    with pytest.raises(AttributeFailed, match="no"):
        read(kept, "broken", [])
    with pytest.raises(AttributeFailed, match="no"):
        read_all(kept)
    assert read_all({"a": 1, **{k: v for k, v in kept.items() if k != "broken"}}) == {
        "a": {"b": [1, 2]}, "y": 5}
    assert shown(kept) == {"a": {"b": [1, 2]}, "broken": None}


def test_types_that_do_not_answer_reads_keep_only_their_attributes() -> None:
    class Plain(ResourceType):
        type_name = "Test::Plain"

        def start_create(self, ctx: Any) -> Any:
            return Done()

        def all_attributes(self, physical_id: str | None, data: Any, properties: Any) -> dict[str, Any]:
            return {"a": 1}

    assert Plain().stored_attributes([("a", 0)], "pid", {}, {}, resource_name="r") == {"a": 1}


def test_a_member_read_a_member_does_not_keep_is_left_to_answer_from_its_own_rows() -> None:
    # A member group keeps none of its own refs (its template reads none): the read of it
    # through the outer group is left unanswered, to be answered from the member's nested stack.
    reads = ResourceGroup().nested_reads([("attributes", "refs"), ("resource.1", "refs_map"),
                                          ("resource.0.output",)])
    answered = with_reads({"output": "o"}, {read_key("refs", []): ["a"]})
    rows = {"0": ("ref-0", answered), "1": ("ref-1", {"removed_rsrc_list": []})}
    assert unanswered(rows, reads) == {"1": [("refs",), ("refs_map",)]}
    assert read(answered, "refs", []) == ["a"]
