"""Typed application state of the api service."""

from __future__ import annotations

from aiohttp import web

from libs.config import Settings
from libs.runtime import Runtime

SETTINGS = web.AppKey("settings", Settings)
RUNTIME = web.AppKey("runtime", Runtime)
