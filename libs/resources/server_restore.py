"""Heat's ``restore_prev_rsrc`` for ``OS::Nova::Server``: a rollback gives the old server its ports back.

A replacement takes the old server's interfaces before it boots, and records what it took
(:mod:`libs.resources.server_replace`). Should it fail and the stack roll back, the old
server is the stack's server again, with no network. So the rollback's update of the old
server (its first step is given the failed replacement as ``ctx.replaced_by``) starts by
taking back what was taken, as Heat does:

1. wait while the replacement still builds (Nova detaches nothing from a server in BUILD);
2. detach every interface of the replacement (the rollback deletes it next), and wait until
   Neutron shows them free;
3. attach to the old server each port taken from it that it does not hold: the same port
   where it still exists; where Nova deleted it on the detach (a port Nova made on a
   ``network``), a new one on its network, asking for the addresses it had, or for any
   address there when another port took one of them meanwhile (the server is back on its
   network rather than the rollback failed with the server on none).

Then the update proper runs. A replacement that made no server has nothing to detach. Each
look is made again after lost answers, and what the old server holds already (a rollback
run again) is not attached twice.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, Final

from libs.cloud.calls import CloudCall, ErrorKind
from libs.resources import cloud_steps as cs
from libs.resources import server_create as sc
from libs.resources import server_replace
from libs.resources.steps import Call, Done, StepContext, StepResult, Wait

NEW_SERVER: Final = "restore_server"  # answer: the replacement server
NEW_PORTS: Final = "restore_new_ports"  # answer: the ports bound to it
OWN_PORTS: Final = "restore_own_ports"  # answer: the ports bound to this server
FROM: Final = "restore_from"  # data: the replacement's server id ("" when it made none)
TAKEN: Final = "restore_ports"  # data: the ports taken from this server (a JSON list)
DETACHING: Final = "restore_detaching"  # data: the ports being detached from the replacement
ADDRESSED: Final = "restore_addressed"  # data: the attaches that asked for the old addresses
PHASES: Final = frozenset({"restore", "restore-detach", "restore-detached", "restore-look",
                           "restore-attach"})
DATA_KEYS: Final = (FROM, TAKEN, DETACHING, ADDRESSED)

Update = Callable[[StepContext], StepResult]


def to_restore(ctx: StepContext) -> bool:
    """Whether this update starts by taking back what a failed replacement took from the server."""
    given = ctx.replaced_by
    return (given is not None and bool(ctx.physical_id)
            and bool(cs.loads(given.data, server_replace.TAKEN, [])))


def start(ctx: StepContext) -> StepResult:
    assert ctx.replaced_by is not None
    new_id = ctx.replaced_by.physical_id or ""
    data = {FROM: new_id, TAKEN: ctx.replaced_by.data[server_replace.TAKEN]}
    if not new_id:
        return _look(ctx, data)
    return _at_replacement(new_id, data=data)


def _at_replacement(new_id: str, *, data: Mapping[str, str | None] | None = None, delay: float = 0.0) -> Call:
    return cs.call("restore", cs.compute(NEW_SERVER, "get_server", new_id), _bound(NEW_PORTS, new_id),
                   data=data, delay=delay)


def _bound(key: str, server_id: str) -> CloudCall:
    return cs.network(key, "ports", device_id=server_id)


def _port_key(index: int) -> str:
    return f"restore_port_{index}"


def _taken(data: Mapping[str, str]) -> list[dict[str, Any]]:
    return [dict(p) for p in cs.loads(data, TAKEN, [])]


def _look(ctx: StepContext, data: Mapping[str, str | None] | None = None) -> Call:
    """Look at what this server holds and at each port taken from it."""
    taken = _taken({**ctx.data, **{k: v for k, v in (data or {}).items() if v is not None}})
    ports = [cs.network(_port_key(i), "get_port", str(p["id"])) for i, p in enumerate(taken)]
    return cs.call("restore-look", _bound(OWN_PORTS, str(ctx.physical_id)), *ports, data=data)


def check(ctx: StepContext, step: str, update: Update) -> StepResult:
    """The step after ``step`` (one of :data:`PHASES`); ``update`` is the update proper, run once restored."""
    new_id = str(ctx.data.get(FROM) or "")
    if step == "restore":
        return _after_replacement(ctx, new_id)
    if step == "restore-detach":
        failed = cs.first_error(ctx, [k for k in ctx.answers if k.startswith("detach_")])
        if failed is not None and failed[1].kind is not ErrorKind.NOT_FOUND:
            return cs.cloud_failure(failed[1])
        return cs.call("restore-detached", _bound(NEW_PORTS, new_id))
    if step == "restore-detached":
        return _after_detached(ctx, new_id)
    if step == "restore-look":
        return _after_look(ctx, update)
    if not ctx.answers:  # the attach answers were lost: look again (nothing is attached twice)
        return _look(ctx)
    return _after_attach(ctx, update)


def _after_replacement(ctx: StepContext, new_id: str) -> StepResult:
    if not cs.answered(ctx, NEW_SERVER, NEW_PORTS):
        return _at_replacement(new_id)
    server = ctx.answers[NEW_SERVER]
    if server.not_found:
        return _look(ctx)  # gone: it holds nothing
    failed = cs.first_error(ctx, [NEW_SERVER, NEW_PORTS])
    if failed is not None:
        return cs.cloud_failure(failed[1])
    if sc.server_status(server.value) == "BUILD":
        return _at_replacement(new_id, delay=cs.poll_delay(ctx))
    ports = [str(p["id"]) for p in cs.value(ctx.answers[NEW_PORTS]) or ()]
    if not ports:
        return _look(ctx)
    # All of them, as Heat detaches all the replacement's: an address the old server had may be
    # held by a port Nova made for the replacement (deleted on the detach).
    detach = [cs.compute(f"detach_{i}", "delete_server_interface", port_id, server=new_id)
              for i, port_id in enumerate(ports)]
    return cs.call("restore-detach", *detach, data={DETACHING: cs.dumps(ports)})


def _after_detached(ctx: StepContext, new_id: str) -> StepResult:
    answer = ctx.answers.get(NEW_PORTS)
    if answer is None:  # lost: ask again
        return cs.call("restore-detached", _bound(NEW_PORTS, new_id))
    if answer.error is not None:
        return cs.cloud_failure(answer.error)
    detaching = set(cs.loads(ctx.data, DETACHING, []))
    if detaching & {str(p.get("id")) for p in cs.value(answer) or ()}:
        return cs.call("restore-detached", _bound(NEW_PORTS, new_id), delay=cs.poll_delay(ctx))
    return _look(ctx, {DETACHING: None})


def _after_look(ctx: StepContext, update: Update) -> StepResult:
    taken = _taken(ctx.data)
    keys = [_port_key(i) for i in range(len(taken))]
    if not cs.answered(ctx, OWN_PORTS, *keys):
        return _look(ctx)
    failed = cs.first_error(ctx, [OWN_PORTS, *(k for k in keys if not ctx.answers[k].not_found)])
    if failed is not None:
        return cs.cloud_failure(failed[1])
    held = cs.value(ctx.answers[OWN_PORTS]) or []
    return _attach(ctx, taken, [ctx.answers[k].ok for k in keys], held, update)


def _after_attach(ctx: StepContext, update: Update) -> StepResult:
    addressed = set(cs.loads(ctx.data, ADDRESSED, []))
    taken = _taken(ctx.data)
    again: list[CloudCall] = []
    for key in sorted(ctx.answers):
        error = ctx.answers[key].error
        if error is None:
            continue
        index = int(key.removeprefix("attach_"))
        if error.kind is not ErrorKind.CONFLICT or index not in addressed:
            return cs.cloud_failure(error)
        again.append(_new_port(index, str(ctx.physical_id), taken[index], addresses=False))
    if again:  # an old address is another port's now: a new one anywhere on the network
        return cs.call("restore-attach", *again, data={ADDRESSED: cs.dumps([])})
    return _restored(ctx, update)


def _new_port(index: int, server_id: str, port: Mapping[str, Any], *, addresses: bool) -> CloudCall:
    """Attach a port made on the network of ``port`` (one Nova deleted), at its addresses if asked."""
    wanted = [{"ip_address": ip["ip_address"]} for ip in port.get("fixed_ips") or ()
              if ip.get("ip_address")] if addresses else []
    return cs.compute(f"attach_{index}", "create_server_interface", server_id,
                      net_id=str(port.get("network_id")), **({"fixed_ips": wanted} if wanted else {}))


def _attach(ctx: StepContext, taken: list[dict[str, Any]], exists: list[bool], held: list[Any],
            update: Update) -> StepResult:
    server_id = str(ctx.physical_id)
    held_ids = {str(p.get("id")) for p in held}
    taken_ids = {str(p["id"]) for p in taken}
    # Ports on the server that were not taken from it: made again by an earlier restore.
    spare = collections.Counter(str(p.get("network_id")) for p in held if str(p.get("id")) not in taken_ids)
    calls = []
    addressed = []
    for index, (port, alive) in enumerate(zip(taken, exists, strict=True)):
        if alive:
            if str(port["id"]) not in held_ids:
                calls.append(cs.compute(f"attach_{index}", "create_server_interface", server_id,
                                        port_id=str(port["id"])))
            continue
        net_id = str(port.get("network_id"))
        if spare[net_id] > 0:
            spare[net_id] -= 1
            continue
        calls.append(_new_port(index, server_id, port, addresses=True))
        addressed.append(index)
    if not calls:
        return _restored(ctx, update)
    return cs.call("restore-attach", *calls, data={ADDRESSED: cs.dumps(addressed)})


def _restored(ctx: StepContext, update: Update) -> StepResult:
    """The update proper, once the server holds its ports again."""
    cleared = dict.fromkeys(DATA_KEYS)
    kept = {k: v for k, v in ctx.data.items() if k not in cleared}
    result = update(dataclasses.replace(ctx, data=kept, answers={}, replaced_by=None))
    if isinstance(result, Call | Wait | Done):
        return dataclasses.replace(result, data={**cleared, **result.data})
    return result
