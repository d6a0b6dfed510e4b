"""Where a run's result is signalled, read from its config's derived inputs, and when to try again (pure).

As heat-config-notify decides: ``deploy_signal_id`` is a URL to send the
result to with ``deploy_signal_verb`` (POST unless PUT); otherwise
``deploy_auth_url`` with the deployment's credentials is HEAT_SIGNAL: a token
from that Keystone, then the resource's signal route of the orchestration
API in its catalog. ``deploy_signal_subject`` (NATS_SIGNAL, Ember's own) is a NATS
JetStream subject to publish the result to. With none of them (NO_SIGNAL) nothing is sent.
"""

from __future__ import annotations

import dataclasses
import enum
from urllib.parse import quote, urlsplit

from libs.agent.configs import DerivedConfig


@dataclasses.dataclass(frozen=True)
class ToUrl:
    url: str
    verb: str


@dataclasses.dataclass(frozen=True)
class ToHeat:
    auth_url: str
    user_id: str | None
    username: str | None
    password: str
    project_id: str
    region: str | None
    stack: str  # "<stack name>/<stack id>"
    resource: str

    @property
    def tokens_url(self) -> str:
        """Keystone v3's token route under ``auth_url``, whether or not it names the version."""
        base = self.auth_url.rstrip("/")
        return f"{base}/auth/tokens" if base.endswith("/v3") else f"{base}/v3/auth/tokens"

    def signal_url(self, orchestration: str) -> str:
        """The resource's signal route under the orchestration endpoint (``.../v1/<project>``)."""
        return (f"{orchestration.rstrip('/')}/stacks/{quote(self.stack, safe='/')}"
                f"/resources/{quote(self.resource, safe='')}/signal")

    def auth_body(self) -> dict[str, object]:
        user: dict[str, object] = ({"id": self.user_id} if self.user_id
                                   else {"name": self.username, "domain": {"id": "default"}})
        return {"auth": {"identity": {"methods": ["password"],
                                      "password": {"user": {**user, "password": self.password}}},
                         "scope": {"project": {"id": self.project_id}}}}


@dataclasses.dataclass(frozen=True)
class ToNats:
    subject: str


@dataclasses.dataclass(frozen=True)
class Nowhere:
    why: str
    # True where a signal was asked for and cannot be sent; NO_SIGNAL is not a fault.
    fault: bool = False


Target = ToUrl | ToHeat | ToNats | Nowhere


def _text(config: DerivedConfig, name: str) -> str | None:
    value = config.value(name)
    return value if isinstance(value, str) and value else None


def _http(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def target(config: DerivedConfig) -> Target:
    signal_id = _text(config, "deploy_signal_id")
    if signal_id is not None:
        if not _http(signal_id):
            return Nowhere(f"deploy_signal_id {signal_id[:200]!r} is not an http(s) URL", fault=True)
        verb = "PUT" if (_text(config, "deploy_signal_verb") or "").upper() == "PUT" else "POST"
        return ToUrl(signal_id, verb)
    subject = _text(config, "deploy_signal_subject")
    if subject is not None:
        if any(c in subject for c in " \t\r\n*>") or "" in subject.split("."):
            return Nowhere(f"deploy_signal_subject {subject[:200]!r} is not a NATS subject", fault=True)
        return ToNats(subject)
    if _text(config, "deploy_queue_id") is not None:
        return Nowhere("ZAQAR_SIGNAL is not supported (no Zaqar in Ember)", fault=True)
    auth_url = _text(config, "deploy_auth_url")
    if auth_url is None:
        return Nowhere(f"signal transport {_text(config, 'deploy_signal_transport') or 'NO_SIGNAL'}")
    missing = [name for name in ("deploy_password", "deploy_project_id", "deploy_stack_id",
                                 "deploy_resource_name") if _text(config, name) is None]
    user_id, username = _text(config, "deploy_user_id"), _text(config, "deploy_username")
    if user_id is None and username is None:
        missing.append("deploy_user_id")
    if missing or not _http(auth_url):
        lacking = ", ".join(missing) or "an http(s) deploy_auth_url"
        return Nowhere(f"HEAT_SIGNAL without {lacking}", fault=True)
    return ToHeat(auth_url=auth_url, user_id=user_id, username=username,
                  password=str(_text(config, "deploy_password")),
                  project_id=str(_text(config, "deploy_project_id")),
                  region=_text(config, "deploy_region_name"), stack=str(_text(config, "deploy_stack_id")),
                  resource=str(_text(config, "deploy_resource_name")))


class Answer(enum.Enum):
    DELIVERED = "delivered"
    RETRY = "retry"
    REFUSED = "refused"


def answer(status: int) -> Answer:
    """What an HTTP status says of a delivery: done, worth another try, or never going to work."""
    if 200 <= status < 300:
        return Answer.DELIVERED
    if status in (408, 425, 429) or status >= 500:
        return Answer.RETRY
    return Answer.REFUSED


@dataclasses.dataclass(frozen=True)
class Backoff:
    attempts: int
    first_wait: float
    max_wait: float

    def wait_after(self, attempt: int) -> float | None:
        """Seconds before the try after ``attempt`` (1-based); None when that was the last."""
        if attempt >= self.attempts:
            return None
        return float(min(self.max_wait, self.first_wait * 2 ** (attempt - 1)))


def orchestration_endpoint(token_body: object, region: str | None) -> str | None:
    """The public orchestration URL of a Keystone v3 token's catalog (in ``region``, if named)."""
    token = token_body.get("token") if isinstance(token_body, dict) else None
    catalog = token.get("catalog") if isinstance(token, dict) else None
    for service in catalog if isinstance(catalog, list) else []:
        if not isinstance(service, dict) or service.get("type") != "orchestration":
            continue
        for endpoint in service.get("endpoints") or []:
            if (isinstance(endpoint, dict) and endpoint.get("interface") == "public"
                    and isinstance(endpoint.get("url"), str)
                    and (region is None or region in (endpoint.get("region"), endpoint.get("region_id")))):
                return str(endpoint["url"])
    return None
