"""Suspending and resuming an ``OS::Nova::Server``: ask Nova, then wait for SUSPENDED or ACTIVE.

As in Heat: a server already in the wanted state is left alone; a server Nova does
not know fails the action ("Failed to find server <id>"); any state Nova should not
pass through on the way fails it with Heat's unknown-status reason.
"""

from __future__ import annotations

from typing import Final

from libs.cloud.calls import ErrorKind
from libs.engine.status import Action
from libs.resources import server_create as sc
from libs.resources.cloud_steps import call, cloud_failure, compute, phase, poll_delay
from libs.resources.steps import Done, Failed, StepContext, StepResult

SERVER_KEY: Final = "server"
_TARGET: Final = {Action.SUSPEND: "SUSPENDED", Action.RESUME: "ACTIVE"}
_METHOD: Final = {Action.SUSPEND: "suspend_server", Action.RESUME: "resume_server"}


def start(action: Action, ctx: StepContext) -> StepResult:
    if not ctx.physical_id:
        verb = "suspend" if action is Action.SUSPEND else "resume"
        return Failed(f"Cannot {verb} {ctx.resource_name}, resource_id not set", error="Error")
    return call("look", compute(SERVER_KEY, "get_server", ctx.physical_id))


def check(action: Action, ctx: StepContext) -> StepResult:
    server_id = str(ctx.physical_id)
    get = compute(SERVER_KEY, "get_server", server_id)
    step = phase(ctx)
    if step == "sent":
        answer = ctx.answers.get("power")
        if answer is None:
            return start(action, ctx)  # lost: look again before asking again
        if answer.error is not None and answer.error.kind is not ErrorKind.CONFLICT:
            return cloud_failure(answer.error)
        return call("wait", get, delay=poll_delay(ctx))
    answer = ctx.answers.get(SERVER_KEY)
    if answer is None:
        return call(step or "look", get, delay=poll_delay(ctx))
    if step == "look" and answer.not_found:
        return Failed(f"Failed to find server {server_id}", error="NotFound")
    if answer.error is not None and not answer.not_found:
        return cloud_failure(answer.error)
    server = answer.value or {}
    status = sc.server_status(server)
    if status == _TARGET[action]:
        return Done(data={"phase": None})
    if step == "look":
        return call("sent", compute("power", _METHOD[action], server_id))
    if answer.not_found or status in sc.DEFERRED or (action is Action.SUSPEND and status == "ACTIVE"):
        return call("wait", get, delay=poll_delay(ctx))
    if action is Action.SUSPEND:
        return Failed(f'Suspend of server {server.get("name")} failed - Unknown status {status} due to '
                      f'"Unknown"', error="ResourceUnknownStatus")
    if status == "ERROR":
        return sc.in_error(server)
    return Failed(f'Server is not active - Unknown status {status} due to "Unknown"',
                  error="ResourceUnknownStatus")
