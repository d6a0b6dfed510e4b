"""Deleting an ``OS::Nova::Server``: ask Nova, wait for its 404, then delete the ports it made.

A 404 at any point means the server is gone. A delete with no physical id looks for a
tagged server first (the create may have made one whose answer was lost). A server
that goes to ERROR while deleting fails with Heat's reason. Ports the server made for
its own ``networks`` entries (:mod:`libs.resources.server_ports`) are then found by
their tag and deleted.
"""

from __future__ import annotations

from libs.cloud.calls import CloudCall
from libs.resources import server_create as sc
from libs.resources import server_ports as sp
from libs.resources.cloud_steps import call, cloud_failure, compute, phase, poll_delay, tagged
from libs.resources.steps import Done, Failed, StepContext, StepResult

DELETED = "deleted"
EXISTING = "existing"


def start(ctx: StepContext, find_existing: CloudCall) -> StepResult:
    if not ctx.physical_id:
        return call("delete-find", find_existing)
    return call("deleting", compute(DELETED, "delete_server", ctx.physical_id, ignore_missing=True))

def check(ctx: StepContext, find_existing: CloudCall) -> StepResult:
    step = phase(ctx)
    if step.startswith("ports-delete"):
        return _delete_ports(ctx, step)
    if step == "delete-find":
        answer = ctx.answers.get(EXISTING)
        if answer is None:
            return start(ctx, find_existing)
        if answer.error is not None:
            return cloud_failure(answer.error)
        found = tagged(answer.value, ctx.cloud_tag)
        if found is None:
            return _server_gone(ctx)
        return call("deleting", compute(DELETED, "delete_server", str(found["id"]), ignore_missing=True),
                    physical_id=str(found["id"]))
    if step == "deleting":
        answer = ctx.answers.get(DELETED)
        if answer is None:
            return start(ctx, find_existing)
        if answer.not_found:
            return _server_gone(ctx)
        if answer.error is not None:
            return cloud_failure(answer.error)
        return call("gone", sc.get_server(str(ctx.physical_id)), delay=poll_delay(ctx))
    return _wait_gone(ctx)

def _wait_gone(ctx: StepContext) -> StepResult:
    server_id = str(ctx.physical_id)
    answer = ctx.answers.get(sc.SERVER_KEY)
    if answer is None:
        return call("gone", sc.get_server(server_id), delay=poll_delay(ctx))
    if answer.not_found:
        return _server_gone(ctx)
    if answer.error is not None:
        return cloud_failure(answer.error)
    server = answer.value
    status = sc.server_status(server)
    if status == "DELETED":
        return _server_gone(ctx)
    if status == "SOFT_DELETED":
        return call("gone", compute("force", "delete_server", server_id, force=True),
                    sc.get_server(server_id), delay=poll_delay(ctx))
    if status == "ERROR" and server.get("task_state") != "deleting":
        fault = server.get("fault") or {}
        return Failed(f'Went to status ERROR due to "Server {server.get("name")} delete failed: '
                      f'({fault.get("code")}) {fault.get("message", "Unknown")}"',
                      error="ResourceInError")
    return call("gone", sc.get_server(server_id), delay=poll_delay(ctx))

def _server_gone(ctx: StepContext) -> StepResult:
    """The server is gone; the ports it made for itself go next (found by their tag)."""
    if not sp.wanted(ctx.properties) and not sp.made(ctx):
        return Done(data={"phase": None})
    return call("ports-delete-find", sp.find_call(ctx))

def _delete_ports(ctx: StepContext, step: str) -> StepResult:
    if step == "ports-delete-find":
        answer = ctx.answers.get(sp.FOUND)
        if answer is None:
            return call("ports-delete-find", sp.find_call(ctx))
        if answer.error is not None:
            return cloud_failure(answer.error)
        deletes = sp.delete_calls(answer.value, ctx.cloud_tag)
        if not deletes:
            return Done(data={"phase": None, sp.INTERNAL_PORTS: None})
        return call("ports-delete-sent", *deletes)
    failed = next((a.error for a in ctx.answers.values() if a.error is not None and not a.not_found),
                  None)
    if failed is not None:
        return cloud_failure(failed)
    if not ctx.answers:
        return call("ports-delete-find", sp.find_call(ctx))  # lost: look again
    return Done(data={"phase": None, sp.INTERNAL_PORTS: None})
