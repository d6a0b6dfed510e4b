"""The agent's configuration: options of ``ember agent``, else ``EMBER_AGENT_*`` variables, parsed once.

Logs follow ``EMBER_LOG_LEVEL`` and ``EMBER_LOG_FORMAT``, as every Ember process.

An option given on the command line wins over its variable. Secrets (the
token, the password, the NATS password) are better given as variables, or the
password in the ``--collect-config`` file: a command line is visible to every
user of the machine.
"""

from __future__ import annotations

import dataclasses
import os
import pwd
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from libs.agent import credentials
from libs.config import ConfigError, LogFormat, logging_of, nats_prefix
from libs.config import number as _number

# (option's name as argparse keeps it, variable, help)
OPTIONS: tuple[tuple[str, str, str], ...] = (
    ("api_url", "EMBER_AGENT_API_URL", "Ember's API, e.g. http://127.0.0.1:8004"),
    ("project", "EMBER_AGENT_PROJECT", "the project of the server"),
    ("server_id", "EMBER_AGENT_SERVER_ID", "the server whose deployments this agent runs"),
    ("workdir", "EMBER_AGENT_WORKDIR", "the agent's own folder: its journal and one folder per run"),
    ("token", "EMBER_AGENT_TOKEN", "a token for the API's X-Auth-Token (keystone mode; it expires)"),
    ("user_id", "EMBER_AGENT_USER_ID",
     "the server's stack user, as whom the agent gets its tokens (keystone mode)"),
    ("password", "EMBER_AGENT_PASSWORD", "the stack user's password"),
    ("auth_url", "EMBER_AGENT_AUTH_URL", "where tokens are got (default: the API's /identity/v3)"),
    ("collect_config", "EMBER_AGENT_COLLECT_CONFIG",
     "a JSON file of the server's metadata (or its os-collect-config section), e.g. cfn-init-data:"
     " the stack user, project and auth URL are read from its heat section"),
    ("nats_url", "EMBER_AGENT_NATS_URL",
     "NATS to listen to for pushed deployments (polling goes on), and to answer NATS_SIGNAL on"),
    ("nats_user", "EMBER_AGENT_NATS_USER", "NATS user (the project's integration user)"),
    ("nats_password", "EMBER_AGENT_NATS_PASSWORD", "NATS password"),
    ("nats_prefix", "EMBER_AGENT_NATS_PREFIX", "prefix of Ember's subjects (default ember)"),
    ("interval", "EMBER_AGENT_INTERVAL", "seconds between polls of the API (default 30)"),
    ("timeout", "EMBER_AGENT_TIMEOUT", "seconds one run may take before it is killed (default 3600)"),
    ("user", "EMBER_AGENT_USER", "who runs the configs when the agent is root (default nobody)"),
    ("hooks_dir", "EMBER_AGENT_HOOKS_DIR", "a folder of hook executables named after their group"),
    ("signal_attempts", "EMBER_AGENT_SIGNAL_ATTEMPTS",
     "tries of one signal before it is given up (default 10)"),
    ("signal_retry_seconds", "EMBER_AGENT_SIGNAL_RETRY_SECONDS",
     "first wait before a signal is tried again, doubling up to 30 s (default 0.5)"),
)
MAX_SIGNAL_WAIT_SECONDS = 30.0
# heat-config-notify's bound: a signal body must fit the API's request limit (1 MiB by default).
SIGNAL_BODY_LIMIT = 950_000


@dataclasses.dataclass(frozen=True)
class AgentSettings:
    api_url: str
    project: str
    server_id: str
    workdir: Path
    token: str | None = None
    # The stack user the agent gets tokens as (keystone mode), and where.
    user_id: str | None = None
    password: str | None = None
    auth_url: str | None = None
    nats_url: str | None = None
    nats_user: str | None = None
    nats_password: str | None = None
    nats_prefix: str = "ember"
    interval: float = 30.0
    timeout: float = 3600.0
    # Applies only when the agent runs as root; otherwise configs run as the agent's own user.
    user: str = "nobody"
    hooks_dir: Path | None = None
    signal_attempts: int = 10
    signal_retry_seconds: float = 0.5
    signal_body_limit: int = SIGNAL_BODY_LIMIT
    log_level: str = "INFO"
    log_format: LogFormat = "json"

    @property
    def metadata_url(self) -> str:
        return f"{self.api_url}/v1/{self.project}/software_deployments/metadata/{self.server_id}"


def _given(given: Mapping[str, object], env: Mapping[str, str], name: str, variable: str) -> str | None:
    value = given.get(name)
    if value is None:
        value = env.get(variable)
    text = None if value is None else str(value).strip()
    return text or None


def load(given: Mapping[str, object], env: Mapping[str, str], *, root: bool | None = None) -> AgentSettings:
    """Settings from the command line's ``given`` options, else ``env``; a bad value names its variable."""
    values = {name: _given(given, env, name, variable) for name, variable, _ in OPTIONS}
    where = {name: f"--{name.replace('_', '-')} ({variable})" for name, variable, _ in OPTIONS}
    if values["collect_config"] is not None:
        try:
            found = credentials.from_collect_config(Path(values["collect_config"]).read_bytes())
        except (OSError, ValueError) as exc:
            raise ConfigError(where["collect_config"], f"cannot be read: {exc}") from None
        # What is given on its own wins over what the file says.
        for name, value in found.items():
            values[name] = values[name] or value
    if (values["user_id"] is None) != (values["password"] is None):
        raise ConfigError(where["password" if values["user_id"] else "user_id"],
                          "is required with " + where["user_id" if values["user_id"] else "password"])
    for required in ("api_url", "project", "server_id", "workdir"):
        if values[required] is None:
            raise ConfigError(where[required], "is required")
    api_url = str(values["api_url"]).rstrip("/")
    if urlsplit(api_url).scheme not in ("http", "https") or not urlsplit(api_url).netloc:
        raise ConfigError(where["api_url"], f"{api_url!r} is not an http(s) URL")
    for name in ("project", "server_id"):
        if "/" in str(values[name]):
            raise ConfigError(where[name], "may not contain '/'")
    nats_url = values["nats_url"]
    if nats_url is not None and not all(urlsplit(u.strip()).scheme in ("nats", "tls", "ws", "wss")
                                        for u in nats_url.split(",")):
        raise ConfigError(where["nats_url"], f"{nats_url!r} is not a nats:// URL")
    user = values["user"] or "nobody"
    if (os.geteuid() == 0 if root is None else root):
        try:
            pwd.getpwnam(user)
        except KeyError:
            raise ConfigError(where["user"], f"no user {user!r} on this machine") from None
    attempts = _number(values["signal_attempts"], where["signal_attempts"], 10, 1)
    if attempts != int(attempts):
        raise ConfigError(where["signal_attempts"], "is not a whole number")
    log_level, log_format = logging_of(env)
    auth_url = values["auth_url"] or f"{api_url}/identity/v3"
    if urlsplit(auth_url).scheme not in ("http", "https") or not urlsplit(auth_url).netloc:
        raise ConfigError(where["auth_url"], f"{auth_url!r} is not an http(s) URL")
    return AgentSettings(
        api_url=api_url, project=str(values["project"]), server_id=str(values["server_id"]),
        workdir=Path(str(values["workdir"])).absolute(), token=values["token"], user_id=values["user_id"],
        password=values["password"], auth_url=auth_url.rstrip("/"), nats_url=nats_url,
        nats_user=values["nats_user"], nats_password=values["nats_password"],
        nats_prefix=nats_prefix(values["nats_prefix"], where["nats_prefix"]),
        interval=_number(values["interval"], where["interval"], 30.0, 0.05),
        timeout=_number(values["timeout"], where["timeout"], 3600.0, 0.1), user=user,
        hooks_dir=None if values["hooks_dir"] is None else Path(values["hooks_dir"]).absolute(),
        signal_attempts=int(attempts),
        signal_retry_seconds=_number(values["signal_retry_seconds"], where["signal_retry_seconds"], 0.5, 0.0),
        log_level=log_level, log_format=log_format)
