"""``ember api``: the process entry point."""

from __future__ import annotations

from aiohttp import web

from libs import lifecycle
from libs.telemetry import logs
from services.api.app import make_app


def main() -> None:
    settings = lifecycle.load_settings_or_exit(need_urls=True)
    logs.configure("api", settings.hostname, settings.log_level, settings.log_format)
    log = logs.logger("api")
    log.info("api listening on %s", settings.api_url)
    # run_app turns SIGTERM/SIGINT into a graceful stop: the listener closes,
    # requests in hand get shutdown_grace seconds, then cleanup_ctx unwinds.
    web.run_app(make_app(settings), host=settings.api_host, port=settings.api_port,
                shutdown_timeout=settings.shutdown_grace, print=None, access_log=None,
                handle_signals=True)
