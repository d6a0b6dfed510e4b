"""``OS::Heat::WaitConditionHandle`` and ``OS::Heat::WaitCondition``: wait for a signal from outside.

The handle takes signals (``POST .../resources/<handle>/signal``, which its
``curl_cli`` attribute does with curl) and keeps each in its data under its
``id``; the wait condition watches the handle and completes when ``count``
signals said ``SUCCESS``, fails on the first ``FAILURE``, and fails with
Heat's ``WaitConditionTimeout`` after ``timeout`` seconds. Waiting holds no
worker: the condition's step is re-queued until then.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any, ClassVar

import orjson

from libs.engine.status import Action
from libs.resources.attributes import AttrSchema
from libs.resources.base import ResourceType, SupportStatus
from libs.resources.properties import PropSchema
from libs.resources.steps import Done, Failed, StepContext, StepResult, Wait
from libs.template.constraints import AllowedValues, Range
from libs.template.errors import TemplateError

SIGNALS_KEY = "signals"
STATUSES = ("SUCCESS", "FAILURE")
TRANSPORTS = ("CFN_SIGNAL", "TEMP_URL_SIGNAL", "HEAT_SIGNAL", "NO_SIGNAL", "ZAQAR_SIGNAL", "TOKEN_SIGNAL")
POLL_SECONDS = 1.0


class BadSignal(TemplateError):
    error_type = "ValueError"


def signals_of(data: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    raw = data.get(SIGNALS_KEY)
    return dict(orjson.loads(raw)) if raw else {}


class WaitConditionHandle(ResourceType):
    """Receives the signals a wait condition waits for."""

    heat_class: ClassVar[str | None] = "HeatWaitConditionHandle"

    type_name: ClassVar[str] = "OS::Heat::WaitConditionHandle"
    description: ClassVar[str] = (
        "Takes signals from outside the stack (a server's boot script, a person) for a wait "
        "condition to count.")
    support_status: ClassVar[SupportStatus] = SupportStatus(version="2014.2")
    accepts_signals: ClassVar[bool] = True
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        "signal_transport": PropSchema("string", "How signals reach the handle; Ember takes them on its API.",
                                       default="TOKEN_SIGNAL", constraints=(AllowedValues(TRANSPORTS),)),
    }
    attributes_schema: ClassVar[Mapping[str, AttrSchema]] = {
        "token": AttrSchema("The token to send with a signal.", "string"),
        "endpoint": AttrSchema("The URL to POST a signal to.", "string"),
        "curl_cli": AttrSchema("A curl command line that sends a signal; add --data-binary with the"
                               " signal's JSON.", "string"),
        "signal": AttrSchema("The URL and token to signal with, as a map.", "map"),
    }

    def start_create(self, ctx: StepContext) -> StepResult:
        alphabet = string.ascii_letters + string.digits
        token = ctx.data.get("token") or "".join(ctx.rng.choice(alphabet) for _ in range(32))
        return Done(physical_id=self.physical_resource_name(ctx),
                    data={"token": token, "endpoint": ctx.signal_url or ""})

    def signal(self, data: Mapping[str, str], details: Any) -> tuple[dict[str, str | None], str]:
        details = details if isinstance(details, dict) else {}
        status = details.get("status", "SUCCESS")
        if status not in STATUSES:
            raise BadSignal(f"Metadata format invalid: status must be one of {', '.join(STATUSES)}")
        signals = signals_of(data)
        signal_id = str(details.get("id") or len(signals) + 1)
        reason = str(details.get("reason") or f"Signal {signal_id} received")
        signals[signal_id] = {"status": status, "reason": reason, "data": details.get("data")}
        return ({SIGNALS_KEY: orjson.dumps(signals).decode()},
                f"Signal: status:{status} reason:{reason}")

    def resolve_attribute(self, name: str, physical_id: str | None, data: Mapping[str, str],
                          properties: Mapping[str, Any]) -> Any:
        token, endpoint = data.get("token"), data.get("endpoint")
        if physical_id is None:
            return None  # no handle yet (a preview): Heat resolves none of them
        if name == "token":
            return token
        if name == "endpoint":
            return endpoint
        if name == "signal":
            return {"url": endpoint, "token": token}
        if name == "curl_cli":
            return (f"curl -i -X POST -H 'X-Auth-Token: {token}' -H 'Content-Type: application/json' "
                    f"-H 'Accept: application/json' {endpoint}")
        return None


class WaitCondition(ResourceType):
    """Waits for ``count`` successful signals on its handle."""

    heat_class: ClassVar[str | None] = "HeatWaitCondition"

    type_name: ClassVar[str] = "OS::Heat::WaitCondition"
    description: ClassVar[str] = "Waits until its handle has received count signals of success."
    support_status: ClassVar[SupportStatus] = SupportStatus(version="2014.2")
    watches: ClassVar[str | None] = "handle"
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        "handle": PropSchema("string", "The handle (get_resource of an OS::Heat::WaitConditionHandle).",
                             required=True),
        "timeout": PropSchema("number", "Seconds to wait for the signals.", required=True,
                              constraints=(Range(min=1, max=43200),)),
        "count": PropSchema("integer", "How many signals of success to wait for.", default=1,
                            constraints=(Range(min=1),), update_allowed=True),
    }
    attributes_schema: ClassVar[Mapping[str, AttrSchema]] = {
        "data": AttrSchema("The data of the signals, as a JSON string of a map from signal id to data.",
                           "string"),
    }

    def start_create(self, ctx: StepContext) -> StepResult:
        return self.check(Action.CREATE, ctx)

    def start_update(self, ctx: StepContext) -> StepResult:
        return self.check(Action.UPDATE, ctx)

    def check(self, action: Action, ctx: StepContext) -> StepResult:
        if action not in (Action.CREATE, Action.UPDATE):
            return Done()
        signals = signals_of(ctx.peer or {})
        failures = [s.get("reason", "") for s in signals.values() if s.get("status") == "FAILURE"]
        if failures:
            return Failed("; ".join(failures), error="WaitConditionFailure")
        successes = {k: v for k, v in signals.items() if v.get("status") == "SUCCESS"}
        count = int(ctx.properties.get("count") or 1)
        if len(successes) >= count:
            data = {k: v.get("data") for k, v in successes.items()}
            return Done(data={"data": orjson.dumps(data).decode()})
        if ctx.elapsed > float(ctx.properties["timeout"]):
            return Failed(f"{len(successes)} of {count} received", error="WaitConditionTimeout")
        return Wait(POLL_SECONDS)

    def resolve_attribute(self, name: str, physical_id: str | None, data: Mapping[str, str],
                          properties: Mapping[str, Any]) -> Any:
        return data.get("data", "{}") if name == "data" else None
