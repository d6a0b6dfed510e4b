"""What a webhook receives, and which subscriptions want a notice: pure functions over data."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
from fnmatch import fnmatchcase
from typing import Any

from libs.db.subscriptions import Subscription
from libs.messaging.payloads import EventNotice, HookNotice

Notice = EventNotice | HookNotice


def wants(sub: Subscription, notice: Notice) -> bool:
    """Whether the subscription's filters (kind, resource pattern, hooks) take this notice."""
    kind = "hook" if isinstance(notice, HookNotice) else "event"
    if kind not in sub.kinds or not fnmatchcase(notice.resource_name, sub.resource or "*"):
        return False
    return not (isinstance(notice, HookNotice) and sub.hooks and notice.hook not in sub.hooks)


def key_of(notice: Notice) -> str:
    """One notice, however often NATS brings it: the key of its delivery rows."""
    return notice.msg_id


def body_of(notice: Notice, api_url: str) -> dict[str, Any]:
    """The JSON a webhook gets: the notice, and links to act on the stack (clear, step, continue)."""
    stack = f"{api_url}/v1/{notice.project}/stacks/{notice.stack_name}/{notice.stack_id}"
    links: dict[str, Any] = {"stack": {"href": stack}, "events": {"href": f"{stack}/events"}}
    if isinstance(notice, HookNotice):
        kind = "hook"
        if notice.state == "reached":
            links["clear"] = {"href": f"{stack}/resources/{notice.resource_name}/signal", "method": "POST",
                              "body": {"unset_hook": notice.hook}}
            links["step"] = {"href": f"{stack}/step", "method": "POST"}
            links["continue"] = {"href": f"{stack}/continue", "method": "POST"}
    else:
        kind = "event"
    return {"kind": kind, "id": key_of(notice), "notice": dataclasses.asdict(notice), "links": links}


def signature(secret: str, body: bytes) -> str:
    """``X-Ember-Signature``: HMAC-SHA256 of the exact body bytes with the subscription's secret."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
