"""Real PostgreSQL and NATS servers from pip-installed wheels, for `ember dev` and the tests.

Blocking on purpose (plain ``subprocess``); async callers use ``asyncio.to_thread``.
"""

from libs.embedded.nats import EmbeddedNats, start_cluster, stop_all
from libs.embedded.postgres import EmbeddedPostgres
from libs.embedded.process import EmbeddedServerError

__all__ = ["EmbeddedNats", "EmbeddedPostgres", "EmbeddedServerError", "start_cluster", "stop_all"]
