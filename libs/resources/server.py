"""``OS::Nova::Server``: a Nova server, made, watched, resized, rebuilt and deleted through steps.

Create: look the flavor, image, networks (and security groups, for ports it makes) up
(``phase`` "lookup"); make the ports its ``subnet`` entries need ("ports",
:mod:`libs.resources.server_ports`); make the server ("create"), its metadata carrying
``ctx.cloud_tag``; ask Nova until it is ACTIVE ("build"), then read it and its ports.
A lost create answer, or a create started again, looks for the tagged server by name
first and adopts it. A server that goes to ERROR fails with Heat's reason, Nova's fault
in it.

Delete (:mod:`libs.resources.server_delete`), updates in place
(:mod:`libs.resources.server_update`: rename, metadata, tags, password, interfaces,
flavor resize with the named step ``resize`` before the confirm, image rebuild),
suspend and resume (:mod:`libs.resources.server_power`) live in their own modules, as do
a replacement's freeing of the old server's ports (:mod:`libs.resources.server_replace`) and
a rollback's giving them back (:mod:`libs.resources.server_restore`). Attributes are read
from what the last step kept of Nova's and Neutron's answers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar, Final

from libs.cloud.calls import CloudCall, ErrorKind, Service
from libs.engine.status import Action
from libs.resources import server_create as sc
from libs.resources import server_delete, server_power, server_replace, server_restore, server_validation
from libs.resources import server_floating as sf
from libs.resources import server_ports as sp
from libs.resources import server_schema as s
from libs.resources import server_update as su
from libs.resources.attributes import AttrSchema
from libs.resources.base import OBSERVE_KEY, ResourceType, SupportStatus
from libs.resources.cloud_steps import (
    LISTED,
    TAG_KEY,
    answered,
    call,
    client_failure,
    cloud_failure,
    compute,
    dumps,
    first_error,
    loads,
    network,
    phase,
    poll_delay,
    polled,
    ready_since,
    retrying,
    tagged,
    value,
    wait_ready,
)
from libs.resources.collect_config import os_collect_config, server_metadata, server_user
from libs.resources.properties import PropSchema
from libs.resources.software_config import software_of
from libs.resources.stack_user import StackUser
from libs.resources.steps import Done, Failed, Observed, SoftwareReads, StepContext, StepResult
from libs.resources.user_data import config_named, content_of
from libs.template.errors import StackValidationFailed

SERVER_KEY: Final = sc.SERVER_KEY  # the get_server answer, and the data key of what it said
PORTS_KEY: Final = "ports"
IDS: Final = "ids"  # data: what the lookups found
EXISTING: Final = "existing"
CREATED: Final = "created"
# Data: the os-collect-config section given to a SOFTWARE_CONFIG server (its attribute).
COLLECT_KEY: Final = "os_collect_config"


def _collect_config(ctx: StepContext) -> tuple[dict[str, Any], StackUser] | None:
    """Where a SOFTWARE_CONFIG server's agent polls, with the stack user it polls as (None for another
    server, or with no API known). A create started again keeps the user it made."""
    if ctx.properties.get(s.USER_DATA_FORMAT) != s.SOFTWARE_CONFIG or not ctx.api_url:
        return None
    user = server_user(loads(ctx.data, COLLECT_KEY, {}), ctx.rng)
    return os_collect_config(api_url=ctx.api_url, project=ctx.project, stack_name=ctx.stack_name,
                             stack_id=ctx.stack_id, resource_name=ctx.resource_name, user=user), user


def list_ports(server_id: str) -> CloudCall:
    return network(PORTS_KEY, "ports", device_id=server_id)


def finished(ctx: StepContext, reason: str = "") -> StepResult:
    """The last step of create and update: keep what Nova and Neutron said of the server."""
    server = value(ctx.answers.get(SERVER_KEY))
    ports = value(ctx.answers.get(PORTS_KEY))
    if not isinstance(server, Mapping):
        return call("finish", sc.get_server(str(ctx.physical_id)), list_ports(str(ctx.physical_id)))
    return Done(data={SERVER_KEY: dumps(sc.kept_server(server)), PORTS_KEY: dumps(sc.kept_ports(ports)),
                      "phase": None, su.TODO: None, "net_keys": None, "quick_keys": None,
                      "flavor_id": None, LISTED: None, sf.ASSOCIATED: None, "floating_stage": None,
                      **dict.fromkeys(server_replace.DATA_KEYS)}, reason=reason)


class Server(ResourceType):
    """A Nova server."""

    type_name: ClassVar[str] = "OS::Nova::Server"
    description: ClassVar[str] = (
        "A Nova compute server (virtual machine), booted from an image or a volume, on the "
        "networks and with the flavor its properties give; resized or rebuilt in place when its "
        "flavor or image changes, as its update policies say.")
    support_status: ClassVar[SupportStatus] = SupportStatus()
    properties_schema: ClassVar[Mapping[str, PropSchema]] = s.PROPERTIES
    attributes_schema: ClassVar[Mapping[str, AttrSchema]] = s.ATTRIBUTES
    named_steps: ClassVar[tuple[str, ...]] = (su.RESIZE_STEP,)
    physical_name_limit: ClassVar[int | None] = 53  # Heat keeps server names short (hostnames)
    has_check: ClassVar[bool] = True
    prepares_replace: ClassVar[bool] = True  # the old server frees its ports first
    # Made again after going ERROR, a replacement still holds the ports it took (for a rollback), and
    # the server its stack user (one credential per resource, not one per try).
    kept_on_retry: ClassVar[tuple[str, ...]] = (server_replace.TAKEN, COLLECT_KEY)

    # ---- validation ---------------------------------------------------------------------------
    def validate(self, values: Mapping[str, Any] | None, *, resource_name: str, **options: Any
                 ) -> dict[str, Any]:
        typed = super().validate(values, resource_name=resource_name, **options)
        if options.get("strict_values", True):
            server_validation.validate(typed, resource_name)
        return typed

    def validate_typed(self, properties: Mapping[str, Any]) -> None:
        for index, entry in enumerate(properties.get(s.NETWORKS) or ()):
            if entry.get(s.NET_NETWORK) and entry.get(s.NET_UUID):
                raise StackValidationFailed(f"Cannot define the following properties at the same "
                                            f"time: {s.NETWORKS}[{index}].{s.NET_NETWORK}, "
                                            f"{s.NETWORKS}[{index}].{s.NET_UUID}")

    def software_reads(self, properties: Mapping[str, Any], physical_id: str | None) -> SoftwareReads | None:
        named = config_named(properties)  # a config's id as user_data: its text goes to Nova
        return SoftwareReads(configs=(named,)) if named is not None else None

    # ---- create -------------------------------------------------------------------------------
    def server_name(self, ctx: StepContext) -> str:
        return ctx.properties.get(s.NAME) or self.physical_resource_name(ctx)

    def _find_existing(self, ctx: StepContext) -> CloudCall:
        return compute(EXISTING, "servers", details=True, name=self.server_name(ctx))

    def start_create(self, ctx: StepContext) -> StepResult:
        replaced = server_replace.to_free(ctx)
        if replaced is not None:
            return server_replace.start(replaced)
        listed = retrying(ctx)
        found = [self._find_existing(ctx)] if listed else []
        return call("lookup", *sc.lookups(ctx.properties), *found, data={LISTED: "1" if listed else None})

    def start(self, action: Action, ctx: StepContext) -> StepResult:
        if action in (Action.SUSPEND, Action.RESUME):
            return server_power.start(action, ctx)
        return super().start(action, ctx)

    def check(self, action: Action, ctx: StepContext) -> StepResult:
        if action in (Action.SUSPEND, Action.RESUME):
            return server_power.check(action, ctx)
        if action is Action.CREATE:
            return self._check_create(ctx)
        if action is Action.DELETE:
            return server_delete.check(ctx, self._find_existing(ctx))
        if action is Action.UPDATE:
            if phase(ctx) in server_restore.PHASES:
                return server_restore.check(ctx, phase(ctx), self._update)
            return su.check_update(ctx, self.physical_resource_name(ctx), finished)
        if action is Action.CHECK:
            return self._check_check(ctx)
        return Done()

    def _check_create(self, ctx: StepContext) -> StepResult:
        step = phase(ctx)
        if step in server_replace.PHASES:
            return server_replace.check(ctx, step, self.start_create)
        if step == "lookup":
            return self._after_lookup(ctx)
        if step == "create":
            return self._after_create(ctx)
        if step == "refind":
            return self._after_refind(ctx)
        if step == "build":
            return self._after_build(ctx)
        if step == "ports":
            return self._after_ports(ctx)
        if step == "ports-find":
            return self._after_ports_find(ctx)
        if step == "floating":
            return self._after_floating(ctx)
        return finished(ctx)

    def _after_lookup(self, ctx: StepContext) -> StepResult:
        keys = [c.key for c in sc.lookups(ctx.properties)]
        if not answered(ctx, *keys, *([EXISTING] if ctx.data.get(LISTED) else [])):
            return self.start_create(ctx)  # the answers were lost: ask again
        failed = first_error(ctx, keys)
        if failed is not None:
            key, error = failed
            if error.kind is ErrorKind.NOT_FOUND:
                return sc.lookup_failure(key, ctx.properties)
            return cloud_failure(error)
        ids = sc.resolved_ids({key: value(ctx.answers[key]) for key in keys})
        data = {IDS: dumps(ids)}
        return self._adopt_or_create(ctx, value(ctx.answers.get(EXISTING)), ids, data)

    def _adopt_or_create(self, ctx: StepContext, listing: Any, ids: Mapping[str, Any],
                         data: Mapping[str, str | None]) -> StepResult:
        found = tagged(listing, ctx.cloud_tag)
        if found is not None:
            # A server this resource made before a crash: adopt it, make no second one.
            return call("build", sc.get_server(str(found["id"])), data=data, physical_id=str(found["id"]))
        return self._make_ports_or_server(ctx, ids, sp.made(ctx), data)

    def _make_ports_or_server(self, ctx: StepContext, ids: Mapping[str, Any], ports: Mapping[int, str],
                              data: Mapping[str, str | None], *, associated: bool = False) -> StepResult:
        missing = sp.create_calls(ctx, ids, ports)
        if missing:
            return call("ports", *missing, data={**data, sp.INTERNAL_PORTS: sp.kept(ports)})
        floating = sf.association_calls(ctx.properties, ports)
        if floating and not (associated or ctx.data.get(sf.ASSOCIATED)):
            return call("floating", *floating, data={**data, sp.INTERNAL_PORTS: sp.kept(ports)})
        with_ports = {**ids, **{sp.port_key(i): port_id for i, port_id in ports.items()}}
        collect = _collect_config(ctx)
        kwargs = sc.create_kwargs(ctx.properties, with_ports, name=self.server_name(ctx), tag=ctx.cloud_tag,
                                  metadata=server_metadata(collect[0], []) if collect else None,
                                  user_data=content_of(ctx.properties, software_of(ctx).configs))
        kept = {COLLECT_KEY: json.dumps(collect[0])} if collect else {}
        return call("create", compute(CREATED, "create_server", **kwargs), data={**data, **kept},
                    stack_user=collect[1].grant() if collect else None)

    def _after_ports(self, ctx: StepContext) -> StepResult:
        ids = loads(ctx.data, IDS, {})
        ports = sp.made(ctx)
        if not any(k.startswith("iport") for k in ctx.answers):
            return call("ports-find", sp.find_call(ctx))  # lost: which ports were made?
        for index in sp.wanted(ctx.properties):
            answer = ctx.answers.get(sp.port_key(index))
            if answer is not None and answer.ok:
                ports[index] = str(answer.value["id"])
        failed = first_error(ctx, [sp.port_key(i) for i in sp.wanted(ctx.properties)])
        if failed is not None:
            # The ports made are kept in data (and tagged): a delete removes them.
            return cloud_failure(failed[1])
        return self._make_ports_or_server(ctx, ids, ports, {sp.INTERNAL_PORTS: sp.kept(ports)})

    def _after_ports_find(self, ctx: StepContext) -> StepResult:
        answer = ctx.answers.get(sp.FOUND)
        if answer is None:
            return call("ports-find", sp.find_call(ctx))
        if answer.error is not None:
            return cloud_failure(answer.error)
        ports = {**sp.made(ctx), **sp.adopted(ctx, answer.value)}
        return self._make_ports_or_server(ctx, loads(ctx.data, IDS, {}), ports,
                                          {sp.INTERNAL_PORTS: sp.kept(ports)})

    def _after_floating(self, ctx: StepContext) -> StepResult:
        ports = sp.made(ctx)
        floating = sf.association_calls(ctx.properties, ports)
        if not answered(ctx, *(c.key for c in floating)):
            return call("floating", *floating)  # lost: the same request again
        failed = first_error(ctx, [c.key for c in floating])
        if failed is not None:
            return cloud_failure(failed[1])
        return self._make_ports_or_server(ctx, loads(ctx.data, IDS, {}), ports, {sf.ASSOCIATED: "1"},
                                          associated=True)

    def _after_create(self, ctx: StepContext) -> StepResult:
        answer = ctx.answers.get(CREATED)
        if answer is None:
            # The create's outcome was lost: a server may exist; find it before making another.
            return call("refind", self._find_existing(ctx))
        if answer.error is not None:
            return client_failure(Service.COMPUTE, answer.error)
        server_id = str(answer.value["id"])
        return call("build", sc.get_server(server_id), delay=poll_delay(ctx), physical_id=server_id,
                    data=ready_since(ctx))

    def _after_refind(self, ctx: StepContext) -> StepResult:
        answer = ctx.answers.get(EXISTING)
        if answer is None:
            return call("refind", self._find_existing(ctx))
        if answer.error is not None:
            return cloud_failure(answer.error)
        return self._adopt_or_create(ctx, answer.value, loads(ctx.data, IDS, {}), {})

    def _after_build(self, ctx: StepContext) -> StepResult:
        server_id = str(ctx.physical_id)
        server = polled(ctx, SERVER_KEY, "build", sc.get_server(server_id), gone=sc.gone(server_id))
        if not isinstance(server, Mapping):
            return server
        status = sc.server_status(server)
        if status == "ACTIVE":
            return call("finish", sc.get_server(server_id), list_ports(server_id))
        if status in sc.DEFERRED:
            return wait_ready(ctx, "build", sc.get_server(server_id), what="Server", ready="ACTIVE",
                              status=status)
        if status == "ERROR":
            return sc.in_error(server)
        return Failed(f'Server is not active - Unknown status {status} due to "Unknown"',
                      error="ResourceUnknownStatus")

    # ---- delete -------------------------------------------------------------------------------
    def start_delete(self, ctx: StepContext) -> StepResult:
        return server_delete.start(ctx, self._find_existing(ctx))

    # ---- check --------------------------------------------------------------------------------
    def start_check(self, ctx: StepContext) -> StepResult:
        if not ctx.physical_id:
            return Failed("Resource not created")
        return call("check", sc.get_server(ctx.physical_id))

    def _check_check(self, ctx: StepContext) -> StepResult:
        answer = ctx.answers.get(SERVER_KEY)
        if answer is None:
            return self.start_check(ctx)
        if answer.error is not None:
            return cloud_failure(answer.error)
        status = sc.server_status(answer.value)
        if status != "ACTIVE":
            return Failed(f"'status': expected 'ACTIVE', got '{status}'", error="Error")
        return Done(data={SERVER_KEY: dumps(sc.kept_server(answer.value)), "phase": None})

    # ---- update -------------------------------------------------------------------------------
    def replace_for_changes(self, changed: set[str], old_properties: Mapping[str, Any],
                            new_properties: Mapping[str, Any]) -> bool:
        return su.needs_replace(changed, old_properties, new_properties)

    def start_update(self, ctx: StepContext) -> StepResult:
        if server_restore.to_restore(ctx):
            return server_restore.start(ctx)  # a rollback's: the ports a failed replacement took first
        return self._update(ctx)

    def _update(self, ctx: StepContext) -> StepResult:
        return su.start_update(ctx, self.physical_resource_name(ctx), finished)

    # ---- observe ------------------------------------------------------------------------------
    def observe_call(self, ctx: StepContext) -> CloudCall | None:
        if not ctx.physical_id:
            return None
        return compute(OBSERVE_KEY, "get_server", ctx.physical_id)

    def observe(self, ctx: StepContext) -> Observed | None:
        answer = ctx.answers.get(OBSERVE_KEY)
        if answer is None:
            return None
        if answer.not_found:
            return Observed(gone=True)
        if answer.error is not None:
            return None
        return self.observe_listed(ctx, answer.value)

    def list_call(self) -> CloudCall | None:
        return compute("servers", "servers", details=True)

    def observe_listed(self, ctx: StepContext, listed: Mapping[str, Any] | None) -> Observed | None:
        if listed is None or sc.server_status(listed) in ("DELETED", "SOFT_DELETED"):
            return Observed(gone=True)
        state = sc.server_status(listed)
        error = sc.in_error(listed).message if state == "ERROR" else None
        if state == "SHUTOFF":  # Ember never stops a server (its suspend is Nova's suspend)
            error = "Server is SHUTOFF: stopped outside Ember"
        live: dict[str, Any] = {}
        metadata = dict(listed.get("metadata") or {})
        metadata.pop(TAG_KEY, None)
        applied_meta = {k: v if isinstance(v, str) else json.dumps(v)
                        for k, v in (ctx.properties.get(s.METADATA) or {}).items()}
        # Values Nova holds as text stand for the applied ones when they say the same.
        live[s.METADATA] = ctx.properties.get(s.METADATA) if metadata == applied_meta else metadata
        flavor = listed.get("flavor") or {}
        names = {flavor.get("original_name"), flavor.get("name"), flavor.get("id")} - {None}
        if names and ctx.properties.get(s.FLAVOR) not in names:
            live[s.FLAVOR] = flavor.get("original_name") or flavor.get("name") or flavor.get("id")
        if ctx.properties.get(s.NAME) and listed.get("name") != ctx.properties[s.NAME]:
            live[s.NAME] = listed.get("name")
        return Observed(properties=live, error=error)

    # ---- attributes ---------------------------------------------------------------------------
    def resolve_attribute(self, name: str, physical_id: str | None, data: Mapping[str, str],
                          properties: Mapping[str, Any]) -> Any:
        if physical_id is None:
            return None
        server = loads(data, SERVER_KEY, {})
        ports = loads(data, PORTS_KEY, [])
        if name == s.ATTR_NAME:
            return server.get("name") or properties.get(s.NAME)
        if name == s.FIRST_ADDRESS:
            return sc.first_address(server)
        if name == s.ADDRESSES:
            return sc.addresses(server, ports)
        if name == s.NETWORKS_ATTR:
            return sc.networks(server, ports)
        if name == s.INSTANCE_NAME:
            return server.get("instance_name")
        if name == s.ACCESS_IPV4:
            return server.get("access_ipv4") or ""
        if name == s.ACCESS_IPV6:
            return server.get("access_ipv6") or ""
        if name == s.TAGS_ATTR:
            return server.get("tags")
        if name == s.CONSOLE_URLS:
            return {}  # consoles are asked for on demand in Heat; Ember keeps none
        if name == s.OS_COLLECT_CONFIG:
            return loads(data, COLLECT_KEY, {})
        return None

    def show(self, physical_id: str, data: Mapping[str, str]) -> Any:
        return loads(data, SERVER_KEY)
