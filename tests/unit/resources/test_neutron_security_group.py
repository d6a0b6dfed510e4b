"""OS::Neutron::SecurityGroup (rules reconciled as Heat's update does) and OS::Neutron::SecurityGroupRule."""

from __future__ import annotations

from typing import Any

import pytest

from libs.cloud.calls import ErrorKind
from libs.engine.status import Action
from libs.resources.neutron.security_group import format_rule, reconcile
from libs.resources.steps import Call, Done, Failed
from libs.template.errors import StackValidationFailed
from tests.unit.resources.cloud_support import TAG, call_of, ctx_for, error, methods, ok, run
from tests.unit.resources.resource_support import plugin

GROUP = plugin("OS::Neutron::SecurityGroup")
RULE = plugin("OS::Neutron::SecurityGroupRule")
NAME = "st-r1-abcdefghijkl"
SG_ID = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
OTHER_SG = "8b7c6d5e-4f3a-4b2c-9d1e-0f9a8b7c6d5e"
_NONE = {"protocol": None, "port_range_min": None, "port_range_max": None, "remote_group_id": None,
         "remote_ip_prefix": None, "security_group_id": SG_ID}
EGRESS = [{"id": "e4", "direction": "egress", "ethertype": "IPv4", **_NONE},
          {"id": "e6", "direction": "egress", "ethertype": "IPv6", **_NONE}]
SSH = {"protocol": "tcp", "port_range_min": 22, "port_range_max": 22, "remote_ip_prefix": "0.0.0.0/0"}


def _group(rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": SG_ID, "name": NAME, "description": "", "security_group_rules": rules, "tags": [TAG]}


def _typed_rules(*rules: dict[str, Any]) -> list[dict[str, Any]]:
    return list(GROUP.validate({"rules": list(rules)}, resource_name="r1")["rules"])


def test_schema() -> None:
    props = GROUP.properties_schema
    assert {n: (p.type, p.update_allowed) for n, p in props.items()} == {
        "name": ("string", True), "description": ("string", True), "rules": ("list", True),
        "stateful": ("boolean", True)}
    rule = GROUP.schema_api()["properties"]["rules"]["schema"]["*"]["schema"]
    assert rule["direction"]["default"] == "ingress" and rule["ethertype"]["default"] == "IPv4"
    assert rule["remote_mode"]["default"] == "remote_ip_prefix"
    assert RULE.properties_schema["protocol"].default == "tcp"
    assert not any(p.update_allowed for p in RULE.properties_schema.values())  # any change replaces


def test_the_name_default_is_refused() -> None:
    with pytest.raises(StackValidationFailed) as failed:
        GROUP.validate({"name": "default"}, resource_name="r1")
    assert str(failed.value) == 'Security groups cannot be assigned the name "default".'


@pytest.mark.parametrize(("rule", "formatted"), [
    ({"direction": "ingress", "ethertype": "IPv4", "remote_mode": "remote_ip_prefix", **SSH},
     {"direction": "ingress", "ethertype": "IPv4", "protocol": "tcp", "port_range_min": "22",
      "port_range_max": "22", "remote_ip_prefix": "0.0.0.0/0", "remote_group_id": None,
      "security_group_id": SG_ID}),
    ({"direction": "ingress", "ethertype": "IPv4", "remote_mode": "remote_group_id", "remote_group_id": None},
     {"direction": "ingress", "ethertype": "IPv4", "remote_group_id": SG_ID, "remote_ip_prefix": None,
      "security_group_id": SG_ID}),     # no remote group: the group itself
])
def test_format_rule(rule: dict[str, Any], formatted: dict[str, Any]) -> None:
    assert format_rule(rule, SG_ID) == formatted


def test_reconcile() -> None:
    ssh = _typed_rules(SSH)
    # Rules with no egress keep Neutron's default egress rules; the SSH rule is missing.
    stale, missing = reconcile(ssh, EGRESS, SG_ID)
    assert stale == [] and [r["port_range_min"] for r in missing] == ["22"]
    # An egress rule in the template replaces the defaults.
    egress = _typed_rules({"direction": "egress", "protocol": "tcp", "port_range_min": 443,
                           "port_range_max": 443})
    stale, missing = reconcile(egress, EGRESS, SG_ID)
    assert stale == ["e4", "e6"] and len(missing) == 1
    # Nothing to do when Neutron has exactly the rules.
    made = {**format_rule(ssh[0], SG_ID), "id": "r1", "port_range_min": 22, "port_range_max": 22}
    current = [*EGRESS, made]
    assert reconcile(ssh, current, SG_ID) == ([], [])


def test_create_then_make_the_rules_in_one_bulk_call() -> None:
    props = GROUP.validate({"description": "web", "rules": [SSH]}, resource_name="r1")
    results, final = run(GROUP, Action.CREATE, ctx_for(props), [
        {"create": ok(_group(EGRESS))}, {"tags": ok(None)}, {"make_rules": ok([{"id": "r1"}])}])
    assert call_of(results[0], "create_security_group").kwargs == {"name": NAME, "description": "web"}
    assert call_of(results[1], "set_tags").args == (
        {"$existing": "network.v2.security_group.SecurityGroup", "id": SG_ID}, [TAG])
    make = results[2]
    assert isinstance(make, Call) and make.physical_id == SG_ID
    assert methods(make) == ["create_security_group_rules"]
    (rules,) = call_of(make, "create_security_group_rules").args
    assert rules == [{"direction": "ingress", "ethertype": "IPv4", "protocol": "tcp", "port_range_min": "22",
                      "port_range_max": "22", "remote_ip_prefix": "0.0.0.0/0", "remote_group_id": None,
                      "security_group_id": SG_ID}]
    assert isinstance(results[3], Done) and final.physical_id == SG_ID


def test_create_with_no_rules_is_create_and_tag() -> None:
    results, _ = run(GROUP, Action.CREATE, ctx_for(GROUP.validate({}, resource_name="r1")),
                     [{"create": ok(_group(EGRESS))}, {"tags": ok(None)}])
    assert isinstance(results[2], Done) and results[2].physical_id == SG_ID


def test_lost_rule_answers_read_the_group_and_do_what_is_left() -> None:
    props = GROUP.validate({"rules": [SSH]}, resource_name="r1")
    made = {**format_rule(_typed_rules(SSH)[0], SG_ID), "id": "r1", "port_range_min": 22,
            "port_range_max": 22}
    results, _ = run(GROUP, Action.CREATE, ctx_for(props), [
        {"create": ok(_group(EGRESS))}, {"tags": ok(None)}, None, {"get": ok(_group([*EGRESS, made]))}])
    assert methods(results[3]) == ["get_security_group"]
    assert isinstance(results[4], Done)  # the rule was made before the crash: nothing made twice


def test_update_rules_deletes_stale_and_makes_missing() -> None:
    old = GROUP.validate({"rules": [SSH]}, resource_name="r1")
    new = GROUP.validate({"name": "web", "rules": [{**SSH, "port_range_min": 80, "port_range_max": 80}]},
                         resource_name="r1")
    ssh = {**format_rule(_typed_rules(SSH)[0], SG_ID), "id": "r1"}
    ctx = ctx_for(new, old_properties=old, physical_id=SG_ID)
    results, _ = run(GROUP, Action.UPDATE, ctx, [
        {"update": ok(_group([*EGRESS, ssh]))}, {"get": ok(_group([*EGRESS, ssh]))},
        {"delete_rule:r1": ok(None), "make_rules": ok([])}])
    assert call_of(results[0], "update_security_group").kwargs == {"name": "web"}
    assert methods(results[1]) == ["get_security_group"]
    assert methods(results[2]) == ["delete_security_group_rule", "create_security_group_rules"]
    assert call_of(results[2], "delete_security_group_rule").args == ("r1",)
    assert isinstance(results[3], Done)


def test_delete_group() -> None:
    props = GROUP.validate({}, resource_name="r1")
    results, _ = run(GROUP, Action.DELETE, ctx_for(props, physical_id=SG_ID), [{"delete": ok(None)}])
    assert methods(results[0]) == ["delete_security_group"] and isinstance(results[1], Done)


# ---- SecurityGroupRule ------------------------------------------------------------------------------

def test_rule_validation() -> None:
    with pytest.raises(StackValidationFailed) as failed:
        RULE.validate({"security_group": SG_ID, "remote_group": OTHER_SG, "remote_ip_prefix": "10.0.0.0/8"},
                      resource_name="r1")
    assert str(failed.value) == ("Cannot define the following properties at the same time: remote_group, "
                                 "remote_ip_prefix.")
    with pytest.raises(StackValidationFailed) as failed:
        RULE.validate({"security_group": SG_ID, "port_range_min": 90, "port_range_max": 80},
                      resource_name="r1")
    assert str(failed.value) == ("The minimum port number must be less than or equal to the maximum port "
                                 "number.")
    RULE.validate({"security_group": SG_ID, "protocol": "icmp", "port_range_min": 8, "port_range_max": 0},
                  resource_name="r1")


def test_rule_create_by_group_name() -> None:
    props = RULE.validate({"security_group": "web", "port_range_min": 22, "port_range_max": 22,
                           "remote_group": OTHER_SG}, resource_name="r1")
    rule = {"id": "r7", "security_group_id": SG_ID, "direction": "ingress", "ethertype": "IPv4",
            "protocol": "tcp", "port_range_min": 22, "port_range_max": 22, "remote_group_id": OTHER_SG,
            "remote_ip_prefix": None}
    results, _ = run(RULE, Action.CREATE, ctx_for(props), [{"find:security_group:web": ok({"id": SG_ID})},
                                                           {"create": ok(rule)}])
    assert call_of(results[1], "create_security_group_rule").kwargs == {
        "security_group_id": SG_ID, "direction": "ingress", "ethertype": "IPv4", "protocol": "tcp",
        "port_range_min": "22", "port_range_max": "22", "remote_group_id": OTHER_SG}
    assert isinstance(results[2], Done) and results[2].physical_id == "r7"


def test_rule_lost_answer_adopts_the_same_match() -> None:
    props = RULE.validate({"security_group": SG_ID, "port_range_min": 22, "port_range_max": 22},
                          resource_name="r1")
    other = {"id": "r6", "security_group_id": SG_ID, "direction": "ingress", "ethertype": "IPv4",
             "protocol": "tcp", "port_range_min": 80, "port_range_max": 80}
    same = {**other, "id": "r7", "port_range_min": 22, "port_range_max": 22}
    results, _ = run(RULE, Action.CREATE, ctx_for(props), [None, {"adopt": ok([*EGRESS, other, same])}])
    assert call_of(results[1], "security_group_rules").kwargs == {"security_group_id": SG_ID}
    assert isinstance(results[2], Done) and results[2].physical_id == "r7"
    results, _ = run(RULE, Action.CREATE, ctx_for(props), [None, {"adopt": ok([other])}])
    assert methods(results[2]) == ["create_security_group_rule"]


def test_rule_conflict_fails_with_neutrons_words() -> None:
    props = RULE.validate({"security_group": SG_ID}, resource_name="r1")
    exists = error(ErrorKind.CONFLICT, "Security group rule already exists. Rule id is r7.", 409,
                   "ConflictException")
    results, _ = run(RULE, Action.CREATE, ctx_for(props), [{"create": exists}])
    assert results[1] == Failed("Security group rule already exists. Rule id is r7.", "Conflict")
