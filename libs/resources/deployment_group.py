"""``OS::Heat::SoftwareDeploymentGroup`` and ``OS::Heat::StructuredDeploymentGroup``.

One config deployed to many servers: a resource group whose members are
deployments, one per entry of ``servers`` (member name -> server id), named by
the entry's key and given the group's other properties and that server. The
group's attributes are maps from member name to a member attribute
(``deploy_stdouts`` of ``deploy_stdout``, and so on; any other name reads the
member attribute of that name, a config's declared output for instance).

``rolling_update`` (``max_batch_size``, ``pause_time``) updates the members a
batch at a time, as Heat's does. Heat batches a create only under
``batch_create``; Ember batches a create under ``rolling_update`` too (when
there is no ``batch_create``), so that rolling out a config to many servers
can be watched and held a batch at a time from the very first deployment,
with the ``create:batch`` step between batches.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, Final

from libs.resources import rolling
from libs.resources.attributes import AttrSchema
from libs.resources.base import SupportStatus
from libs.resources.derived_config import TRANSPORT_VALUES
from libs.resources.properties import PropSchema
from libs.resources.resource_group import ResourceGroup
from libs.resources.steps import NestedReads, StepContext
from libs.template.attribute_store import AttributeFailed
from libs.template.constraints import AllowedValues
from libs.template.errors import InvalidTemplateAttribute
from libs.template.functions.hot_refs import select_path

SERVERS: Final = "servers"
# The group attributes that read a differently named member attribute.
MEMBER_ATTRIBUTES: Final[Mapping[str, str]] = {
    "deploy_stdouts": "deploy_stdout", "deploy_stderrs": "deploy_stderr",
    "deploy_status_codes": "deploy_status_code"}
DEPLOY_ACTIONS: Final = ("CREATE", "UPDATE", "DELETE", "SUSPEND", "RESUME")

# The properties a group hands each member as they are (Heat takes them from the member's schema).
DEPLOYMENT_PROPERTIES: Final[Mapping[str, PropSchema]] = {
    "config": PropSchema("string", "The id of the config each server gets.", update_allowed=True),
    "input_values": PropSchema("map", "The config's input values, the same for every server.",
                               update_allowed=True),
    "actions": PropSchema("list", "The group's lifecycle actions that run the config on its servers.",
                          default=["CREATE", "UPDATE"], update_allowed=True,
                          constraints=(AllowedValues(DEPLOY_ACTIONS),)),
    "name": PropSchema("string", "The name of each derived config (servers order their configs by it).",
                       update_allowed=True),
    "signal_transport": PropSchema("string", "How each server answers with its outputs (NO_SIGNAL: "
                                   "a deployment completes without waiting for one; NATS_SIGNAL, "
                                   "Ember's own: published on NATS JetStream, not posted to the API).",
                                   default="CFN_SIGNAL", constraints=(TRANSPORT_VALUES,)),
}
STRUCTURED_PROPERTIES: Final[Mapping[str, PropSchema]] = {
    "input_key": PropSchema("string", "The key that names an input to fill into the structured config.",
                            default="get_input"),
    "input_values_validate": PropSchema("string", "STRICT: an input without a value fails a deployment; "
                                        "LAX: it is null.", default="LAX",
                                        constraints=(AllowedValues(("LAX", "STRICT")),)),
}


def deployment_members(member_type: str, properties: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One ``member_type`` deployment per server, named by its key in ``servers``, in the map's order.

    Each member gets the group's other properties that have a value, and its server.
    """
    shared = {key: value for key, value in properties.items() if key != SERVERS and value is not None}
    servers = properties.get(SERVERS) or {}
    return {str(name): {"type": member_type, "properties": {**shared, "server": server}}
            for name, server in servers.items()}


def attribute_map(members: Mapping[str, Mapping[str, Any]], name: str, path: Sequence[Any]) -> Any:
    """The group attribute ``name``: each member's attribute by member name, ``path`` then taken in
    that map. A name no member has fails as Heat's member fails it (naming the first member)."""
    attribute = MEMBER_ATTRIBUTES.get(name, name)
    if members and not any(attribute in member for member in members.values()):
        raise AttributeFailed(str(InvalidTemplateAttribute(next(iter(members)), attribute)))
    return select_path(_each(members, attribute), path)


def _each(members: Mapping[str, Mapping[str, Any]], attribute: str) -> dict[str, Any]:
    return {n: member.get(attribute) for n, member in members.items()}


def batch_names(wanted: Sequence[str], existing: Sequence[str], capacity: int) -> list[str]:
    """The members of a rolling update's batch of ``capacity``, in ``wanted``'s order.

    Members the nested stack has and still wants come first, so that none is
    removed while the group grows; new ones then fill what is left.
    """
    have = set(existing)
    first = [n for n in wanted if n in have] + [n for n in wanted if n not in have]
    chosen = set(first[:capacity])
    return [n for n in wanted if n in chosen]


class SoftwareDeploymentGroup(ResourceGroup):
    """A deployment of one config to each server of a map, in a nested stack."""

    type_name: ClassVar[str] = "OS::Heat::SoftwareDeploymentGroup"
    description: ClassVar[str] = (
        "Deploys a software config to each server of a map: one deployment per server, named by "
        "its key, in a nested stack; its attributes are maps of the deployments' attributes.")
    support_status: ClassVar[SupportStatus] = SupportStatus(version="5.0.0")
    # The type of the group's members.
    member_type: ClassVar[str] = "OS::Heat::SoftwareDeployment"
    # Heat's: no min_in_service, a deployment group keeps none back.
    update_policy_schema: ClassVar[Mapping[str, PropSchema]] = {
        "rolling_update": PropSchema("map", "How an update replaces deployments, a batch at a time.",
                                     schema=rolling.batch_schema("deployments to replace",
                                                                 min_in_service=False)),
        "batch_create": ResourceGroup.update_policy_schema["batch_create"],
    }
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        SERVERS: PropSchema("map", "The servers to deploy to: each name (the name of its deployment) "
                            "and server id.", required=True, update_allowed=True),
        **DEPLOYMENT_PROPERTIES,
    }
    attributes_schema: ClassVar[Mapping[str, AttrSchema]] = {
        "deploy_stdouts": AttrSchema("What the config printed on each server's standard output, by name.",
                                     "map"),
        "deploy_stderrs": AttrSchema("What the config printed on each server's standard error, by name.",
                                     "map"),
        "deploy_status_codes": AttrSchema("The config's exit status on each server, by name.", "map"),
    }

    # ---- sizes and validation -----------------------------------------------------------------
    def has_members(self, properties: Mapping[str, Any]) -> bool:
        servers = properties.get(SERVERS)
        return bool(servers) if isinstance(servers, Mapping) else True

    def size(self, properties: Mapping[str, Any]) -> int | None:
        servers = properties.get(SERVERS)
        return len(servers) if isinstance(servers, Mapping) else None

    def one_member(self, properties: Mapping[str, Any]) -> Mapping[str, Any]:
        servers = properties.get(SERVERS)
        if not isinstance(servers, Mapping) or not servers:
            return properties
        return {**properties, SERVERS: dict([next(iter(servers.items()))])}

    # ---- members ------------------------------------------------------------------------------
    def removed(self, ctx: StepContext) -> set[str]:
        return set()  # members come and go with the servers map; no removal policies

    def new_members(self, ctx: StepContext) -> dict[str, Any]:
        return deployment_members(self.member_type, ctx.properties)

    # ---- batches ------------------------------------------------------------------------------
    def create_policy(self, ctx: StepContext) -> Mapping[str, Any] | None:
        given = super().create_policy(ctx)
        return given if given is not None else self.rolling_policy(ctx)

    def rolling_policy(self, ctx: StepContext) -> Mapping[str, Any] | None:
        # Heat's deployment groups keep no member in service by their old definition.
        policy = (ctx.update_policy or {}).get("rolling_update")
        if not isinstance(policy, dict):
            return None
        return {"max_batch_size": policy.get("max_batch_size", 1), "pause_time": policy.get("pause_time", 0),
                "min_in_service": 0}

    def definition_changed(self, ctx: StepContext) -> bool:
        # Every property is part of each member's definition.
        return dict(ctx.old_properties or {}) != dict(ctx.properties)

    def target(self, ctx: StepContext) -> int:
        return len(ctx.properties.get(SERVERS) or {})

    def existing_names(self, ctx: StepContext, state: Mapping[str, Any]) -> list[str]:
        return list(ctx.child.resources) if ctx.child is not None else []

    def names_for(self, ctx: StepContext, capacity: int, state: Mapping[str, Any]) -> list[str]:
        existing = state.get("names") or self.existing_names(ctx, state)
        return batch_names([str(n) for n in ctx.properties.get(SERVERS) or {}], existing, capacity)

    def members_for(self, ctx: StepContext, names: list[str], keep_old: set[str]) -> dict[str, Any]:
        new = deployment_members(self.member_type, ctx.properties)
        old = deployment_members(self.member_type, ctx.old_properties or ctx.properties)
        return {n: old[n] if n in keep_old and n in old else new[n] for n in names}

    # ---- attributes ---------------------------------------------------------------------------
    def nested_reads(self, reads: Iterable[tuple[Any, ...]], *, whole: bool = False) -> NestedReads:
        # Every member, always (its names drive rolling updates, and the group's own
        # attributes are every member's); of each, the attributes the group answers and those read.
        read = {MEMBER_ATTRIBUTES.get(name, name) for name, *_ in reads if not name.startswith("resource.")}
        for name, *path in reads:
            rest = [*name.split(".", 2)[2:], *path] if name.startswith("resource.") else []
            if rest and isinstance(rest[0], str):
                read.add(rest[0])
        return NestedReads(every=True, attributes=frozenset({*MEMBER_ATTRIBUTES.values(), *read}))

    def member_attributes(self, data: Mapping[str, str]) -> dict[str, dict[str, Any]]:
        return {name: kept for name, (_, kept) in self.members(data).items()}

    def all_attributes(self, physical_id: str | None, data: Mapping[str, str],
                       properties: Mapping[str, Any]) -> dict[str, Any]:
        members = self.member_attributes(data)
        return {name: _each(members, attribute) for name, attribute in MEMBER_ATTRIBUTES.items()}

    def read(self, name: str, path: Sequence[Any], physical_id: str | None, data: Mapping[str, str],
             properties: Mapping[str, Any], *, resource_name: str) -> Any:
        if physical_id is None:
            return None
        if name.startswith("resource."):  # a member's reference or attribute, as a resource group's
            return super().read(name, path, physical_id, data, properties, resource_name=resource_name)
        return attribute_map(self.member_attributes(data), name, path)


class StructuredDeploymentGroup(SoftwareDeploymentGroup):
    """A deployment of one structured config to each server of a map."""

    type_name: ClassVar[str] = "OS::Heat::StructuredDeploymentGroup"
    description: ClassVar[str] = (
        "Deploys a structured config to each server of a map, its inputs filled in per server: one "
        "deployment per server, named by its key, in a nested stack.")
    member_type: ClassVar[str] = "OS::Heat::StructuredDeployment"
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        **SoftwareDeploymentGroup.properties_schema, **STRUCTURED_PROPERTIES}


def _hidden(replacement: str) -> SupportStatus:
    return SupportStatus(status="HIDDEN", version="7.0.0", message=f"Use {replacement}.",
                         previous_status=SupportStatus(status="DEPRECATED", version="2014.2"))


class SoftwareDeployments(SoftwareDeploymentGroup):
    """The group's old name: still read in templates, never listed."""

    type_name: ClassVar[str] = "OS::Heat::SoftwareDeployments"
    support_status: ClassVar[SupportStatus] = _hidden(SoftwareDeploymentGroup.type_name)


class StructuredDeployments(StructuredDeploymentGroup):
    """The structured group's old name: still read in templates, never listed."""

    type_name: ClassVar[str] = "OS::Heat::StructuredDeployments"
    support_status: ClassVar[SupportStatus] = _hidden(StructuredDeploymentGroup.type_name)


DEPLOYMENT_GROUPS: Final = (SoftwareDeploymentGroup, StructuredDeploymentGroup, SoftwareDeployments,
                            StructuredDeployments)
