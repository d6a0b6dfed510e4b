"""The :class:`~libs.cloud.caller.CloudCaller` that makes calls through openstacksdk.

openstacksdk is synchronous, so every call runs in a bounded thread pool off
the event loop. One ``Connection`` per target (a ``clouds.yaml`` entry and a
project) is made on first use and reused by every later call, from any thread:
its keystoneauth session pools HTTP connections, and its authentication takes
keystoneauth's own lock. openstacksdk makes a service's proxy lazily, on first
attribute access, with no lock, so proxies are fetched under one.

Quota, 5xx and unreachable answers are tried again here, with exponential
backoff, before the answer is handed back (a call that makes something, only
when the cloud surely did nothing: :func:`~libs.cloud.calls.worth_retrying`).
Each call is one trace span named ``<service>.<method>``; neither spans, logs
nor answers carry a call's arguments, and the entry's password, secrets and
token are blotted out of every message the cloud or the sdk wrote.

A lookup by name (``find_*``) asked for while the same one is on its way is not
sent again: its askers share the one answer. A thousand servers of one flavor
created together look the flavor up once, not a thousand times; nothing is
kept once the answer is in, so nothing goes stale.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import dataclasses
import importlib
import threading
from collections.abc import AsyncIterator, Sequence
from typing import Any

import openstack.config
import openstack.connection
import orjson
from keystoneauth1 import session as ksa_session
from openstack import resource
from opentelemetry import trace

from libs.cloud.caller import CloudTarget
from libs.cloud.calls import EXISTING, Answer, CloudCall, worth_retrying
from libs.cloud.errors import classify
from libs.cloud.values import to_json
from libs.config import CloudSettings
from libs.telemetry.logs import logger

log = logger("cloud")

# The auth options that are secrets (keystoneauth's names for its plugins' secret options).
_SECRET_OPTIONS = ("password", "token", "application_credential_secret", "secret", "passcode",
                   "client_secret", "access_token")
_MAX_RETRY_WAIT = 30.0
# Seconds a closing caller lets running calls end in (a cloud answers well within them).
CLOSE_WAIT = 5.0
# Calls that look an object up by name or id and change nothing: shared while on their way.
_LOOKUP_PREFIX = "find_"
_BLOT = "***"


@dataclasses.dataclass
class _Cloud:
    """One target's connection, the lock its proxies are made under, and its secrets."""

    connection: openstack.connection.Connection
    proxy_lock: threading.Lock
    secrets: tuple[str, ...]

    def token(self) -> str | None:
        auth_ref = getattr(self.connection.session.auth, "auth_ref", None)
        token = getattr(auth_ref, "auth_token", None)
        return token if isinstance(token, str) else None

    def blot(self, text: str) -> str:
        for secret in (*self.secrets, self.token()):
            if secret and len(secret) >= 4:
                text = text.replace(secret, _BLOT)
        return text


class SdkCaller:
    """Makes :class:`CloudCall` items through openstacksdk; see the module's docstring."""

    def __init__(self, settings: CloudSettings, tracer: trace.Tracer | None = None) -> None:
        self._settings = settings
        self._tracer = tracer or trace.get_tracer("ember.cloud")
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=settings.threads,
                                                           thread_name_prefix="ember-cloud")
        self._clouds: dict[CloudTarget, _Cloud] = {}
        self._clouds_lock = threading.Lock()
        # How many Connections were made (one per target, ever), and the most calls ever in
        # flight at once (never more than the pool's threads): what the tests observe.
        self.connections_made = 0
        self.peak_in_flight = 0
        # Every call sent, by ``<service>.<method>`` (retries counted): what a benchmark reports.
        self.calls_made: collections.Counter[str] = collections.Counter()
        self._in_flight = 0
        self._counts_lock = threading.Lock()
        self._idle = threading.Condition(self._counts_lock)
        # Lookups on their way (event loop only), by what they ask: later askers share the answer.
        self._looking_up: dict[tuple[CloudTarget, str, str, bytes], asyncio.Future[Answer]] = {}

    async def call(self, target: CloudTarget, calls: Sequence[CloudCall]) -> dict[str, Answer]:
        answers = await asyncio.gather(*(self._call(target, call) for call in calls))
        return {call.key: answer for call, answer in zip(calls, answers, strict=True)}

    async def _call(self, target: CloudTarget, call: CloudCall) -> Answer:
        if not call.method.startswith(_LOOKUP_PREFIX):
            return await self._send(target, call)
        asked = (target, call.service.value, call.method,
                 orjson.dumps([call.args, call.kwargs], option=orjson.OPT_SORT_KEYS))
        on_its_way = self._looking_up.get(asked)
        if on_its_way is None:
            on_its_way = asyncio.ensure_future(self._send(target, call))
            self._looking_up[asked] = on_its_way
            on_its_way.add_done_callback(lambda _: self._looking_up.pop(asked, None))
        # Shielded: one asker cancelled must not cancel the answer the others wait for.
        return await asyncio.shield(on_its_way)

    async def _send(self, target: CloudTarget, call: CloudCall) -> Answer:
        loop = asyncio.get_running_loop()
        with self._tracer.start_as_current_span(call.describe(), kind=trace.SpanKind.CLIENT) as span:
            span.set_attribute("cloud.name", target.cloud)
            if target.project is not None:
                span.set_attribute("cloud.project", target.project)
            attempt = 0
            while True:
                answer = await loop.run_in_executor(self._pool, self._make, target, call)
                error = answer.error
                last = attempt >= self._settings.retries
                if error is None or last or not worth_retrying(call.method, error):
                    break
                wait = min(self._settings.retry_seconds * 2 ** attempt, _MAX_RETRY_WAIT)
                attempt += 1
                log.warning("cloud call %s on %s failed (%s, HTTP %s, %s); try %d of %d in %.2fs",
                            call.describe(), target.cloud, error.kind.value, error.status, error.exception,
                            attempt, self._settings.retries, wait)
                await asyncio.sleep(wait)
            span.set_attribute("cloud.attempts", attempt + 1)
            if error is not None:
                span.set_attribute("cloud.error.kind", error.kind.value)
                span.set_attribute("cloud.error.exception", error.exception)
                if error.status is not None:
                    span.set_attribute("http.response.status_code", error.status)
                span.set_status(trace.Status(trace.StatusCode.ERROR, error.kind.value))
            return answer

    # ---- in a pool thread ------------------------------------------------------------------

    def _make(self, target: CloudTarget, call: CloudCall) -> Answer:
        with self._counts_lock:
            self._in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self._in_flight)
            self.calls_made[call.describe()] += 1
        try:
            return self._answer(target, call)
        finally:
            with self._counts_lock:
                self._in_flight -= 1
                self._idle.notify_all()

    def _answer(self, target: CloudTarget, call: CloudCall) -> Answer:
        cloud: _Cloud | None = None
        try:
            cloud = self._cloud(target)
            with cloud.proxy_lock:
                proxy = getattr(cloud.connection, call.service.value)
            if call.method.startswith("_"):
                raise AttributeError(f"{call.describe()} is not a proxy method")
            method = getattr(proxy, call.method)
            args = [_argument(value) for value in call.args]
            kwargs = {name: _argument(value) for name, value in call.kwargs.items()}
            return Answer(value=to_json(method(*args, **kwargs)))
        except Exception as exc:  # every failure becomes an answer; the caller never raises
            error = classify(exc)
            if cloud is not None:
                error = dataclasses.replace(error, message=cloud.blot(error.message))
            elif self._clouds:
                for other in list(self._clouds.values()):
                    error = dataclasses.replace(error, message=other.blot(error.message))
            return Answer(error=error)

    def _cloud(self, target: CloudTarget) -> _Cloud:
        cloud = self._clouds.get(target)
        if cloud is not None:
            return cloud
        with self._clouds_lock:
            cloud = self._clouds.get(target)
            if cloud is None:
                cloud = self._connect(target)
                self._clouds[target] = cloud
                self.connections_made += 1
            return cloud

    def _connect(self, target: CloudTarget) -> _Cloud:
        files = [str(self._settings.config_file)] if self._settings.config_file else None
        loader = openstack.config.OpenStackConfig(config_files=files, load_envvars=False)
        options: dict[str, Any] = {"api_timeout": self._settings.request_timeout}
        if target.project is not None:
            options["auth"] = {"project_name": target.project}
        region = loader.get_one(cloud=target.cloud, **options)
        auth = region.config.get("auth") or {}
        secrets = tuple(str(auth[name]) for name in _SECRET_OPTIONS if auth.get(name))
        connection = openstack.connection.Connection(config=region)
        self._size_http_pool(connection)
        return _Cloud(connection, threading.Lock(), secrets)

    def _size_http_pool(self, connection: openstack.connection.Connection) -> None:
        """One kept HTTP connection per thread: urllib3 keeps 10 per host, and throws the rest away.

        And no ``~/.netrc`` lookup: requests looks for the file (two ``stat`` calls) on every
        request of a session without auth of its own, where py-spy caught bench.cloud's busy
        workers in a fifth of their samples; keystoneauth sends its token as a header, so the
        session's auth is one that adds nothing.
        """
        http = connection.session.session  # keystoneauth's requests.Session
        http.auth = _no_auth
        for scheme in ("http://", "https://"):
            old = http.adapters.get(scheme)
            http.mount(scheme, ksa_session.TCPKeepAliveAdapter(
                pool_maxsize=max(self._settings.threads, 10),
                tls_ciphers=getattr(old, "tls_ciphers", None),
                tls_min_version=getattr(old, "tls_min_version", None)))

    async def close(self, wait_seconds: float = CLOSE_WAIT) -> None:
        """Let running calls end (for up to ``wait_seconds``), then close every connection; log the
        calls made, by service.method.

        A call still running then is left to its thread and its answer is lost, as in a crash:
        its step marked it attempted, and the step's redelivery finds what it made by its cloud
        tag. Its thread must not hold the process's exit (``libs.lifecycle.run`` sees to that).
        """
        self._pool.shutdown(wait=False, cancel_futures=True)
        left = await asyncio.get_running_loop().run_in_executor(None, self._wait_idle, wait_seconds)
        if left:
            log.warning("%d cloud call(s) still under way at close: their answers are lost", left)
        else:
            with self._clouds_lock:
                for cloud in self._clouds.values():
                    cloud.connection.close()
                self._clouds.clear()
        log.info("cloud calls made: %d in all", sum(self.calls_made.values()),
                 extra={"calls_made": dict(sorted(self.calls_made.items())),
                        "connections_made": self.connections_made, "peak_in_flight": self.peak_in_flight})

    def _wait_idle(self, seconds: float) -> int:
        """The calls still running after up to ``seconds``."""
        with self._idle:
            self._idle.wait_for(lambda: self._in_flight == 0, seconds)
            return self._in_flight


def _no_auth(request: Any) -> Any:
    """A requests auth that leaves the request as it is."""
    return request


def _argument(value: Any) -> Any:
    """A call's JSON argument as the sdk takes it: :func:`~libs.cloud.calls.existing` becomes the object."""
    if not (isinstance(value, dict) and isinstance(value.get(EXISTING), str)):
        return value
    module_name, _, class_name = value[EXISTING].rpartition(".")
    module = importlib.import_module(f"openstack.{module_name}")
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, resource.Resource)):
        raise TypeError(f"{value[EXISTING]} is not an openstacksdk resource")
    return cls.existing(id=value.get("id"))


@contextlib.asynccontextmanager
async def opened(settings: CloudSettings, tracer: trace.Tracer | None = None
                 ) -> AsyncIterator[SdkCaller | None]:
    """A service's caller for its lifetime: None when no cloud is configured at all."""
    if settings.default is None and not settings.projects:
        yield None
        return
    caller = SdkCaller(settings, tracer)
    try:
        yield caller
    finally:
        await caller.close()
