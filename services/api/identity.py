"""Placeholder while being written."""

from __future__ import annotations

from aiohttp import web


def setup(app: web.Application) -> None:
    return None
