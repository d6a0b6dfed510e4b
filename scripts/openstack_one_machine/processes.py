"""The cloud's processes: what each one runs, and starting and stopping them by their pid files.

Each process is a session leader of its own (its gunicorn workers or oslo.service children
in its group), logs to ``logs/NAME.log`` and leaves ``run/NAME.pid`` (pid and start time).
Stopping reads those files and signals only a pid that still has that start time, so a
recycled pid is never hit.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from scripts.openstack_one_machine.layout import HOST, PORTS, Api, Daemon, Layout

HERE = Path(__file__).resolve().parent


@dataclasses.dataclass(frozen=True)
class Process:
    name: str
    argv: tuple[str, ...]
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)


# Each WSGI app: its module and how it finds its configuration (env, or its own argv).
_WSGI: Mapping[Api, tuple[str, str]] = {
    Api.KEYSTONE: ("keystone.wsgi.api", "OS_KEYSTONE_CONFIG_DIR"),
    Api.GLANCE: ("glance.wsgi.api", "OS_GLANCE_CONFIG_DIR"),
    Api.PLACEMENT: ("placement.wsgi.api", "OS_PLACEMENT_CONFIG_DIR"),
    Api.NOVA: ("nova.wsgi.osapi_compute", "OS_NOVA_CONFIG_DIR"),
    Api.NEUTRON: ("neutron.wsgi.api", "OS_NEUTRON_CONFIG_DIR"),
    Api.CINDER: ("cinder.wsgi.api", "OS_CINDER_CONFIG_DIR"),
}


def api_process(layout: Layout, api: Api) -> Process:
    module, env_name = _WSGI[api]
    conf_dir = layout.etc / api.value
    app_argv: tuple[str, ...] = (f"{api.value}-api",)
    if api is Api.CINDER:
        # Cinder reads only its command line.
        app_argv += ("--config-file", str(conf_dir / "cinder.conf"))
    return Process(
        name=f"{api.value}-api",
        argv=(str(layout.python), str(HERE / "serve_wsgi.py"), module, f"{HOST}:{PORTS[api]}", "--",
              *app_argv),
        env={env_name: str(conf_dir)},
    )


def daemon_process(layout: Layout, daemon: Daemon) -> Process:
    conf = {
        Daemon.NOVA_CONDUCTOR: layout.etc / "nova" / "nova.conf",
        Daemon.NOVA_SCHEDULER: layout.etc / "nova" / "nova.conf",
        Daemon.NOVA_COMPUTE: layout.etc / "nova-compute" / "nova-compute.conf",
        Daemon.CINDER_SCHEDULER: layout.etc / "cinder" / "cinder.conf",
        Daemon.CINDER_VOLUME: layout.etc / "cinder" / "cinder.conf",
    }[daemon]
    return Process(name=daemon.value, argv=(str(layout.bin / daemon.value), "--config-file", str(conf)))


def _pid_file(layout: Layout, name: str) -> Path:
    return layout.run / f"{name}.pid"


def _stat(pid: int) -> list[str]:
    """``/proc/PID/stat`` fields after the command name (index 0 is field 3, the state)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    return text.rpartition(")")[2].split()


def _started_at(pid: int) -> str:
    """The start time of a live process (none for a zombie: it is gone but for its reaping)."""
    fields = _stat(pid)
    return fields[19] if len(fields) > 19 and fields[0] != "Z" else ""


def running_pid(layout: Layout, name: str) -> int | None:
    """The pid of our process ``name`` if it is alive (the same process: pid and start time)."""
    path = _pid_file(layout, name)
    if not path.exists():
        return None
    pid_text, _, started = path.read_text().strip().partition(" ")
    pid = int(pid_text or 0)
    if pid > 0 and started and _started_at(pid) == started:
        return pid
    return None


def start(layout: Layout, process: Process) -> int:
    """Start ``process`` unless it runs already; its pid."""
    pid = running_pid(layout, process.name)
    if pid is not None:
        return pid
    layout.logs.mkdir(parents=True, exist_ok=True)
    layout.run.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **process.env, "PYTHONUNBUFFERED": "1"}
    env.pop("PYTHONPATH", None)
    with (layout.logs / f"{process.name}.log").open("ab") as log:
        child = subprocess.Popen(
            process.argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env=env, cwd=layout.data, start_new_session=True,
        )
    _pid_file(layout, process.name).write_text(f"{child.pid} {_started_at(child.pid)}")
    return child.pid


def exited(layout: Layout, name: str) -> bool:
    """Whether ``name`` was started and is no longer alive."""
    return _pid_file(layout, name).exists() and running_pid(layout, name) is None


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_all(layout: Layout, *, grace: float = 15.0) -> list[str]:
    """SIGTERM every process of ours (its whole group), SIGKILL what is left after ``grace``."""
    groups: dict[str, int] = {}
    if layout.run.exists():
        for path in sorted(layout.run.glob("*.pid")):
            pid = running_pid(layout, path.stem)
            if pid is not None:
                groups[path.stem] = pid
                os.killpg(pid, signal.SIGTERM)
            path.unlink()
    deadline = time.monotonic() + grace
    while any(_group_alive(pgid) for pgid in groups.values()) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pgid in groups.values():
        if _group_alive(pgid):
            os.killpg(pgid, signal.SIGKILL)
    return sorted(groups)


def rss_mib(layout: Layout) -> tuple[int, float]:
    """How many processes of ours run (children included), and their resident memory in MiB."""
    sessions = {pid for path in layout.run.glob("*.pid") if (pid := running_pid(layout, path.stem))}
    count, pages = 0, 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        fields = _stat(int(stat.parent.name))
        # fields[3] is the session id; fields[21] the resident set in pages.
        if len(fields) > 21 and fields[0] != "Z" and int(fields[3]) in sessions:
            count += 1
            pages += int(fields[21])
    return count, pages * os.sysconf("SC_PAGE_SIZE") / 2**20
