"""``OS::Neutron::SecurityGroup``: a security group and its rules, reconciled as Heat's are.

The rules are made the way Heat updates them, at create too: the group's rules as
Neutron has them are compared with the wanted ones (the template's, plus Neutron's
default egress rules when the template has no egress rule), stale ones are deleted
and missing ones made in one bulk call. Run again after a lost answer, it does only
what is left, so a crash makes no rule twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final

from libs.cloud.calls import CloudCall, Service
from libs.engine.status import Action
from libs.resources.attributes import AttrSchema
from libs.resources.base import SupportStatus
from libs.resources.cloud_steps import loads
from libs.resources.neutron import wire
from libs.resources.neutron.base import GET_KEY, PHASE, SHOW, Entity, NeutronResource
from libs.resources.neutron.wire import Kind, Ref, Resolver
from libs.resources.properties import PropSchema
from libs.resources.steps import Call, Done, Failed, StepContext, StepResult
from libs.template.constraints import AllowedValues, CustomConstraint, Range
from libs.template.errors import StackValidationFailed

NAME = "name"
DESCRIPTION = "description"
RULES = "rules"
STATEFUL = "stateful"
DIRECTION = "direction"
ETHERTYPE = "ethertype"
PORT_RANGE_MIN = "port_range_min"
PORT_RANGE_MAX = "port_range_max"
PROTOCOL = "protocol"
REMOTE_MODE = "remote_mode"
REMOTE_GROUP_ID = "remote_group_id"
REMOTE_IP_PREFIX = "remote_ip_prefix"

PROTOCOL_NAMES: Final = ("ah", "dccp", "egp", "esp", "gre", "icmp", "icmpv6", "igmp", "ipv6-encap",
                         "ipv6-frag", "ipv6-icmp", "ipv6-nonxt", "ipv6-opts", "ipv6-route", "ospf", "pgm",
                         "rsvp", "sctp", "tcp", "udp", "udplite", "vrrp")
PROTOCOLS: Final = (*range(256), *PROTOCOL_NAMES)
PROTOCOL_TEXT: Final = (f"The protocol the rule matches: one of {', '.join(PROTOCOL_NAMES)}, or a protocol "
                        "number from 0 to 255.")
DEFAULT_EGRESS: Final = ({DIRECTION: "egress", ETHERTYPE: "IPv4"}, {DIRECTION: "egress", ETHERTYPE: "IPv6"})
# What makes two rules the same rule (Heat's comparison).
RULE_KEYS: Final = (DIRECTION, ETHERTYPE, PROTOCOL, PORT_RANGE_MIN, PORT_RANGE_MAX, REMOTE_GROUP_ID,
                    REMOTE_IP_PREFIX, "security_group_id")
APPLY_PHASE: Final = "rules_apply"
READ_PHASE: Final = "rules"
MAKE_KEY: Final = "make_rules"


def rule_schema() -> dict[str, PropSchema]:
    return {
        DIRECTION: PropSchema("string", "ingress: traffic coming into the instance; egress: leaving it.",
                              default="ingress", constraints=(AllowedValues(("ingress", "egress")),)),
        ETHERTYPE: PropSchema("string", "The traffic's ethertype.", default="IPv4",
                              constraints=(AllowedValues(("IPv4", "IPv6")),)),
        PORT_RANGE_MIN: PropSchema("integer", "The lowest port matched (for ICMP: the type).",
                                   constraints=(Range(0, 65535),)),
        PORT_RANGE_MAX: PropSchema("integer", "The highest port matched (for ICMP: the code).",
                                   constraints=(Range(0, 65535),)),
        PROTOCOL: PropSchema("string", PROTOCOL_TEXT + " Absent: every protocol.",
                             constraints=(AllowedValues(PROTOCOLS),)),
        REMOTE_MODE: PropSchema("string", "Match a remote group or a remote IP prefix.",
                                default="remote_ip_prefix",
                                constraints=(AllowedValues(("remote_ip_prefix", "remote_group_id")),)),
        REMOTE_GROUP_ID: PropSchema("string", "The remote group (remote_mode remote_group_id); absent: "
                                    "this group itself.",
                                    constraints=(CustomConstraint("neutron.security_group"),)),
        REMOTE_IP_PREFIX: PropSchema("string", "The remote CIDR matched.",
                                     constraints=(CustomConstraint("net_cidr"),)),
        DESCRIPTION: PropSchema("string", "The rule's description."),
    }


def format_rule(rule: Mapping[str, Any], group_id: str) -> dict[str, Any]:
    """A rule as Neutron takes it: the group's id, its remote, ports as text (Heat's formatting)."""
    out = {k: v for k, v in rule.items() if k != REMOTE_MODE}
    out["security_group_id"] = group_id
    if REMOTE_MODE in rule:
        if rule[REMOTE_MODE] == REMOTE_GROUP_ID:
            out[REMOTE_IP_PREFIX] = None
            if not out.get(REMOTE_GROUP_ID):
                out[REMOTE_GROUP_ID] = group_id  # no remote group: the group itself
        else:
            out[REMOTE_GROUP_ID] = None
    for key in (PORT_RANGE_MIN, PORT_RANGE_MAX):
        if out.get(key) is not None:
            out[key] = str(out[key])
    if out.get(DESCRIPTION) is None:
        out.pop(DESCRIPTION, None)
    return out


def rule_key(rule: Mapping[str, Any]) -> tuple[str | None, ...]:
    return tuple(None if rule.get(k) is None else str(rule.get(k)) for k in RULE_KEYS)


def reconcile(wanted: Sequence[Mapping[str, Any]], current: Sequence[Mapping[str, Any]], group_id: str
              ) -> tuple[list[str], list[dict[str, Any]]]:
    """The ids of the rules to delete and the rules to make, so the group has exactly ``wanted``."""
    desired = list(wanted)
    if not any(r.get(DIRECTION) == "egress" for r in desired):
        desired += DEFAULT_EGRESS
    formatted = [format_rule(r, group_id) for r in desired]
    wanted_keys = {rule_key(r) for r in formatted}
    current_keys = {rule_key(r) for r in current}
    stale = [str(r["id"]) for r in current if rule_key(r) not in wanted_keys]
    missing: list[dict[str, Any]] = []
    for rule in formatted:
        if rule_key(rule) not in current_keys and rule_key(rule) not in {rule_key(m) for m in missing}:
            missing.append(rule)
    return stale, missing


class SecurityGroup(NeutronResource):
    """A security group: a set of rules filtering the traffic of the ports it is on."""

    type_name: ClassVar[str] = "OS::Neutron::SecurityGroup"
    description: ClassVar[str] = (
        "A Neutron security group: rules filtering the traffic of the ports it is given to. Every "
        "project also has a group named default, for ports given none.")
    support_status: ClassVar[SupportStatus] = SupportStatus(version="2014.1")
    entity: ClassVar[Entity] = Entity("security_group", "security_groups",
                                         tag_class="network.v2.security_group.SecurityGroup")
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        NAME: PropSchema("string", "The group's name; need not be unique.", update_allowed=True),
        DESCRIPTION: PropSchema("string", "The group's description.", update_allowed=True),
        RULES: PropSchema("list", "The group's rules.", default=[], update_allowed=True,
                          schema=PropSchema("map", schema=rule_schema())),
        STATEFUL: PropSchema("boolean", "A stateful group (or a stateless one).", update_allowed=True),
    }
    attributes_schema: ClassVar[Mapping[str, AttrSchema]] = {}
    live_fields: ClassVar[Mapping[str, str]] = {NAME: "name", DESCRIPTION: "description"}

    def validate_typed(self, properties: Mapping[str, Any]) -> None:
        super().validate_typed(properties)
        if properties.get(NAME) == "default":
            raise StackValidationFailed('Security groups cannot be assigned the name "default".')

    def references(self, properties: Mapping[str, Any], *, updating: bool = False) -> list[tuple[str, Ref]]:
        return [(RULES, Ref(Kind.SECURITY_GROUP, r[REMOTE_GROUP_ID])) for r in properties.get(RULES) or ()
                if isinstance(r, Mapping) and isinstance(r.get(REMOTE_GROUP_ID), str) and r[REMOTE_GROUP_ID]]

    def create_body(self, ctx: StepContext, resolve: Resolver) -> dict[str, Any]:
        props = ctx.properties
        body: dict[str, Any] = {NAME: self.name_of(ctx)}
        for key in (DESCRIPTION, STATEFUL):
            if props.get(key) is not None:
                body[key] = props[key]
        return body

    def update_body(self, ctx: StepContext, changed: set[str], resolve: Resolver) -> dict[str, Any] | Failed:
        body = {k: ctx.properties[k] for k in changed if k in (DESCRIPTION, STATEFUL)}
        if NAME in changed:
            body[NAME] = self.name_of(ctx)
        return body

    # ---- rules --------------------------------------------------------------------------------
    def _wanted(self, ctx: StepContext) -> list[dict[str, Any]]:
        resolve = self._ids(ctx)
        rules = []
        for given_rule in ctx.properties.get(RULES) or ():
            rule = dict(given_rule)
            if rule.get(REMOTE_GROUP_ID):
                rule[REMOTE_GROUP_ID] = resolve(Kind.SECURITY_GROUP, rule[REMOTE_GROUP_ID])
            rules.append(rule)
        return rules

    def finish(self, action: Action, ctx: StepContext, obj: Mapping[str, Any]) -> StepResult:
        group_id = str(obj["id"])
        if action is Action.CREATE and not ctx.properties.get(RULES):
            return super().finish(action, ctx, obj)
        changed = self.changed_properties(ctx.old_properties, ctx.properties)
        if action is Action.UPDATE and RULES not in changed:
            return super().finish(action, ctx, obj)
        if action is Action.CREATE and "security_group_rules" in obj:
            return self._apply(ctx, obj, physical_id=group_id)
        return Call((self.entity.call(GET_KEY, "get", group_id),), physical_id=group_id,
                    data={PHASE: READ_PHASE})

    def _apply(self, ctx: StepContext, group: Mapping[str, Any], physical_id: str) -> StepResult:
        stale, missing = reconcile(self._wanted(ctx), group.get("security_group_rules") or (), physical_id)
        show = wire.dumps(group)
        if not stale and not missing:
            return Done(physical_id=physical_id, data=self.settled(group))
        calls = [CloudCall(f"delete_rule:{rule_id}", Service.NETWORK, "delete_security_group_rule",
                           args=(rule_id,), kwargs={"ignore_missing": True}) for rule_id in stale]
        if missing:
            calls.append(CloudCall(MAKE_KEY, Service.NETWORK, "create_security_group_rules", args=(missing,)))
        return Call(tuple(calls), physical_id=physical_id, data={PHASE: APPLY_PHASE, SHOW: show})

    def more(self, phase: str, action: Action, ctx: StepContext) -> StepResult | None:
        group_id = ctx.physical_id or ""
        if phase == READ_PHASE:
            answer = ctx.answers.get(GET_KEY)
            if answer is None:
                return Call((self.entity.call(GET_KEY, "get", group_id),), data={PHASE: READ_PHASE})
            if answer.error is not None:
                return wire.failed(answer.error)
            return self._apply(ctx, wire.neutron_view(answer.value), group_id)
        if phase == APPLY_PHASE:
            if not ctx.answers:  # lost: read the rules again and do what is left
                return Call((self.entity.call(GET_KEY, "get", group_id),), data={PHASE: READ_PHASE})
            for answer in ctx.answers.values():
                if answer.error is not None and not answer.not_found:
                    return wire.failed(answer.error)
            return Done(data=self.settled(loads(ctx.data, SHOW, {})))
        return None
