"""Cloud calls as data: what a step asks the worker to do on a cloud, and what came back.

A plugin never talks to a cloud. Its step answers :class:`~libs.resources.steps.Call`
with the :class:`CloudCall` items it wants made; the worker makes them (off the event
loop, with no database connection or lock held) and runs the plugin's next step with
each call's :class:`Answer` in ``StepContext.answers`` under the call's ``key``.
The same plugin is therefore tested by tables of contexts and answers, with no cloud.

A call names an openstacksdk proxy method: ``service`` is the proxy
(``compute``, ``network``, ``block_storage``, ``image``, ``identity``) and ``method``
its method (``create_server``, ``get_server``, ``servers``, ``delete_port``...), with
JSON-able arguments. Results come back as JSON: a resource as its ``to_dict()``, a
listing as a list of those, nothing as None.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any


class Service(enum.StrEnum):
    """openstacksdk's proxies, by the attribute a ``Connection`` has for each."""

    COMPUTE = "compute"
    NETWORK = "network"
    BLOCK_STORAGE = "block_storage"
    IMAGE = "image"
    IDENTITY = "identity"


@dataclasses.dataclass(frozen=True)
class CloudCall:
    """One openstacksdk proxy call: ``conn.<service>.<method>(*args, **kwargs)``.

    ``key`` names the answer in the next step's ``ctx.answers``; the calls of one
    ``Call`` have distinct keys. ``args`` and ``kwargs`` are JSON values.
    """

    key: str
    service: Service
    method: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def describe(self) -> str:
        """What a log line or a trace span names the call by (never its arguments: they may hold secrets)."""
        return f"{self.service.value}.{self.method}"


EXISTING = "$existing"


def existing(resource_class: str, resource_id: str) -> dict[str, str]:
    """An argument that stands for an existing openstacksdk resource object, for the few proxy
    methods that take an object rather than an id (``network.set_tags(resource, tags)``).

    ``resource_class`` is the class's path under ``openstack`` (``"network.v2.network.Network"``);
    the caller passes ``<class>.existing(id=resource_id)``.
    """
    return {EXISTING: resource_class, "id": resource_id}


class ErrorKind(enum.StrEnum):
    """What a failed call's error means to a plugin.

    The worker retries ``QUOTA``, ``SERVER`` and ``UNREACHABLE`` itself with backoff,
    up to a limit, before it hands the error to the plugin; the others come back at
    once. A plugin fails the resource with the cloud's message where Heat would.
    """

    NOT_FOUND = "not_found"        # 404
    CONFLICT = "conflict"          # 409
    BAD_REQUEST = "bad_request"    # 400 and the other 4xx not named here
    FORBIDDEN = "forbidden"        # 401/403
    QUOTA = "quota"                # 413, or 403/409 that says over quota
    SERVER = "server"              # 5xx
    UNREACHABLE = "unreachable"    # no answer: connection refused, timeout

    @property
    def retried(self) -> bool:
        return self in (ErrorKind.QUOTA, ErrorKind.SERVER, ErrorKind.UNREACHABLE)


@dataclasses.dataclass(frozen=True)
class CloudError:
    """A call the cloud refused or never answered: its kind, HTTP status and the cloud's own message."""

    kind: ErrorKind
    message: str
    status: int | None = None
    # openstacksdk's exception class name (Heat's reasons print the client's exception).
    exception: str = "ResourceFailure"
    # The cloud's id of the refused request (``x-openstack-request-id``), which some of Heat's
    # clients print in their errors.
    request_id: str | None = None
    # The fault type the body names (Neutron's ``NeutronError.type``), which neutronclient's
    # exception class is named after.
    fault_type: str | None = None


@dataclasses.dataclass(frozen=True)
class Answer:
    """What one :class:`CloudCall` gave: a JSON ``value``, or an ``error``."""

    value: Any = None
    error: CloudError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def not_found(self) -> bool:
        return self.error is not None and self.error.kind is ErrorKind.NOT_FOUND


Answers = Mapping[str, Answer]


# Calls that make something each time they are sent: sent twice, they may make it twice.
_MAKING_PREFIXES = ("create_", "add_", "attach_")
_MAKING = frozenset({"resize_server", "rebuild_server", "confirm_server_resize", "revert_server_resize",
                     "extend_volume", "reboot_server"})
# Refusals after which the cloud surely did nothing: over quota, busy, or never reached.
_NOT_DONE_STATUSES = frozenset({413, 429, 503})
_NOT_SENT = frozenset({"ConnectFailure", "ConnectTimeout", "ConnectionError", "ConnectionRefusedError"})


def worth_retrying(method: str, error: CloudError) -> bool:
    """Whether the caller sends a failed call again: the retried kinds, except that a call
    that makes something is sent again only when the cloud surely did nothing (a 500 or a
    read timeout on a create may have made the server: the plugin adopts it by its tag)."""
    if not error.kind.retried:
        return False
    if not (method.startswith(_MAKING_PREFIXES) or method in _MAKING):
        return True
    return (error.kind is ErrorKind.QUOTA or error.status in _NOT_DONE_STATUSES
            or (error.status is None and error.exception in _NOT_SENT))
