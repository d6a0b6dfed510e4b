"""Scaling by NATS request: ``<prefix>.scale.<project>.<stack>.<group>``, answered with the capacity.

The autoscaling integration of the design: a program (a metrics pipeline, an
operator) sends a :class:`ScaleRequest` (``adjust`` by some members, or set
``capacity``) and gets the group's capacity back, the same scaling a policy's
signal does. ``<stack>`` is the stack's id or name, ``<group>`` the group
resource's name; any api process may answer (one queue group).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from aiohttp import web

from libs import scaling
from libs.db import stacks
from libs.messaging.bus import Message
from libs.messaging.payloads import PayloadError, ScaleReply, ScaleRequest, decode
from services.api.keys import EVALUATION, REGISTRY, RUNTIME
from services.api.nats_requests import answering


async def _answer(app: web.Application, msg: Message) -> ScaleReply:
    parts = msg.subject.split(".")
    if len(parts) < 5:
        return ScaleReply(error="expected <prefix>.scale.<project>.<stack>.<group>")
    project, stack_ref, group_name = parts[-3], parts[-2], parts[-1]
    try:
        request = decode(msg.data)
    except PayloadError as exc:
        return ScaleReply(error=str(exc))
    if not isinstance(request, ScaleRequest) or (request.adjust is None) == (request.capacity is None):
        return ScaleReply(error="a scale request has exactly one of adjust and capacity")
    rt = app[RUNTIME]
    async with rt.pool.acquire() as conn:
        stack = await stacks.identify(conn, project, stack_ref)
        group = await scaling.find_group(conn, stack.id, group_name) if stack is not None else None
    if stack is None or group is None or group.type != "OS::Heat::AutoScalingGroup":
        return ScaleReply(error=f"no auto scaling group {group_name} in stack {stack_ref}")
    change = (scaling.Adjustment("exact_capacity", float(request.capacity)) if request.capacity is not None
              else scaling.Adjustment("change_in_capacity", float(request.adjust or 0)))
    capacity = await scaling.scale(rt.pool, rt.bus, app[REGISTRY], stack, group=group, change=change,
                                   evaluation=app[EVALUATION].on_behalf_of(project))
    return ScaleReply(capacity=capacity)


async def responder_ctx(app: web.Application) -> AsyncIterator[None]:
    async with answering(app, app[RUNTIME].names.scale_all, "scale request", _answer,
                         lambda error: ScaleReply(error=error)):
        yield
