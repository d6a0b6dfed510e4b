"""Message payloads: frozen dataclasses with a schema version, serialized with orjson.

Each payload names its ``kind``; :func:`decode` maps it back to the class. A
payload of an unknown kind or a newer schema is a :class:`PayloadError`, which
the consumer terminates rather than redelivering forever.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import orjson

from libs.engine.status import Action

SCHEMA_VERSION = 1

_REGISTRY: dict[str, type[Payload]] = {}

P = TypeVar("P", bound="Payload")


class PayloadError(ValueError):
    """The bytes are not a payload this version of Ember understands."""


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


@dataclasses.dataclass(frozen=True)
class Payload:
    kind: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.kind:
            if cls.kind in _REGISTRY:
                raise TypeError(f"payload kind {cls.kind!r} registered twice")
            _REGISTRY[cls.kind] = cls

    def log_ids(self) -> dict[str, str]:
        """What the payload is about (``stack_id``, ``traversal_id``, ``node``): on the log lines
        and the span of whoever handles it."""
        return {}

    def to_bytes(self) -> bytes:
        # orjson writes nested dataclasses itself: dataclasses.asdict copied every value first and
        # cost the notifier more than its publish (two payloads per resource of a stack).
        names = _FIELD_NAMES.get(type(self))
        if names is None:
            names = _FIELD_NAMES[type(self)] = tuple(f.name for f in dataclasses.fields(self))
        body = {name: getattr(self, name) for name in names}
        body["kind"] = self.kind
        body["v"] = SCHEMA_VERSION
        return orjson.dumps(body)

    @classmethod
    def from_dict(cls: type[P], data: dict[str, Any]) -> P:
        names = {f.name for f in dataclasses.fields(cls)}
        missing = [f.name for f in dataclasses.fields(cls) if f.name not in data
                   and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        if missing:
            raise PayloadError(f"{cls.kind}: missing {', '.join(missing)}")
        return cls(**{k: v for k, v in data.items() if k in names})


def decode(data: bytes) -> Payload:
    """The payload of a message Ember sent (a consumer's :data:`Decoder` unless it is given another)."""
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise PayloadError(f"not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise PayloadError("not a JSON object")
    version = body.get("v")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise PayloadError(f"unsupported schema version {version!r}")
    cls = _REGISTRY.get(str(body.get("kind")))
    if cls is None:
        raise PayloadError(f"unknown payload kind {body.get('kind')!r}")
    return cls.from_dict(body)


# Bytes to a payload, raising PayloadError for what is not one: :func:`decode`, or a consumer's own
# for messages Ember did not shape (an agent's signal body, :mod:`libs.messaging.deployment_signals`).
Decoder = Callable[[bytes], Payload]


@dataclasses.dataclass(frozen=True)
class PlanRequest(Payload):
    """Ask the planner to turn a stack's desired state into a traversal."""

    kind: ClassVar[str] = "plan"
    project: str
    stack_id: str
    reason: str
    # An :class:`~libs.engine.status.Action` (a plain str once decoded); the planner reads it as one.
    action: str = Action.UPDATE
    # One traversal per request: a redelivered request finds its traversal and
    # only publishes its ready nodes again.
    request_id: str = ""
    # Heat's ``converge``: compare the template with what the cloud has now
    # (each plugin's ``observe``), not with what was last applied.
    converge: bool = False
    # RESTORE: the snapshot whose resource data resources made again get back.
    snapshot_id: str = ""

    @property
    def msg_id(self) -> str:
        return f"plan:{self.stack_id}:{self.request_id}"

    def log_ids(self) -> dict[str, str]:
        return {"stack_id": self.stack_id}


@dataclasses.dataclass(frozen=True)
class WorkItem(Payload):
    """One node of one traversal, ready to run a step."""

    kind: ClassVar[str] = "work"
    stack_id: str
    traversal_id: str
    node: str

    @property
    def msg_id(self) -> str:
        # JetStream drops a second publish with the same id within its window.
        return f"{self.stack_id}:{self.traversal_id}:{self.node}"

    def log_ids(self) -> dict[str, str]:
        return {"stack_id": self.stack_id, "traversal_id": self.traversal_id, "node": self.node}


@dataclasses.dataclass(frozen=True)
class Probe(Payload):
    """A health probe sent through a queue; whoever handles it answers on ``reply_to``."""

    kind: ClassVar[str] = "probe"
    probe_id: str
    reply_to: str
    # Wall-clock expiry: a probe that waited in a queue with no consumer must
    # not be answered hours later by the next process to start.
    expires_at: float

    def expired(self, now: float) -> bool:
        return now > self.expires_at


@dataclasses.dataclass(frozen=True)
class ProbeReply(Payload):
    kind: ClassVar[str] = "probe_reply"
    probe_id: str
    service: str
    service_id: str
    host: str
    pid: int
    uptime_seconds: float


@dataclasses.dataclass(frozen=True)
class ScaleRequest(Payload):
    """A NATS request to scale a group: by ``adjust`` members, or to ``capacity``."""

    kind: ClassVar[str] = "scale"
    adjust: int | None = None
    capacity: int | None = None


@dataclasses.dataclass(frozen=True)
class ScaleReply(Payload):
    """The capacity the group has after a scale request (``error`` says why nothing changed)."""

    kind: ClassVar[str] = "scale_reply"
    capacity: int | None = None
    error: str = ""


@dataclasses.dataclass(frozen=True)
class HookNotice(Payload):
    """A hook reached, cleared or timed out, on ``<prefix>.hooks.<project>.<stack>.<resource>``."""

    kind: ClassVar[str] = "hook"
    project: str
    stack_id: str
    stack_name: str
    resource_name: str
    hook: str
    # reached, cleared, timed_out
    state: str
    traversal_id: str
    node: str
    # Who cleared it (signal, breakpoints, step, continue, nats, timeout); empty when reached.
    by: str = ""

    @property
    def msg_id(self) -> str:
        return f"hook:{self.traversal_id}:{self.node}:{self.hook}:{self.state}"

    def log_ids(self) -> dict[str, str]:
        return {"stack_id": self.stack_id, "traversal_id": self.traversal_id, "node": self.node,
                "resource": self.resource_name}


@dataclasses.dataclass(frozen=True)
class HookClearRequest(Payload):
    """A NATS request to clear a hook: ``<prefix>.hookclear.<project>.<stack>``, answered by the api."""

    kind: ClassVar[str] = "hook_clear"
    resource: str
    hook: str


@dataclasses.dataclass(frozen=True)
class HookClearReply(Payload):
    """Whether a hook clear took effect (``error`` says why not)."""

    kind: ClassVar[str] = "hook_clear_reply"
    cleared: bool = False
    error: str = ""


@dataclasses.dataclass(frozen=True)
class DriftNotice(Payload):
    """A drift record opened or closed, on ``<prefix>.drift.<project>.<stack>`` (with its event)."""

    kind: ClassVar[str] = "drift"
    event_id: str
    project: str
    stack_id: str
    stack_name: str
    resource_name: str
    drift: str  # gone, error, changed
    fields: list[str]
    detail: str
    action_taken: str
    resolved: bool
    event_time: str

    @property
    def msg_id(self) -> str:
        return f"drift:{self.event_id}"

    def log_ids(self) -> dict[str, str]:
        return {"stack_id": self.stack_id, "resource": self.resource_name}


@dataclasses.dataclass(frozen=True)
class EventNotice(Payload):
    """A stack or resource event, on ``<prefix>.events.<project>.<stack>``, as the API shows it."""

    kind: ClassVar[str] = "event"
    id: str
    project: str
    stack_id: str
    stack_name: str
    resource_name: str
    physical_resource_id: str
    resource_type: str
    resource_action: str
    resource_status: str
    resource_status_reason: str
    event_time: str
    traversal_id: str = ""

    @property
    def msg_id(self) -> str:
        return f"event:{self.id}"

    def log_ids(self) -> dict[str, str]:
        return {"stack_id": self.stack_id, "traversal_id": self.traversal_id, "resource": self.resource_name}
