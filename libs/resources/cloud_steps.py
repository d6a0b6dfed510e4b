"""What the cloud resource types share: phases kept in data, tagged objects, the cloud's errors.

A cloud type's action is a small state machine: each step answers a
:class:`~libs.resources.steps.Call` and records in ``data["phase"]`` which
calls it made, so the next ``check`` knows what ``ctx.answers`` holds. When
the answers are missing (the worker lost them in a crash) the phase says what
to ask again; a create phase then looks for the half-made object by
``ctx.cloud_tag`` before it makes another.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

from libs.cloud.calls import Answer, CloudCall, CloudError, Service
from libs.resources import cloud_constraints
from libs.resources.stack_user import StackUserGrant
from libs.resources.steps import KEEP, Call, DataChanges, Failed, KeepType, StepContext, StepResult

PHASE: Final = "phase"
# The metadata key (Nova, Cinder, Glance) that carries ``ctx.cloud_tag`` on what Ember makes.
TAG_KEY: Final = "ember_resource"


def phase(ctx: StepContext) -> str:
    return ctx.data.get(PHASE, "")


def call(next_phase: str, *calls: CloudCall, delay: float = 0.0, data: DataChanges | None = None,
         physical_id: str | KeepType | None = KEEP, step: str | None = None,
         stack_user: StackUserGrant | None = None) -> Call:
    """Make ``calls``; the next check runs in ``next_phase``."""
    return Call(calls=tuple(calls), delay=delay, data={**(data or {}), PHASE: next_phase},
                physical_id=physical_id, step=step, stack_user=stack_user)


def compute(key: str, method: str, /, *args: Any, **kwargs: Any) -> CloudCall:
    return CloudCall(key, Service.COMPUTE, method, args=args, kwargs=kwargs)


def block_storage(key: str, method: str, /, *args: Any, **kwargs: Any) -> CloudCall:
    return CloudCall(key, Service.BLOCK_STORAGE, method, args=args, kwargs=kwargs)


def image(key: str, method: str, /, *args: Any, **kwargs: Any) -> CloudCall:
    return CloudCall(key, Service.IMAGE, method, args=args, kwargs=kwargs)


def network(key: str, method: str, /, *args: Any, **kwargs: Any) -> CloudCall:
    return CloudCall(key, Service.NETWORK, method, args=args, kwargs=kwargs)


LISTED: Final = "listed"


def retrying(ctx: StepContext) -> bool:
    """Whether an earlier step of this resource ran: then what it may have made is looked for first.

    A fresh create makes nothing twice without looking (a lost answer is seen by the
    phase after it, which looks); a create started again on the same resource looks first.
    """
    return bool(ctx.data.get(PHASE))


def answered(ctx: StepContext, *keys: str) -> bool:
    """Whether every one of ``keys`` came back (False after a crash lost them)."""
    return all(key in ctx.answers for key in keys)


def first_error(ctx: StepContext, keys: Iterable[str]) -> tuple[str, CloudError] | None:
    for key in keys:
        answer = ctx.answers.get(key)
        if answer is not None and answer.error is not None:
            return key, answer.error
    return None


def cloud_failure(error: CloudError) -> Failed:
    """The resource fails with the cloud's message, named by the client's exception (Heat's reason)."""
    return Failed(error.message, error=error.exception)


# The exception Heat's client of a service raises for each HTTP status (any other: ClientException):
# Heat reaches Nova through novaclient and Cinder through cinderclient, whose errors read
# ``<message> (HTTP <status>) (Request-ID: req-...)``. Measured against real Heat, Nova and Cinder.
_NOVACLIENT: Final[Mapping[int, str]] = {
    400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
    406: "NotAcceptable", 409: "Conflict", 413: "OverLimit", 429: "RateLimit", 501: "HTTPNotImplemented"}
_CINDERCLIENT: Final[Mapping[int, str]] = {
    400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 406: "NotAcceptable",
    413: "OverLimit", 501: "HTTPNotImplemented"}
_CLIENTS: Final[Mapping[Service, Mapping[int, str]]] = {
    Service.COMPUTE: _NOVACLIENT, Service.BLOCK_STORAGE: _CINDERCLIENT}


def client_text(error: CloudError) -> str:
    """The cloud's refusal as novaclient and cinderclient print it (bare when nothing answered)."""
    if error.status is None:
        return error.message
    text = f"{error.message} (HTTP {error.status})"
    if error.request_id:
        text += f" (Request-ID: {error.request_id})"
    return text


def client_failure(service: Service, error: CloudError) -> Failed:
    """A refusal of Nova or Cinder as Heat's reason names it: its client's exception and text."""
    classes = _CLIENTS.get(service)
    if classes is None or error.status is None:
        return cloud_failure(error)
    return Failed(client_text(error), error=classes.get(error.status, "ClientException"))


def value(answer: Answer | None) -> Any:
    return None if answer is None else answer.value


def tagged(listing: Any, tag: str) -> dict[str, Any] | None:
    """The object of a listing whose metadata carries ``tag`` (what Ember made for this resource)."""
    for item in listing or ():
        if isinstance(item, Mapping) and _tag_of(item) == tag:
            return dict(item)
    return None


def _tag_of(item: Mapping[str, Any]) -> Any:
    for key in ("metadata", "properties"):
        meta = item.get(key)
        if isinstance(meta, Mapping) and TAG_KEY in meta:
            return meta[TAG_KEY]
    return item.get(TAG_KEY)


def poll_delay(ctx: StepContext, *, first: float = 1.0, most: float = 10.0) -> float:
    """How long to wait before asking again: short at first, longer as the action goes on."""
    return min(most, first + ctx.elapsed / 10.0)


# When the wait for a made thing to be ready began: "<action's started_at>:<seconds>", so that a
# later action's wait never reads an earlier one's.
READY_SINCE: Final = "ready_since"


def ready_since(ctx: StepContext) -> DataChanges:
    """What a step that asks for a thing records: its wait to be ready counts from now."""
    return {READY_SINCE: _now_in_action(ctx)}


def _now_in_action(ctx: StepContext) -> str:
    """A moment of this action, as the data keeps it: "<action's started_at>:<now>"."""
    return f"{ctx.started_at!r}:{ctx.now!r}"


def _since(ctx: StepContext, key: str) -> float | None:
    """Seconds since the moment ``key`` recorded in this action; None if it recorded none (or an
    earlier action's)."""
    action_started, _, at = ctx.data.get(key, "").partition(":")
    if not at or action_started != repr(ctx.started_at):
        return None
    return ctx.now - float(at)


def wait_ready(ctx: StepContext, next_phase: str, poll: CloudCall, *, what: str, ready: str,
               status: str) -> StepResult:
    """Poll ``what`` again while it is not ``ready`` (still ``status``), unless it has waited past
    ``ctx.ready_timeout``: then it is in error (Heat's ResourceInError, which its
    action_retry_limit makes again). A wait whose start was never recorded (a thing adopted after
    a lost answer) counts from now."""
    waited = _since(ctx, READY_SINCE)
    if waited is None:
        return call(next_phase, poll, delay=poll_delay(ctx), data=ready_since(ctx))
    if ctx.ready_timeout is not None and waited > ctx.ready_timeout:
        return Failed(f"{what} did not become {ready} within {ctx.ready_timeout:g}s (still {status})",
                      error="ResourceInError")
    return call(next_phase, poll, delay=poll_delay(ctx))


def dumps(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def loads(ctx_data: Mapping[str, str], key: str, default: Any = None) -> Any:
    text = ctx_data.get(key)
    if not text:
        return default
    try:
        return json.loads(text)
    except ValueError:
        return default


# A thing Ember made that the cloud answers 404 for is taken as gone only after this long: Nova can
# answer 404 for a server for a moment after it was asked for (Heat keeps waiting there).
GONE_AFTER_SECONDS: Final = 10.0
GONE_SINCE: Final = "gone_since"


def polled(ctx: StepContext, key: str, phase: str, get: CloudCall, *, gone: Failed | None = None
           ) -> Mapping[str, Any] | StepResult:
    """The object ``get`` (answered under ``key``) read, else what to do: ask again (no answer yet)
    in ``phase``, fail with ``gone`` once it has not been found for :data:`GONE_AFTER_SECONDS` (a
    thing Ember made, deleted behind its back while it waited), or fail with the cloud's error."""
    answer = ctx.answers.get(key)
    if answer is None:
        return call(phase, get, delay=poll_delay(ctx))
    if gone is not None and answer.not_found:
        missing = _since(ctx, GONE_SINCE)
        if missing is None:
            return call(phase, get, delay=poll_delay(ctx), data={GONE_SINCE: _now_in_action(ctx)})
        if missing < GONE_AFTER_SECONDS:
            return call(phase, get, delay=poll_delay(ctx))
        return gone
    if answer.error is not None:
        return cloud_failure(answer.error)
    return dict(answer.value)


def not_found_failure(constraint: str, name: Any, path: tuple[str | int, ...]) -> Failed:
    """A name a property gives that the cloud does not know: Heat's property error of its constraint."""
    return Failed(f"Error validating value '{name}': {cloud_constraints.reason(constraint, name)}",
                  error="Property error", inner_path=("properties", *path))
