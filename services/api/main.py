"""``ember api``: the process entry point."""

from __future__ import annotations

import sys

from aiohttp import web

from libs import lifecycle
from libs.telemetry import logs
from services.api.app import make_app
from services.api.identity_config import AuthConfigError


def main() -> None:
    settings = lifecycle.load_settings_or_exit(need_urls=True)
    logs.configure("api", settings.hostname, settings.log_level, settings.log_format)
    try:
        app = make_app(settings)
    except AuthConfigError as exc:
        print(f"ember: bad configuration: EMBER_AUTH_CONFIG: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    log = logs.logger("api")
    log.info("api listening on %s", settings.api_url)

    async def leave_by_deadline(_app: web.Application) -> None:
        # The rule of every service: a close waiting on a server already gone (``ember dev``
        # killed takes PostgreSQL and NATS with it) does not keep the process; an api whose
        # cleanup hung outlived its dev by hours.
        lifecycle.leave_by_deadline(settings, "api")

    # on_shutdown runs first when run_app's graceful stop begins.
    app.on_shutdown.append(leave_by_deadline)
    # run_app turns SIGTERM/SIGINT into a graceful stop: the listener closes,
    # requests in hand get shutdown_grace seconds, then cleanup_ctx unwinds; past that and
    # lifecycle.TEARDOWN_MARGIN, the process leaves.
    web.run_app(app, host=settings.api_host, port=settings.api_port,
                shutdown_timeout=settings.shutdown_grace, print=None, access_log=None,
                handle_signals=True)
