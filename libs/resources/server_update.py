"""``OS::Nova::Server`` updates in place: which changes replace the server, and the update's steps.

Heat's rules: a flavor change resizes in place unless ``flavor_update_policy`` is
REPLACE; an image change rebuilds in place unless ``image_update_policy`` is REPLACE
(so "an image change replaces a server" needs ``image_update_policy: REPLACE``);
a ``user_data`` change replaces unless ``user_data_update_policy`` is IGNORE or REBUILD.
Name, metadata, tags and admin_pass change in place at once.

The update runs its stages in order, the rest kept in ``data["todo"]``: ``quick``
(rename, metadata, tags, password), ``floating-off`` (floating IPs let go),
``networks`` (interfaces detached and attached), ``floating-on`` (floating IPs pointed at
their entries' ports: :mod:`libs.resources.server_floating`), ``flavor`` (find the flavor, resize, wait for
VERIFY_RESIZE, then the named step ``resize`` where a breakpoint ``update:resize``
may hold the server before the confirm, confirm, wait for ACTIVE), ``image`` or
``user_data`` (rebuild, wait while REBUILD), then the server and ports are read again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, Final

from libs.cloud.calls import CloudCall, ErrorKind
from libs.resources import server_create as sc
from libs.resources import server_floating as sf
from libs.resources import server_networks as sn
from libs.resources import server_ports as sp
from libs.resources import server_schema as s
from libs.resources.cloud_steps import (
    TAG_KEY,
    call,
    cloud_failure,
    compute,
    dumps,
    image,
    loads,
    network,
    phase,
    poll_delay,
    polled,
)
from libs.resources.steps import Call, Failed, StepContext, StepResult, Wait
from libs.resources.user_data import encoded

TODO: Final = "todo"
RESIZE_STEP: Final = "resize"
SERVER_KEY: Final = "server"

Finish = Callable[[StepContext], StepResult]


def _policy(name: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> Any:
    return new.get(name) or old.get(name)


def needs_replace(changed: set[str], old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Heat's ``needs_replace_with_prop_diff`` for servers."""
    if s.FLAVOR in changed and _policy(s.FLAVOR_UPDATE_POLICY, old, new) == "REPLACE":
        return True
    if s.IMAGE in changed and _policy(s.IMAGE_UPDATE_POLICY, old, new) == "REPLACE":
        return True
    if s.USER_DATA in changed and _policy(s.USER_DATA_UPDATE_POLICY, old, new) == "REPLACE":
        return True
    # Interfaces are attached and detached in place, but for allocate_network (auto/none).
    old_nets, new_nets = old.get(s.NETWORKS), new.get(s.NETWORKS)
    return s.NETWORKS in changed and sn.differ(old_nets, new_nets) and not sn.in_place(old_nets, new_nets)


def _changed(ctx: StepContext) -> set[str]:
    old = ctx.old_properties or {}
    return {key for key in ctx.properties if old.get(key) != ctx.properties.get(key)}


def _quick_calls(ctx: StepContext, physical_name: str) -> list[CloudCall]:
    server_id = str(ctx.physical_id)
    old = ctx.old_properties or {}
    changed = _changed(ctx)
    calls: list[CloudCall] = []
    if s.NAME in changed:
        calls.append(compute("rename", "update_server", server_id,
                             name=ctx.properties.get(s.NAME) or physical_name))
    if s.METADATA in changed:
        new_meta = sc.serialized_metadata(ctx.properties.get(s.METADATA), ctx.cloud_tag)
        calls.append(compute("metadata", "set_server_metadata", server_id, **new_meta))
        removed = sorted(set(old.get(s.METADATA) or {}) - set(new_meta) - {TAG_KEY})
        if removed:
            calls.append(compute("metadata_removed", "delete_server_metadata", server_id, keys=removed))
    if s.TAGS in changed:
        old_tags, new_tags = set(old.get(s.TAGS) or ()), set(ctx.properties.get(s.TAGS) or ())
        calls += [compute(f"tag_remove_{i}", "remove_tag_from_server", server_id, tag)
                  for i, tag in enumerate(sorted(old_tags - new_tags))]
        calls += [compute(f"tag_add_{i}", "add_tag_to_server", server_id, tag)
                  for i, tag in enumerate(sorted(new_tags - old_tags))]
    if s.ADMIN_PASS in changed and s.IMAGE not in changed and ctx.properties.get(s.ADMIN_PASS):
        calls.append(compute("password", "change_server_password", server_id, ctx.properties[s.ADMIN_PASS]))
    return calls


def _floating(ctx: StepContext) -> tuple[list[CloudCall], list[CloudCall]]:
    old, new = _entries(ctx.old_properties), _entries(ctx.properties)
    _, _, kept = sn.plan(old, new)
    return sf.update_calls(old, new, kept, sp.made(ctx))


def _stages(ctx: StepContext) -> list[str]:
    changed = _changed(ctx)
    stages = []
    old = ctx.old_properties or {}
    floating_off, floating_on = _floating(ctx) if s.NETWORKS in changed else ([], [])
    if floating_off:
        stages.append("floating-off")
    if s.NETWORKS in changed and sn.differ(old.get(s.NETWORKS), ctx.properties.get(s.NETWORKS)):
        stages.append("networks")
    if floating_on:
        stages.append("floating-on")
    if s.FLAVOR in changed:
        stages.append("flavor")
    if s.IMAGE in changed:
        stages.append("image")
    elif s.USER_DATA in changed and ctx.properties.get(s.USER_DATA_UPDATE_POLICY) == "REBUILD":
        stages.append("user_data")
    return stages


def start_update(ctx: StepContext, physical_name: str, finish: Finish) -> StepResult:
    quick = _quick_calls(ctx, physical_name)
    todo = dumps(_stages(ctx))
    if quick:
        return call("quick", *quick, data={TODO: todo, "quick_keys": dumps([c.key for c in quick])})
    return _next_stage(ctx, _stages(ctx), finish)


def _next_stage(ctx: StepContext, todo: list[str], finish: Finish) -> StepResult:
    server_id = str(ctx.physical_id)
    if not todo:
        return call("finish", compute(SERVER_KEY, "get_server", server_id),
                    network("ports", "ports", device_id=server_id), data={TODO: dumps([])})
    stage, rest = todo[0], dumps(todo[1:])
    if stage in ("floating-off", "floating-on"):
        calls = _floating(ctx)[stage == "floating-on"]
        return call("floating-sent", *calls, data={TODO: rest, "floating_stage": stage})
    if stage == "networks":
        _, added, _ = sn.plan(_entries(ctx.old_properties), _entries(ctx.properties))
        finds = sn.lookups(_entries(ctx.properties), added)
        if finds:
            return call("net-find", *finds, data={TODO: rest})
        return _network_changes(ctx, {}, rest, finish)
    if stage == "flavor":
        return call("resize-find", compute("flavor", "find_flavor", ctx.properties[s.FLAVOR],
                                           ignore_missing=False), data={TODO: rest})
    if stage == "image":
        return call("rebuild-find", image("image", "find_image", ctx.properties[s.IMAGE],
                                          ignore_missing=False), data={TODO: rest})
    # user_data with REBUILD: the server is rebuilt from the image it has, with the new user data.
    server = loads(ctx.data, SERVER_KEY, {})
    image_id = (server.get("image") or {}).get("id") or loads(ctx.data, "ids", {}).get(sc.IMAGE_KEY)
    return call("rebuild-sent", _rebuild(ctx, image_id, with_user_data=True), data={TODO: rest})


def _entries(props: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    return list((props or {}).get(s.NETWORKS) or ())


def _network_changes(ctx: StepContext, resolved: Mapping[str, Any], rest: str, finish: Finish
                     ) -> StepResult:
    old, new = _entries(ctx.old_properties), _entries(ctx.properties)
    _, _, kept = sn.plan(old, new)
    ids = loads(ctx.data, "ids", {})
    after = sn.new_ids(ids, kept, resolved)
    calls = sn.changes(str(ctx.physical_id), old, new, ids=ids, resolved_ids=after,
                       ports=loads(ctx.data, "ports", []))
    data = {"ids": dumps(after), TODO: rest, "net_keys": dumps([c.key for c in calls])}
    if not calls:
        following = _next_stage(ctx, loads({TODO: rest}, TODO, []), finish)
        if isinstance(following, Call):
            return dataclasses.replace(following, data={**following.data, "ids": data["ids"]})
        return following
    return call("net-change", *calls, data=data)


def _after_network_lookups(ctx: StepContext, finish: Finish) -> StepResult:
    _, added, _ = sn.plan(_entries(ctx.old_properties), _entries(ctx.properties))
    finds = sn.lookups(_entries(ctx.properties), added)
    rest = ctx.data.get(TODO, "[]")
    if not all(c.key in ctx.answers for c in finds):
        return call("net-find", *finds)  # lost answers: look again
    for found in finds:
        error = ctx.answers[found.key].error
        if error is not None and error.kind is ErrorKind.NOT_FOUND:
            return sc.lookup_failure(found.key, ctx.properties)
        if error is not None:
            return cloud_failure(error)
    resolved = sc.resolved_ids({c.key: ctx.answers[c.key].value for c in finds})
    return _network_changes(ctx, resolved, rest, finish)


def _after_floating(ctx: StepContext, todo: list[str], finish: Finish) -> StepResult:
    stage = str(ctx.data.get("floating_stage"))
    calls = _floating(ctx)[stage == "floating-on"]
    if not all(c.key in ctx.answers for c in calls):
        return _next_stage(ctx, [stage, *todo], finish)  # lost answers: the same requests again
    for c in calls:
        error = ctx.answers[c.key].error
        # A floating IP let go that is gone already is let go (Heat ignores its 404 too).
        if error is not None and not (stage == "floating-off" and error.kind is ErrorKind.NOT_FOUND):
            return cloud_failure(error)
    return _next_stage(ctx, todo, finish)


def _after_network_changes(ctx: StepContext, finish: Finish) -> StepResult:
    # Lost answers go on: the ports are read again at the end of the update either way.
    for key in loads(ctx.data, "net_keys", []):
        answer = ctx.answers.get(key)
        if answer is not None and answer.error is not None and not answer.not_found:
            return cloud_failure(answer.error)
    return _next_stage(ctx, loads(ctx.data, TODO, []), finish)


def _rebuild(ctx: StepContext, image_id: Any, *, with_user_data: bool = False) -> CloudCall:
    kwargs: dict[str, Any] = {
        "metadata": sc.serialized_metadata(ctx.properties.get(s.METADATA), ctx.cloud_tag),
        "preserve_ephemeral": ctx.properties.get(s.IMAGE_UPDATE_POLICY) == "REBUILD_PRESERVE_EPHEMERAL",
    }
    if ctx.properties.get(s.ADMIN_PASS):
        kwargs["admin_password"] = ctx.properties[s.ADMIN_PASS]
    if with_user_data:
        kwargs["user_data"] = encoded(ctx.properties.get(s.USER_DATA) or "")
    return compute("rebuild", "rebuild_server", str(ctx.physical_id), image_id, **kwargs)


def check_update(ctx: StepContext, physical_name: str, finish: Finish) -> StepResult:
    step = phase(ctx)
    todo = loads(ctx.data, TODO, [])
    server_id = str(ctx.physical_id)
    get = compute(SERVER_KEY, "get_server", server_id)
    if step == "quick":
        keys = loads(ctx.data, "quick_keys", [])
        if not all(k in ctx.answers for k in keys):
            # Lost answers: the quick calls are idempotent, make them again.
            return start_update(ctx, physical_name, finish)
        for key in keys:
            error = ctx.answers[key].error
            if error is not None:
                return cloud_failure(error)
        return _next_stage(ctx, todo, finish)
    if step == "floating-sent":
        return _after_floating(ctx, todo, finish)
    if step == "net-find":
        return _after_network_lookups(ctx, finish)
    if step == "net-change":
        return _after_network_changes(ctx, finish)
    if step in ("resize-find", "rebuild-find"):
        return _after_find(ctx, step, finish)
    if step == "resize-sent":
        answer = ctx.answers.get("resize")
        if answer is None:
            return _resize(ctx)  # lost: ask again (a resize under way answers 409)
        if answer.error is not None and answer.error.kind is not ErrorKind.CONFLICT:
            return cloud_failure(answer.error)
        return call("resize-wait", get, delay=poll_delay(ctx))
    if step == "resize-wait":
        return _resize_wait(ctx, get, todo, finish)
    if step == "confirm":
        return call("confirm-sent", compute("confirm", "confirm_server_resize", server_id))
    if step == "confirm-sent":
        answer = ctx.answers.get("confirm")
        if answer is None:
            return call("confirm-sent", compute("confirm", "confirm_server_resize", server_id))
        if answer.error is not None and answer.error.kind is not ErrorKind.CONFLICT:
            return cloud_failure(answer.error)
        return call("confirm-wait", get, delay=poll_delay(ctx))
    if step == "confirm-wait":
        return _confirm_wait(ctx, get, todo, finish)
    if step == "rebuild-sent":
        answer = ctx.answers.get("rebuild")
        if answer is not None and answer.error is not None:
            return cloud_failure(answer.error)
        return call("rebuild-wait", get, delay=poll_delay(ctx))
    if step == "rebuild-wait":
        return _rebuild_wait(ctx, get, todo, finish)
    return finish(ctx)


def _after_find(ctx: StepContext, step: str, finish: Finish) -> StepResult:
    key = "flavor" if step == "resize-find" else "image"
    answer = ctx.answers.get(key)
    if answer is None:
        todo = loads(ctx.data, TODO, [])
        return _next_stage(ctx, [key, *todo], finish)
    if answer.not_found:
        return sc.lookup_failure(key, ctx.properties)
    if answer.error is not None:
        return cloud_failure(answer.error)
    found_id = str(answer.value["id"])
    if key == "flavor":
        return _resize(ctx, found_id)
    return call("rebuild-sent", _rebuild(ctx, found_id))


def _resize(ctx: StepContext, flavor_id: str | None = None) -> StepResult:
    flavor = flavor_id or ctx.data.get("flavor_id", "")
    return call("resize-sent", compute("resize", "resize_server", str(ctx.physical_id), flavor),
                data={"flavor_id": flavor})


def _resize_wait(ctx: StepContext, get: CloudCall, todo: list[str], finish: Finish) -> StepResult:
    server = polled(ctx, SERVER_KEY, "resize-wait", get, gone=sc.gone(str(ctx.physical_id)))
    if not isinstance(server, Mapping):
        return server
    status = server.get("status")
    flavor = server.get("flavor") or {}
    wanted = {ctx.properties[s.FLAVOR], ctx.data.get("flavor_id")} - {None, ""}
    resized = {flavor.get("original_name"), flavor.get("id")} & wanted
    if status == "ACTIVE" and resized:
        return _next_stage(ctx, todo, finish)  # a cloud that confirms resizes itself
    if status == "RESIZE" or (status == "ACTIVE" and server.get("task_state")):
        return call("resize-wait", get, delay=poll_delay(ctx))
    # ACTIVE on the old flavor with no task under way: Nova gave the resize up (it sets a task before
    # it answers the resize call, and a scheduling or placement failure only puts the server back to
    # ACTIVE, with the fault among its instance actions). Heat waits there until the stack times out.
    if status == "VERIFY_RESIZE":
        # The named step: a breakpoint on update:resize holds the server here, before the confirm.
        return Wait(delay=0.0, data={"phase": "confirm"}, step=RESIZE_STEP)
    return Failed(f"Resizing to '{ctx.properties[s.FLAVOR]}' failed, status '{status}'", error="Error",
                  remake=status == "ERROR")


def _confirm_wait(ctx: StepContext, get: CloudCall, todo: list[str], finish: Finish) -> StepResult:
    server = polled(ctx, SERVER_KEY, "confirm-wait", get, gone=sc.gone(str(ctx.physical_id)))
    if not isinstance(server, Mapping):
        return server
    status = str(server.get("status") or "").split("(")[0]
    if status == "ACTIVE":
        return _next_stage(ctx, todo, finish)
    task = server.get("task_state") or ""
    if status == "VERIFY_RESIZE" or "resize" in task:
        return call("confirm-wait", get, delay=poll_delay(ctx))
    return Failed(f'Confirm resize for server {ctx.physical_id} failed - Unknown status {status} '
                  f'due to "Unknown"', error="ResourceUnknownStatus")


def _rebuild_wait(ctx: StepContext, get: CloudCall, todo: list[str], finish: Finish) -> StepResult:
    server = polled(ctx, SERVER_KEY, "rebuild-wait", get, gone=sc.gone(str(ctx.physical_id)))
    if not isinstance(server, Mapping):
        return server
    status = server.get("status")
    if status == "REBUILD":
        return call("rebuild-wait", get, delay=poll_delay(ctx))
    if status == "ERROR":
        return Failed(f"Rebuilding server failed, status '{status}'", error="Error", remake=True)
    return _next_stage(ctx, todo, finish)
