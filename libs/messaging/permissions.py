"""Who may publish and subscribe to what on NATS: one table, derived from :mod:`subjects`.

Each service's row names the streams it ensures, the durable consumers it
pulls from, the subjects it publishes and those it serves; its NATS
permissions (:func:`service_permissions`) follow from that row alone, so a
subject added to :mod:`subjects` and used by a service cannot be forgotten
in the server's configuration. An integration acts for one project
(:func:`project_permissions`): it may ask to clear hooks and scale groups,
answer deployments, and read events and hook notices, of that project only,
live or from JetStream history.

Replies travel to per-user inboxes (``_INBOX.<prefix>.<who>``) rather than
``_INBOX.>``: with one shared inbox space any user could subscribe to
``_INBOX.>`` and read the replies, and JetStream deliveries, meant for others.
"""

from __future__ import annotations

import dataclasses

from libs.messaging.subjects import SERVICES, ConsumerSpec, Names, StreamSpec, principal_token

_JS = "$JS.API"


@dataclasses.dataclass(frozen=True)
class Uses:
    """What one service does on NATS."""

    # Streams it publishes to or consumes from, created or updated at its start.
    streams: tuple[StreamSpec, ...]
    # Durable consumers it creates and pulls from.
    consumers: tuple[ConsumerSpec, ...]
    # Subjects (wildcards allowed) it publishes to, JetStream or core.
    publishes: tuple[str, ...]
    # Core subjects it answers requests on.
    serves: tuple[str, ...]
    # Users whose inboxes it replies to out of band (health probes arrive through
    # JetStream, so their reply subject is not the message's own reply).
    replies_to: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Permissions:
    publish: tuple[str, ...]
    subscribe: tuple[str, ...]
    # Lets a responder publish to the reply subject of a request it received, and nowhere else.
    allow_responses: bool = True


def inbox_prefix(names: Names, who: str) -> str:
    """The inbox a user's requests are answered in: ``who`` is its name (a service, ``project.<id>``)."""
    return f"_INBOX.{names.prefix}.{who}"


def project_principal(project: str) -> str:
    return f"project.{principal_token(project)}"


def uses(names: Names, service: str) -> Uses:
    """The row of ``service`` in the table (every service of :data:`SERVICES` has one)."""
    n = names
    probes = ("api",)
    table = {
        # Stacks are changed here: plan requests; hook clears release work and notify;
        # health pings every service and probes the plan, work and events queues.
        # A server's deployments go to its agent (libs/messaging/deployments) from the routes
        # that change them and from the workers that run deployment resources.
        "api": Uses(streams=(n.plan_stream, n.work_stream, n.hooks_stream, n.events_stream), consumers=(),
                    publishes=(n.plan_all, n.work_all, n.hooks_all, n.deployments_all,
                               n.events_probe, *(n.control_ping(s) for s in SERVICES)),
                    serves=(n.hook_clear_all, n.scale_all, n.control_ping("api"))),
        # The sweep republishes plan requests whose sender died; a plan's first wave is work.
        "planner": Uses(streams=(n.plan_stream, n.work_stream), consumers=(n.planners,),
                        publishes=(n.plan_all, n.work_all),
                        serves=(n.control_ping("planner"),), replies_to=probes),
        # Successors are work; nested stacks and rollbacks are plan requests; paused nodes notify.
        # Agents' NATS_SIGNAL answers are applied here (libs/software_signals).
        "worker": Uses(streams=(n.work_stream, n.plan_stream, n.hooks_stream, n.signals_stream),
                       consumers=(n.workers, n.deployment_signals),
                       publishes=(n.work_all, n.plan_all, n.hooks_all, n.deployments_all),
                       serves=(n.control_ping("worker"),), replies_to=probes),
        # It polls the cloud, not a queue; a heal of drift is a plan request.
        "observer": Uses(streams=(n.plan_stream,), consumers=(), publishes=(n.plan_all,),
                         serves=(n.control_ping("observer"),)),
        # Events (and the drift notices of drift events) out of the outbox; event and hook
        # notices in, for webhooks.
        "notifier": Uses(streams=(n.events_stream, n.hooks_stream, n.drift_stream),
                         consumers=(n.notifier_events, n.notifier_hooks),
                         publishes=(n.events_all, n.drift_all),
                         serves=(n.control_ping("notifier"),), replies_to=probes),
    }
    if service not in table:
        raise ValueError(f"unknown service {service!r}")
    return table[service]


def _stream_api(stream: StreamSpec) -> tuple[str, ...]:
    return tuple(f"{_JS}.STREAM.{verb}.{stream.name}" for verb in ("INFO", "CREATE", "UPDATE"))


def _consumer_api(names: Names, spec: ConsumerSpec) -> tuple[str, ...]:
    s, d = spec.stream, spec.durable
    api: tuple[str, ...] = (
        f"{_JS}.CONSUMER.DURABLE.CREATE.{s}.{d}", f"{_JS}.CONSUMER.CREATE.{s}.{d}",
        f"{_JS}.CONSUMER.CREATE.{s}.{d}.{spec.filter_subject}", f"{_JS}.CONSUMER.INFO.{s}.{d}",
        f"{_JS}.CONSUMER.MSG.NEXT.{s}.{d}",
        # ack, nak, term and in_progress all answer the delivery's $JS.ACK subject
        f"$JS.ACK.{s}.{d}.>")
    if spec.max_deliver <= 0:
        return api
    # A message past its deliveries is read by sequence to be set aside (libs/messaging/max_deliveries),
    # and taken out of a work queue.
    api += (f"{_JS}.STREAM.MSG.GET.{s}",)
    if any(stream.name == s and stream.retention == "workqueue" for stream in names.streams):
        api += (f"{_JS}.STREAM.MSG.DELETE.{s}",)
    return api


def service_permissions(names: Names, service: str) -> Permissions:
    row = uses(names, service)
    publish: list[str] = [*row.publishes]
    for stream in row.streams:
        publish += _stream_api(stream)
    for consumer in row.consumers:
        publish += _consumer_api(names, consumer)
    publish += [f"{inbox_prefix(names, who)}.>" for who in row.replies_to]
    subscribe = [*row.serves, *(Names.max_deliveries(c) for c in row.consumers if c.max_deliver > 0),
                 f"{inbox_prefix(names, service)}.>"]
    return Permissions(publish=_unique(publish), subscribe=_unique(subscribe))


def project_permissions(names: Names, project: str) -> Permissions:
    """An integration of ``project``: its hooks, scaling groups, events, drift and its servers'
    deployments (what ``ember agent`` listens to) and their answers (NATS_SIGNAL, published to
    JetStream, whose ack comes to its inbox), nothing else.

    History is read through a push consumer it creates on the events or hooks
    stream, named and filtered in the request's subject
    (``$JS.API.CONSUMER.CREATE.<stream>.<name>.<filter>``): the server refuses
    a filter the subject does not carry, so the permission pins the filter to
    the project's subjects, and the deliveries go to the integration's inbox.
    """
    events, hooks = names.project_events(project), names.project_hooks(project)
    drift = names.project_drift(project)
    publish = (names.project_hook_clears(project), names.project_scales(project),
               names.project_signals(project),
               f"{_JS}.CONSUMER.CREATE.{names.events_stream.name}.*.{events}",
               f"{_JS}.CONSUMER.CREATE.{names.hooks_stream.name}.*.{hooks}",
               f"{_JS}.CONSUMER.CREATE.{names.drift_stream.name}.*.{drift}")
    subscribe = (events, hooks, drift, names.project_deployments(project),
                 f"{inbox_prefix(names, project_principal(project))}.>")
    return Permissions(publish=publish, subscribe=subscribe, allow_responses=False)


def _unique(items: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))
