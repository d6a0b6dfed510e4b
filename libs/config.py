"""Configuration, parsed once from ``EMBER_*`` variables into frozen dataclasses.

Nothing reads the environment anywhere else: a service calls :func:`load` with
``os.environ`` (tests pass their own mapping) and hands the result down.
"""

from __future__ import annotations

import dataclasses
import math
import re
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from libs.template.budgets import DEPTH_CEILING, Budgets
from libs.template.convergence import DriftPolicy

Exporter = Literal["none", "console", "otlp", "file"]
LogFormat = Literal["json", "text"]
AuthMode = Literal["noauth", "keystone"]

_PREFIX_RE = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


class ConfigError(ValueError):
    """A variable has a value Ember cannot use; the message names the variable."""

    def __init__(self, variable: str, problem: str) -> None:
        super().__init__(f"{variable}: {problem}")
        self.variable = variable


@dataclasses.dataclass(frozen=True)
class TelemetrySettings:
    exporter: Exporter
    otlp_endpoint: str | None
    file: Path | None
    service_namespace: str


@dataclasses.dataclass(frozen=True)
class ApiSettings:
    # noauth: the path's project is the caller's (Heat's noauth pipeline); keystone:
    # every request carries a token that Ember's own identity endpoint issued.
    auth: AuthMode
    # YAML with users, projects and role assignments for keystone mode.
    auth_config: Path | None
    token_ttl_seconds: int
    # Heat's limits on what a request may carry (heat.conf names, same defaults).
    max_template_size: int
    max_json_body_size: int
    max_resources_per_stack: int
    # Heat's enable_stack_abandon / enable_stack_adopt (off by default, as in Heat).
    enable_stack_abandon: bool
    enable_stack_adopt: bool
    # How often an open event stream checks that its token is still live (keystone mode).
    token_recheck_seconds: float = 5.0
    # Heat's max_software_configs_per_tenant / max_software_deployments_per_tenant (-1: no limit;
    # as in Heat, an admin is not held to them).
    max_software_configs_per_tenant: int = 4096
    max_software_deployments_per_tenant: int = 4096


@dataclasses.dataclass(frozen=True)
class CloudProject:
    """Where one Ember project's cloud calls go: a ``clouds.yaml`` entry, optionally one of its projects."""

    project: str
    cloud: str
    # The cloud project (name) to scope to instead of the entry's own (None: the entry's).
    cloud_project: str | None = None


@dataclasses.dataclass(frozen=True)
class CloudSettings:
    """Which clouds Ember drives and how it calls them (openstacksdk's own clouds.yaml lookup)."""

    # The clouds.yaml openstacksdk reads (OS_CLIENT_CONFIG_FILE; None: its default search path).
    config_file: Path | None = None
    # The default cloud entry: EMBER_CLOUD, else OS_CLOUD as openstacksdk reads it (None: no cloud
    # configured, so `ember dev` runs the simulator).
    default: str | None = None
    # Ember projects whose calls go to another entry (EMBER_CLOUD_PROJECTS="projA=cloudX,projB=cloudY/p").
    projects: tuple[CloudProject, ...] = ()
    # openstacksdk is synchronous: its calls run in a pool of this many threads.
    threads: int = 16
    # Quota, 5xx and unreachable answers are tried again this many times, the first after
    # retry_seconds, each wait twice the one before.
    retries: int = 4
    retry_seconds: float = 1.0
    # How long one HTTP request to the cloud may take (openstacksdk's api_timeout).
    request_timeout: float = 60.0


@dataclasses.dataclass(frozen=True)
class EventRetention:
    """Heat's ``max_events_per_stack`` (0, or Ember's -1: keep every event) and ``event_purge_batch_size``.

    Heat, before it writes a stack's event, may count the stack's events and, at ``max_events`` or
    more, delete the ``purge_batch`` oldest: the event written then survives, so the stack holds
    ``max_events`` at most. Heat checks on roughly one write in ``purge_batch / 2`` (every write when
    the batch is 1 or 2); Ember as if at every write, without Heat's random overshoot. Its notifier
    purges after publishing, keeping as many of the newest events as Heat would have kept after those
    writes (:meth:`kept_after`), so the count depends on how many events a stack had, not on how
    the notifier's rounds fell.
    """

    max_events: int = 1000
    purge_batch: int = 200

    @property
    def keeps_all(self) -> bool:
        return self.max_events <= 0

    def kept_after(self, held: int, written: int) -> int:
        """How many events a stack holding ``held`` holds after ``written`` more, purged as Heat
        purges before each write (Heat 27.0.1 with max_events_per_stack 10 and a batch of 1 or 2
        keeps the newest 10 of 32 events written one after another)."""
        count = held
        if self.keeps_all:
            return count + written
        for _ in range(written):
            if count >= self.max_events:
                count -= min(self.purge_batch, count)
            count += 1
        return count


@dataclasses.dataclass(frozen=True)
class Settings:
    database_url: str | None
    nats_url: str | None
    api_host: str
    api_port: int
    data_dir: Path
    # Every stream, subject and consumer name derives from this prefix, so two
    # Ember installations (or two test runs) can share one nats-server.
    nats_prefix: str
    # JetStream replicas for Ember's streams: 1 on one server, 3 on a cluster.
    nats_replicas: int
    telemetry: TelemetrySettings
    log_level: str
    log_format: LogFormat
    report_interval: float
    shutdown_grace: float
    worker_concurrency: int
    # Work items stepped together in one database round (1: one at a time).
    worker_batch: int
    db_pool_size: int
    api: ApiSettings
    hostname: str
    # How often a worker looks for paused nodes to re-queue (deadlines, lost clears).
    hook_sweep_seconds: float = 2.0
    # How often a planner looks for plan requests whose sender died before publishing them.
    plan_sweep_seconds: float = 2.0
    # The first wait before a failed webhook delivery is tried again (it doubles each time).
    notify_retry_seconds: float = 1.0
    # Heat's max_events_per_stack and event_purge_batch_size: what the notifier keeps of each stack's events.
    event_retention: EventRetention = EventRetention()
    # How often the observer lists each cloud project it holds and compares it with the records.
    observe_interval: float = 60.0
    # Per resource type, where it differs (EMBER_OBSERVE_INTERVALS): (type, seconds), sorted.
    observe_type_intervals: tuple[tuple[str, float], ...] = ()
    # What drift does where a stack's environment says nothing (observe: report; heal: converge).
    drift_policy: DriftPolicy = DriftPolicy.OBSERVE
    # Heals of one resource the observer asks for within an hour before it only reports.
    heal_limit: int = 3
    # Heat's action_retry_limit: times a create the cloud put in an error state is made again.
    action_retry_limit: int = 2
    # Seconds a server (or volume) may take to become ready before it counts as in error and,
    # within action_retry_limit, is made again (None, from 0: no limit but the stack's timeout, as Heat).
    ready_timeout: float | None = None
    # Whether `ember dev`'s simulated cloud runs an `ember agent` per server booted for software
    # config (they run templates' scripts on this machine: EMBER_DEV_AGENTS=off turns them off).
    dev_agents: bool = True
    # Who this process is on NATS (None: anonymous, for a server without authorization).
    nats_user: str | None = None
    nats_password: str | None = dataclasses.field(default=None, repr=False)
    # Projects `ember dev` makes integration users for on its embedded nats-server.
    nats_projects: tuple[str, ...] = ()
    # Template evaluation of the api and the workers runs in this many processes of their
    # own (0: inline, with no deadline), each job killed after evaluation_timeout seconds.
    evaluation_processes: int = 2
    evaluation_timeout: float = 5.0
    # Address space each evaluation process may use, in MB (0: no limit).
    evaluation_memory_mb: int = 2048
    # What one template, environment, file or evaluation may cost (libs/template/budgets.py).
    budgets: Budgets = dataclasses.field(default_factory=Budgets)
    cloud: CloudSettings = dataclasses.field(default_factory=CloudSettings)

    @property
    def api_url(self) -> str:
        host = "127.0.0.1" if self.api_host in ("0.0.0.0", "") else self.api_host
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.api_port}"

    def with_urls(self, database_url: str, nats_url: str) -> Settings:
        return dataclasses.replace(self, database_url=database_url, nats_url=nats_url)

    def require_urls(self) -> tuple[str, str]:
        """The two server URLs a service needs; `ember dev` fills them in when unset."""
        if not self.database_url:
            raise ConfigError("EMBER_DATABASE_URL", "is not set (use `ember dev` for embedded servers)")
        if not self.nats_url:
            raise ConfigError("EMBER_NATS_URL", "is not set (use `ember dev` for embedded servers)")
        return self.database_url, self.nats_url


def _get(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name)
    if value is None or value.strip() == "":
        return None
    return value.strip()


def _url(env: Mapping[str, str], name: str, schemes: tuple[str, ...]) -> str | None:
    value = _get(env, name)
    if value is None:
        return None
    for url in value.split(","):
        scheme = url.split("://", 1)[0] if "://" in url else ""
        if scheme not in schemes:
            wanted = " or ".join(s + "://" for s in schemes)
            raise ConfigError(name, f"expected a URL starting with {wanted}, got {url!r}")
    return value


def _bind(env: Mapping[str, str], name: str, default: str) -> tuple[str, int]:
    value = _get(env, name) or default
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(name, f"expected HOST:PORT with a port from 1 to 65535, got {value!r}")
    return host.strip("[]"), int(port)


def _number(env: Mapping[str, str], name: str, default: float, minimum: float) -> float:
    return number(_get(env, name), name, default, minimum)


def number(value: str | None, name: str, default: float, minimum: float) -> float:
    """``value`` as a finite number of at least ``minimum`` (``default`` when None), else the ConfigError."""
    if value is None:
        return default
    try:
        parsed = float(value)
    except ValueError:
        raise ConfigError(name, f"expected a number, got {value!r}") from None
    if not math.isfinite(parsed):
        raise ConfigError(name, f"expected a finite number, got {value!r}")
    if parsed < minimum:
        raise ConfigError(name, f"must be at least {minimum:g}, got {value!r}")
    return parsed


def _integer(env: Mapping[str, str], name: str, default: int, minimum: int, maximum: int) -> int:
    value = _get(env, name)
    if value is None:
        return default
    if not re.fullmatch(r"[0-9]+", value) or not minimum <= int(value) <= maximum:
        raise ConfigError(name, f"expected a whole number from {minimum} to {maximum}, got {value!r}")
    return int(value)


def _limit(env: Mapping[str, str], name: str, default: int, minimum: int) -> int:
    """One of Heat's limits, where ``-1`` lifts it."""
    value = _get(env, name)
    if value is not None and value.strip() == "-1":
        return -1
    return _integer(env, name, default, minimum, 10**9)


def _type_intervals(env: Mapping[str, str], name: str) -> tuple[tuple[str, float], ...]:
    """``OS::Nova::Server=30,OS::Neutron::Port=300``: seconds per resource type."""
    found: dict[str, float] = {}
    for part in (p.strip() for p in (_get(env, name) or "").split(",")):
        if not part:
            continue
        type_name, sep, value = part.rpartition("=")
        try:
            seconds = float(value) if sep and type_name.strip() else -1.0
        except ValueError:
            seconds = -1.0
        if not seconds >= 0.1:
            raise ConfigError(name, f"expected <resource type>=<seconds of at least 0.1>, got {part!r}")
        found[type_name.strip()] = seconds
    return tuple(sorted(found.items()))


def _choice(env: Mapping[str, str], name: str, default: str, choices: tuple[str, ...]) -> str:
    value = _get(env, name) or default
    if value not in choices:
        raise ConfigError(name, f"expected one of {', '.join(choices)}, got {value!r}")
    return value


def _telemetry(env: Mapping[str, str]) -> TelemetrySettings:
    endpoint = _url(env, "EMBER_OTLP_ENDPOINT", ("http", "https"))
    # An OTLP endpoint alone is enough to mean "export there", as with OTEL_* conventions.
    default: Exporter = "otlp" if endpoint else "none"
    exporter = _choice(env, "EMBER_OTEL_EXPORTER", default, ("none", "console", "otlp", "file"))
    if exporter == "otlp" and not endpoint:
        raise ConfigError("EMBER_OTLP_ENDPOINT", "is required when EMBER_OTEL_EXPORTER=otlp")
    file_value = _get(env, "EMBER_OTEL_FILE")
    if exporter == "file" and not file_value:
        raise ConfigError("EMBER_OTEL_FILE", "is required when EMBER_OTEL_EXPORTER=file")
    return TelemetrySettings(
        exporter=exporter,  # type: ignore[arg-type]  # narrowed by _choice
        otlp_endpoint=endpoint,
        file=Path(file_value) if file_value else None,
        service_namespace=_get(env, "EMBER_OTEL_NAMESPACE") or "ember",
    )


def _api(env: Mapping[str, str]) -> ApiSettings:
    auth = _choice(env, "EMBER_AUTH", "noauth", ("noauth", "keystone"))
    config = _get(env, "EMBER_AUTH_CONFIG")
    if auth == "keystone" and not config:
        raise ConfigError("EMBER_AUTH_CONFIG", "is required when EMBER_AUTH=keystone (a YAML file of users"
                                               " and projects)")
    max_resources = _limit(env, "EMBER_MAX_RESOURCES_PER_STACK", 1000, 1)
    return ApiSettings(
        auth=auth,  # type: ignore[arg-type]  # narrowed by _choice
        auth_config=Path(config) if config else None,
        token_ttl_seconds=_integer(env, "EMBER_TOKEN_TTL", 3600, 60, 10**7),
        max_template_size=_integer(env, "EMBER_MAX_TEMPLATE_SIZE", 524_288, 1024, 2**31),
        max_json_body_size=_integer(env, "EMBER_MAX_JSON_BODY_SIZE", 1_048_576, 1024, 2**31),
        max_resources_per_stack=max_resources,
        enable_stack_abandon=_choice(env, "EMBER_ENABLE_STACK_ABANDON", "false", ("true", "false")) == "true",
        enable_stack_adopt=_choice(env, "EMBER_ENABLE_STACK_ADOPT", "false", ("true", "false")) == "true",
        token_recheck_seconds=_number(env, "EMBER_TOKEN_RECHECK_SECONDS", 5.0, 0.05),
        max_software_configs_per_tenant=_limit(env, "EMBER_MAX_SOFTWARE_CONFIGS_PER_TENANT", 4096, 0),
        max_software_deployments_per_tenant=_limit(env, "EMBER_MAX_SOFTWARE_DEPLOYMENTS_PER_TENANT", 4096, 0),
    )


def nats_prefix(value: str | None, variable: str) -> str:
    """A subject prefix (default ``ember``), or the ConfigError naming ``variable``."""
    prefix = value or "ember"
    if not _PREFIX_RE.match(prefix):
        raise ConfigError(variable, "expected lowercase letters, digits and _"
                          f" (starting with a letter), got {prefix!r}")
    return prefix


def logging_of(env: Mapping[str, str]) -> tuple[str, LogFormat]:
    """``EMBER_LOG_LEVEL`` and ``EMBER_LOG_FORMAT``."""
    log_level = (_get(env, "EMBER_LOG_LEVEL") or "INFO").upper()
    if log_level not in _LOG_LEVELS:
        raise ConfigError("EMBER_LOG_LEVEL", f"expected one of {', '.join(_LOG_LEVELS)}, got {log_level!r}")
    return log_level, _choice(env, "EMBER_LOG_FORMAT", "json", ("json", "text"))  # type: ignore[return-value]


def load(env: Mapping[str, str]) -> Settings:
    """Parse every ``EMBER_*`` variable; raise :class:`ConfigError` on the first bad one."""
    host, port = _bind(env, "EMBER_API_BIND", "127.0.0.1:8004")
    prefix = nats_prefix(_get(env, "EMBER_NATS_PREFIX"), "EMBER_NATS_PREFIX")
    log_level, log_format = logging_of(env)
    nats_user, nats_password = _get(env, "EMBER_NATS_USER"), env.get("EMBER_NATS_PASSWORD") or None
    if (nats_user is None) != (nats_password is None):
        missing = "EMBER_NATS_PASSWORD" if nats_password is None else "EMBER_NATS_USER"
        raise ConfigError(missing, "is required when the other of EMBER_NATS_USER and EMBER_NATS_PASSWORD"
                                   " is set")
    return Settings(
        database_url=_url(env, "EMBER_DATABASE_URL", ("postgres", "postgresql")),
        nats_url=_url(env, "EMBER_NATS_URL", ("nats", "tls")),
        api_host=host,
        api_port=port,
        data_dir=Path(_get(env, "EMBER_DATA_DIR") or ".ember").resolve(),
        nats_prefix=prefix,
        nats_replicas=_integer(env, "EMBER_NATS_REPLICAS", 1, 1, 5),
        telemetry=_telemetry(env),
        log_level=log_level,
        log_format=log_format,
        report_interval=_number(env, "EMBER_REPORT_INTERVAL", 10.0, 0.1),
        shutdown_grace=_number(env, "EMBER_SHUTDOWN_GRACE", 10.0, 0.0),
        worker_concurrency=_integer(env, "EMBER_WORKER_CONCURRENCY", 128, 1, 4096),
        worker_batch=_integer(env, "EMBER_WORKER_BATCH", 64, 1, 1024),
        db_pool_size=_integer(env, "EMBER_DB_POOL_SIZE", 20, 2, 1000),
        hook_sweep_seconds=_number(env, "EMBER_HOOK_SWEEP_SECONDS", 2.0, 0.05),
        plan_sweep_seconds=_number(env, "EMBER_PLAN_SWEEP_SECONDS", 2.0, 0.05),
        notify_retry_seconds=_number(env, "EMBER_NOTIFY_RETRY_SECONDS", 1.0, 0.01),
        event_retention=EventRetention(
            max_events=_limit(env, "EMBER_MAX_EVENTS_PER_STACK", 1000, 0),
            purge_batch=_integer(env, "EMBER_EVENT_PURGE_BATCH_SIZE", 200, 1, 10**6)),
        observe_interval=_number(env, "EMBER_OBSERVE_INTERVAL", 60.0, 0.1),
        observe_type_intervals=_type_intervals(env, "EMBER_OBSERVE_INTERVALS"),
        drift_policy=DriftPolicy(_choice(env, "EMBER_DRIFT_POLICY", "observe", tuple(DriftPolicy))),
        heal_limit=_integer(env, "EMBER_HEAL_LIMIT", 3, 0, 1000),
        action_retry_limit=_integer(env, "EMBER_ACTION_RETRY_LIMIT", 2, 0, 100),
        ready_timeout=_number(env, "EMBER_READY_TIMEOUT", 0.0, 0.0) or None,
        dev_agents=_choice(env, "EMBER_DEV_AGENTS", "on", ("on", "off")) == "on",
        evaluation_processes=_integer(env, "EMBER_EVALUATION_PROCESSES", 2, 0, 64),
        evaluation_timeout=_number(env, "EMBER_EVALUATION_TIMEOUT", 5.0, 0.1),
        evaluation_memory_mb=_integer(env, "EMBER_EVALUATION_MEMORY_MB", 2048, 0, 2**20),
        api=_api(env),
        nats_user=nats_user,
        nats_password=nats_password,
        nats_projects=tuple(p.strip() for p in (_get(env, "EMBER_NATS_PROJECTS") or "").split(",")
                            if p.strip()),
        hostname=_get(env, "EMBER_HOSTNAME") or socket.gethostname(),
        budgets=_budgets(env),
        cloud=_cloud(env),
    )


def _cloud_projects(env: Mapping[str, str]) -> tuple[CloudProject, ...]:
    value = _get(env, "EMBER_CLOUD_PROJECTS")
    if value is None:
        return ()
    mapped: dict[str, CloudProject] = {}
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        project, sep, where = (s.strip() for s in item.partition("="))
        cloud, slash, cloud_project = (s.strip() for s in where.partition("/"))
        if not sep or not project or not cloud or (slash and not cloud_project):
            raise ConfigError("EMBER_CLOUD_PROJECTS", "expected PROJECT=CLOUD[/CLOUD_PROJECT] items separated"
                                                      f" by commas, got {item!r}")
        if project in mapped:
            raise ConfigError("EMBER_CLOUD_PROJECTS", f"project {project!r} is mapped twice")
        mapped[project] = CloudProject(project, cloud, cloud_project or None)
    return tuple(mapped.values())


def _cloud(env: Mapping[str, str]) -> CloudSettings:
    config_file = _get(env, "OS_CLIENT_CONFIG_FILE")
    return CloudSettings(
        config_file=Path(config_file) if config_file else None,
        default=_get(env, "EMBER_CLOUD") or _get(env, "OS_CLOUD"),
        projects=_cloud_projects(env),
        threads=_integer(env, "EMBER_CLOUD_THREADS", 16, 1, 1024),
        retries=_integer(env, "EMBER_CLOUD_RETRIES", 4, 0, 100),
        retry_seconds=_number(env, "EMBER_CLOUD_RETRY_SECONDS", 1.0, 0.0),
        request_timeout=_number(env, "EMBER_CLOUD_REQUEST_TIMEOUT", 60.0, 0.1),
    )


def _budgets(env: Mapping[str, str]) -> Budgets:
    default = Budgets()
    return Budgets(
        max_depth=_integer(env, "EMBER_MAX_TEMPLATE_DEPTH", default.max_depth, 10, DEPTH_CEILING),
        max_alias_nodes=_integer(env, "EMBER_MAX_YAML_ALIAS_NODES", default.max_alias_nodes, 0, 10**8),
        max_value_size=_integer(env, "EMBER_MAX_VALUE_SIZE", default.max_value_size, 1024, 2**31),
        max_evaluation_size=_integer(env, "EMBER_MAX_EVALUATION_SIZE", default.max_evaluation_size,
                                     1024, 2**31),
    )
