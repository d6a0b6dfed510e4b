"""Every stream, subject and durable consumer name Ember uses, in one place.

All names derive from one prefix (``EMBER_NATS_PREFIX``, default ``ember``), so
installations and test runs can share a nats-server without seeing each other.
"""

from __future__ import annotations

import dataclasses
import re

SERVICES = ("api", "planner", "worker", "observer", "notifier")


@dataclasses.dataclass(frozen=True)
class StreamSpec:
    name: str
    subjects: tuple[str, ...]
    # "workqueue": a message is gone once acked (work to do);
    # "limits": kept for every consumer until age/size limits (notices to fan out).
    retention: str
    max_age_seconds: float


@dataclasses.dataclass(frozen=True)
class ConsumerSpec:
    stream: str
    durable: str
    filter_subject: str
    ack_wait_seconds: float
    max_deliver: int


@dataclasses.dataclass(frozen=True)
class Names:
    prefix: str = "ember"

    @property
    def _stream_prefix(self) -> str:
        return self.prefix.upper()

    # ---- streams -------------------------------------------------------
    @property
    def plan_stream(self) -> StreamSpec:
        return StreamSpec(f"{self._stream_prefix}_PLAN", (f"{self.prefix}.plan.>",), "workqueue", 7 * 86400)

    @property
    def work_stream(self) -> StreamSpec:
        return StreamSpec(f"{self._stream_prefix}_WORK", (f"{self.prefix}.work.>",), "workqueue", 7 * 86400)

    @property
    def events_stream(self) -> StreamSpec:
        return StreamSpec(f"{self._stream_prefix}_EVENTS", (f"{self.prefix}.events.>",), "limits", 86400)

    @property
    def hooks_stream(self) -> StreamSpec:
        return StreamSpec(f"{self._stream_prefix}_HOOKS", (f"{self.prefix}.hooks.>",), "limits", 7 * 86400)

    @property
    def drift_stream(self) -> StreamSpec:
        return StreamSpec(f"{self._stream_prefix}_DRIFT", (f"{self.prefix}.drift.>",), "limits", 7 * 86400)

    @property
    def signals_stream(self) -> StreamSpec:
        # Agents' answers to deployments (NATS_SIGNAL): each applied once, then gone.
        return StreamSpec(f"{self._stream_prefix}_SIGNALS", (self.signals_all,), "workqueue", 7 * 86400)

    @property
    def streams(self) -> tuple[StreamSpec, ...]:
        return (self.plan_stream, self.work_stream, self.events_stream, self.hooks_stream, self.drift_stream,
                self.signals_stream)

    # ---- durable consumers ----------------------------------------------
    @property
    def planners(self) -> ConsumerSpec:
        return ConsumerSpec(self.plan_stream.name, "planners", f"{self.prefix}.plan.>", 10.0, 100)

    @property
    def workers(self) -> ConsumerSpec:
        # Steps are short, so a dead worker's message comes back after 10 s (a long
        # step sends in_progress); a wait is a redelivery, hence no delivery limit (-1).
        return ConsumerSpec(self.work_stream.name, "workers", f"{self.prefix}.work.>", 10.0, -1)

    @property
    def notifier_events(self) -> ConsumerSpec:
        # The health probe only: the notifier queues webhook deliveries of events as it publishes
        # them, so it never reads the events back (2 x 10^6 of them for a stack of 10^6).
        return ConsumerSpec(self.events_stream.name, "notifier-events", self.events_probe, 30.0, 100)

    @property
    def notifier_hooks(self) -> ConsumerSpec:
        return ConsumerSpec(self.hooks_stream.name, "notifier-hooks", f"{self.prefix}.hooks.>", 30.0, 100)

    @property
    def deployment_signals(self) -> ConsumerSpec:
        # No delivery limit (-1): a signal outlives an outage of PostgreSQL however long (each try
        # a redelivery), rather than being set aside; one its handler keeps failing on is given up
        # by the consumer's own count (libs/messaging/consumer).
        return ConsumerSpec(self.signals_stream.name, "deployment-signals", self.signals_all, 30.0, -1)

    @property
    def consumers(self) -> tuple[ConsumerSpec, ...]:
        return (self.planners, self.workers, self.notifier_events, self.notifier_hooks,
                self.deployment_signals)

    # ---- subjects ---------------------------------------------------------
    def plan(self, project: str, stack_id: str) -> str:
        return f"{self.prefix}.plan.{_token(project)}.{_token(stack_id)}"

    def work(self, stack_id: str) -> str:
        return f"{self.prefix}.work.{_token(stack_id)}"

    # Health probes travel the real queues, so a reply proves the queue flows
    # and that some process consumes it. ``_probe`` cannot be a stack id (uuids).
    @property
    def plan_probe(self) -> str:
        return f"{self.prefix}.plan._probe"

    @property
    def work_probe(self) -> str:
        return f"{self.prefix}.work._probe"

    @property
    def plan_all(self) -> str:
        return f"{self.prefix}.plan.>"

    @property
    def work_all(self) -> str:
        return f"{self.prefix}.work.>"

    @property
    def hooks_all(self) -> str:
        return f"{self.prefix}.hooks.>"

    @property
    def events_all(self) -> str:
        return f"{self.prefix}.events.>"

    @property
    def events_probe(self) -> str:
        return f"{self.prefix}.events._probe"

    def events(self, project: str, stack_id: str) -> str:
        return f"{self.prefix}.events.{_token(project)}.{_token(stack_id)}"

    @property
    def drift_all(self) -> str:
        return f"{self.prefix}.drift.>"

    def drift(self, project: str, stack_id: str) -> str:
        return f"{self.prefix}.drift.{_token(project)}.{_token(stack_id)}"

    def hooks(self, project: str, stack_id: str, resource: str) -> str:
        return f"{self.prefix}.hooks.{_token(project)}.{_token(stack_id)}.{_token(resource)}"

    @property
    def hook_clear_all(self) -> str:
        """What the api answers: requests to clear hooks, for every stack."""
        return f"{self.prefix}.hookclear.>"

    def hook_clear(self, project: str, stack_id: str) -> str:
        return f"{self.prefix}.hookclear.{_token(project)}.{_token(stack_id)}"

    @property
    def scale_all(self) -> str:
        """What the api answers: scale requests for every stack's groups."""
        return f"{self.prefix}.scale.>"

    def scale(self, project: str, stack_id: str, group: str) -> str:
        return f"{self.prefix}.scale.{_token(project)}.{_token(stack_id)}.{_token(group)}"

    @property
    def deployments_all(self) -> str:
        """What the engine publishes: each server's deployments, pushed to its agent."""
        return f"{self.prefix}.deployments.>"

    def deployments(self, project: str, server_id: str) -> str:
        """Core NATS (no stream): a push only saves an agent its wait for the next poll."""
        return f"{self.prefix}.deployments.{_token(project)}.{_token(server_id)}"

    @property
    def signals_all(self) -> str:
        return f"{self.prefix}.signal.>"

    def signal(self, project: str, stack_id: str, resource: str) -> str:
        """JetStream: where a deployment resource's agent publishes its answer (NATS_SIGNAL)."""
        return f"{self.prefix}.signal.{_token(project)}.{_token(stack_id)}.{_token(resource)}"

    def signal_parts(self, subject: str) -> tuple[str, str, str] | None:
        """The (project, stack id, resource) tokens of a :meth:`signal` subject, as they are in it
        (escaped: compare them with :func:`principal_token` of a value); None for another subject."""
        head = f"{self.prefix}.signal."
        if not subject.startswith(head):
            return None
        parts = subject[len(head):].split(".")
        return (parts[0], parts[1], parts[2]) if len(parts) == 3 else None

    @staticmethod
    def max_deliveries(spec: ConsumerSpec) -> str:
        """JetStream's advisory that a message of this consumer reached its ``max_deliver``."""
        return f"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{spec.stream}.{spec.durable}"

    # ---- one project's share, for an integration acting for it ---------------
    def project_events(self, project: str) -> str:
        return f"{self.prefix}.events.{_token(project)}.>"

    def project_hooks(self, project: str) -> str:
        return f"{self.prefix}.hooks.{_token(project)}.>"

    def project_drift(self, project: str) -> str:
        return f"{self.prefix}.drift.{_token(project)}.>"

    def project_hook_clears(self, project: str) -> str:
        return f"{self.prefix}.hookclear.{_token(project)}.>"

    def project_scales(self, project: str) -> str:
        return f"{self.prefix}.scale.{_token(project)}.>"

    def project_deployments(self, project: str) -> str:
        return f"{self.prefix}.deployments.{_token(project)}.>"

    def project_signals(self, project: str) -> str:
        return f"{self.prefix}.signal.{_token(project)}.>"

    # Core NATS (no JetStream): live control requests answered by running processes.
    def control_ping(self, service: str) -> str:
        if service not in SERVICES:
            raise ValueError(f"unknown service {service!r}")
        return f"{self.prefix}.control.{service}.ping"


def principal_token(project: str) -> str:
    """A project as one subject token (as in its subjects)."""
    return _token(project)


def token_value(token: str) -> str:
    """What a subject token was made of: its ``%XX`` escapes read back (``a%2Eb`` is ``a.b``)."""
    out, i = [], 0
    while i < len(token):
        escape = token[i + 1:i + 3]
        if token[i] == "%" and len(escape) == 2 and all(c in "0123456789ABCDEF" for c in escape):
            out.append(chr(int(escape, 16)))
            i += 3
        else:
            out.append(token[i])
            i += 1
    return "".join(out)


_FORBIDDEN = re.compile(r"[.*> \t\r\n\x00-\x1f]")


def _token(value: str) -> str:
    """A subject token: NATS forbids '.', '*', '>' and whitespace inside one."""
    if not _FORBIDDEN.search(value):  # the usual case (ids, project names): one scan in C
        return value or "_"
    out = []
    for ch in value:
        if ch in ".*> \t\r\n" or ord(ch) < 32:
            out.append(f"%{ord(ch):02X}")
        else:
            out.append(ch)
    return "".join(out) or "_"
