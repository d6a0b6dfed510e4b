"""Heat's ``prepare_for_replace`` for ``OS::Nova::Server``: the old server lets go of its ports.

A replacement is made before the server it replaces is deleted, and a port is bound
to one server at a time: booting the new one on the old one's ``port`` would get Nova's
409 "Port ... is still in use". So, as Heat does, the first steps of the replacement's
create detach every interface of the old server (the ports the template gives it, those
it made for itself, those Nova made: Nova deletes its own on detach), wait until Neutron
shows them free, and only then make the new server. An old server that is gone or in
ERROR is left as it is (Nova detaches nothing from a server in ERROR). The old server
itself goes when the stack cleans up, as for any replacement. What was taken is recorded
(TAKEN) until the replacement completes: should it fail and the stack roll back, the old
server takes it back (:mod:`libs.resources.server_restore`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Final

from libs.cloud.calls import CloudCall, ErrorKind
from libs.resources import server_create as sc
from libs.resources.cloud_steps import (
    answered,
    call,
    cloud_failure,
    compute,
    dumps,
    first_error,
    loads,
    network,
    poll_delay,
    value,
)
from libs.resources.steps import Call, StepContext, StepResult

OLD_SERVER: Final = "replaced_server"  # answer: the old server
OLD_PORTS: Final = "replaced_ports"  # answer: the ports bound to it
REPLACED_ID: Final = "replaced_id"  # data: the old server's id
FREEING: Final = "freeing"  # data: the ports being detached (a JSON list)
FREED: Final = "freed"  # data: "1" once the old server holds none of them
TAKEN: Final = "taken_ports"  # data: the ports detached, as Neutron showed them (a JSON list)
PHASES: Final = frozenset({"free", "detach", "detached"})
# What the replacement's create keeps only while it runs; TAKEN outlives it: a rollback after
# the replacement was made gives those ports back too (libs/resources/server_restore.py).
DATA_KEYS: Final = (REPLACED_ID, FREEING, FREED)


def to_free(ctx: StepContext) -> str | None:
    """The id of the server this create replaces, while its ports are still to be freed."""
    if ctx.replaces is None or not ctx.replaces.physical_id or ctx.data.get(FREED):
        return None
    return ctx.replaces.physical_id


def start(old_id: str) -> StepResult:
    return call("free", compute(OLD_SERVER, "get_server", old_id), _listing(old_id),
                data={REPLACED_ID: old_id})


def _listing(old_id: str) -> CloudCall:
    return network(OLD_PORTS, "ports", device_id=old_id)


def check(ctx: StepContext, step: str, create: Callable[[StepContext], StepResult]) -> StepResult:
    """The step after ``step`` (one of :data:`PHASES`); ``create`` makes the server once freed."""
    old_id = str(ctx.data.get(REPLACED_ID) or "")
    if step == "free":
        return _after_look(ctx, old_id, create)
    if step == "detach":
        failed = first_error(ctx, [k for k in ctx.answers if k.startswith("detach_")])
        if failed is not None and failed[1].kind is not ErrorKind.NOT_FOUND:
            return cloud_failure(failed[1])
        return call("detached", _listing(old_id))
    answer = ctx.answers.get(OLD_PORTS)
    if answer is None:  # lost: ask again
        return call("detached", _listing(old_id))
    if answer.error is not None:
        return cloud_failure(answer.error)
    freeing = set(loads(ctx.data, FREEING, []))
    if freeing & {str(p.get("id")) for p in value(answer) or ()}:
        return call("detached", _listing(old_id), delay=poll_delay(ctx))
    return _freed(ctx, create)


def _after_look(ctx: StepContext, old_id: str, create: Callable[[StepContext], StepResult]) -> StepResult:
    if not answered(ctx, OLD_SERVER, OLD_PORTS):
        return start(old_id)
    server = ctx.answers[OLD_SERVER]
    if server.not_found or (server.ok and sc.server_status(server.value) == "ERROR"):
        return _freed(ctx, create)
    failed = first_error(ctx, [OLD_SERVER, OLD_PORTS])
    if failed is not None:
        return cloud_failure(failed[1])
    listing = value(ctx.answers[OLD_PORTS]) or ()
    ports = [str(p["id"]) for p in listing]
    if not ports:
        return _freed(ctx, create)
    detach = [compute(f"detach_{i}", "delete_server_interface", port_id, server=old_id)
              for i, port_id in enumerate(ports)]
    return call("detach", *detach, data={FREEING: dumps(ports), TAKEN: dumps(sc.kept_ports(listing))})


def _freed(ctx: StepContext, create: Callable[[StepContext], StepResult]) -> StepResult:
    """The create proper, recording that the old server's ports are free."""
    marked = {FREED: "1", FREEING: None}
    result = create(dataclasses.replace(ctx, data={**ctx.data, FREED: "1"}, answers={}))
    if isinstance(result, Call):
        return dataclasses.replace(result, data={**marked, **result.data})
    return result
