# Heat and oslo.service are installed only in Heat's venv, and untyped there: they are Any to mypy.
# mypy: disable-error-code="import-not-found,import-untyped"
"""Run OpenStack Heat's engine and its v1 API in one process, as a reference for Ember.

With ``transport_url = fake://`` oslo.messaging delivers RPC only inside one interpreter, so the
engine service (with its convergence worker) and the API's WSGI app must share a process. This
launcher starts the engine in-process, builds the API from Heat's own paste pipeline (flavor
``noauth`` in heat.conf) and serves it with the standard library's threaded WSGI server.

Run it with the Heat venv's interpreter, after ``setup.sh``::

    $HEAT_REF_DIR/venv/bin/python launch.py [--debug] [--keystone]

``--keystone``: Keystone mode, with ``$HEAT_REF_DIR/keystone.conf`` (``scripts.heat_reference.keystone``
writes it for the one-machine OpenStack) read after heat.conf: tokens are checked, the cloud's
services are reached. Without it, noauth as before.

Environment: HEAT_REF_DIR (/work/heat: heat.conf, heat.conf.d/, the pid file), HEAT_REF_HOST
(127.0.0.1), HEAT_REF_PORT (8005), HEAT_REF_KEEP_SLEEP=1 to keep Heat's 1 s pause per leaf.
SIGTERM or SIGINT stops it: the HTTP server first, then the engine (at most 15 s).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from socketserver import ThreadingMixIn
from types import FrameType
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

STOP_GRACE_SECONDS = 15.0


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    """One thread per request: a slow engine call must not block ``GET /`` or a poll."""

    daemon_threads = True
    allow_reuse_address = True


class _QuietHandler(WSGIRequestHandler):
    """Access log on stderr in one short line, without reverse DNS."""

    def address_string(self) -> str:
        return str(self.client_address[0])


class _TimeWithoutPacing:
    """Stands in for the ``time`` module inside ``heat.engine.stack`` only.

    ``Stack.converge_stack`` calls ``time.sleep(1)`` after casting each leaf's check_resource, to
    spread leaves over several engines. With one engine that only adds one second per independent
    leaf, so the pause becomes a bare yield. Everything else is the real ``time`` module.
    """

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    @staticmethod
    def sleep(seconds: float) -> None:
        time.sleep(0)


def _heat_dir() -> Path:
    return Path(os.environ.get("HEAT_REF_DIR", "/work/heat"))


def _configure(heat_dir: Path, argv: list[str], keystone: bool = False) -> Any:
    """Parse heat.conf (keystone.conf with ``keystone``, then heat.conf.d/) into oslo.config's CONF."""
    from heat.common import config  # noqa: F401  (registers Heat's options before parsing)
    from oslo_config import cfg
    from oslo_log import log as logging

    conf_file = heat_dir / "heat.conf"
    if not conf_file.is_file():
        sys.exit(f"heat_reference: {conf_file} is missing; run scripts/heat_reference/setup.sh first")
    files = [str(conf_file)]
    if keystone:
        keystone_file = heat_dir / "keystone.conf"
        if not keystone_file.is_file():
            sys.exit(f"heat_reference: {keystone_file} is missing; run scripts.heat_reference.keystone first")
        files.append(str(keystone_file))
    conf_dir = heat_dir / "heat.conf.d"
    conf = cfg.CONF
    logging.register_options(conf)
    conf(
        argv,
        project="heat",
        prog="heat-reference",
        default_config_files=files,
        default_config_dirs=[str(conf_dir)] if conf_dir.is_dir() else [],
    )
    logging.setup(conf, "heat")
    if not conf.convergence_engine:
        sys.exit("heat_reference: heat.conf must set convergence_engine = true")
    return conf


def _prepare_engine(conf: Any) -> None:
    """Load the engine's modules (registering their options), the fake transport, Heat's checks."""
    from heat.common import config, messaging
    from heat.engine import service as engine_service  # noqa: F401  (registers e.g. auth_encryption_key)
    from heat.engine import template

    messaging.setup()
    if conf.transport_url != "fake://":
        sys.exit("heat_reference: heat.conf must set transport_url = fake:// (API and engine share it)")
    config.startup_sanity_check()
    if not template._get_template_extension_manager().names():
        sys.exit("heat_reference: no template format plugins are registered (broken install?)")


def _start_engine(conf: Any) -> Any:
    """Start Heat's EngineService (RPC server, listener and convergence worker) in this process."""
    from heat.engine import service as engine_service
    from heat.rpc import api as rpc_api

    engine = engine_service.EngineService(conf.host, rpc_api.ENGINE_TOPIC)
    engine.start()
    return engine


def _build_api() -> Any:
    """The v1 API as heat-api's WSGI entry point would build it, minus re-parsing the config."""
    from heat.common import config

    config.set_config_defaults()
    return config.load_paste_app("heat-api")


def _remove_leaf_pacing() -> None:
    from heat.engine import stack as heat_stack

    heat_stack.time = _TimeWithoutPacing()


def _grant_implied_roles() -> None:
    """Give noauth's user the roles a Keystone token of an admin carries.

    Heat's noauth filter sends the single role ``admin``, but since Wallaby the default policies
    ask for ``member`` (or ``reader``) in the project, so every call would be 403. Keystone's
    default role hierarchy makes admin imply member and reader and lists all three in the token;
    this does the same. A request's own ``X-Roles`` header (comma list) wins, to try other users.
    """
    from heat.common import noauth

    original = noauth.NoAuthProtocol._build_user_headers

    def build_user_headers(self: Any, env: dict[str, Any]) -> dict[str, Any]:
        headers: dict[str, Any] = original(self, env)
        headers["HTTP_X_ROLES"] = env.get("HTTP_X_ROLES") or "admin,member,reader"
        return headers

    noauth.NoAuthProtocol._build_user_headers = build_user_headers


def _stop_engine(engine: Any) -> None:
    stopper = threading.Thread(target=engine.stop, name="engine-stop", daemon=True)
    stopper.start()
    stopper.join(STOP_GRACE_SECONDS)


def main() -> None:
    # Heat's engine uses oslo.service's threading backend since 25.0.0; pick it before any
    # module of Heat imports oslo_service.service or threadgroup.
    from oslo_service import backend

    backend.init_backend(backend.BackendType.THREADING)

    heat_dir = _heat_dir()
    host = os.environ.get("HEAT_REF_HOST", "127.0.0.1")
    port = int(os.environ.get("HEAT_REF_PORT", "8005"))
    argv = sys.argv[1:]
    keystone = "--keystone" in argv
    conf = _configure(heat_dir, [a for a in argv if a != "--keystone"], keystone)
    if os.environ.get("HEAT_REF_KEEP_SLEEP") != "1":
        _remove_leaf_pacing()
    if not keystone:
        _grant_implied_roles()
    _prepare_engine(conf)

    try:
        httpd = make_server(host, port, _build_api(), server_class=_ThreadingWSGIServer,
                            handler_class=_QuietHandler)
    except OSError as exc:
        sys.exit(f"heat_reference: cannot listen on {host}:{port}: {exc}")
    engine = _start_engine(conf)

    def request_stop(signum: int, frame: FrameType | None) -> None:
        # serve_forever runs in this (main) thread, so shutdown() must come from another one.
        threading.Thread(target=httpd.shutdown, name="http-stop", daemon=True).start()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)

    pidfile = heat_dir / "heat-ref.pid"
    pidfile.write_text(f"{os.getpid()}\n")
    banner = f"heat_reference: Heat API on http://{host}:{port}/ (pid {os.getpid()})"
    print(banner, file=sys.stderr, flush=True)
    try:
        httpd.serve_forever()
    finally:
        httpd.server_close()
        _stop_engine(engine)
        pidfile.unlink(missing_ok=True)
        print("heat_reference: stopped", file=sys.stderr, flush=True)
    # Threads of the engine that outlived the grace period must not keep the process alive.
    os._exit(0)


if __name__ == "__main__":
    main()
