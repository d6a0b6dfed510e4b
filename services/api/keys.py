"""Typed application state of the api service."""

from __future__ import annotations

from aiohttp import web

from libs.cloud.validation import CloudLookups
from libs.config import Settings
from libs.evaluation_pool import EvaluationPool
from libs.resources.registry import Registry
from libs.runtime import Runtime
from services.api.context import Authenticator
from services.api.event_feed import EventFeed

SETTINGS = web.AppKey("settings", Settings)
RUNTIME = web.AppKey("runtime", Runtime)
REGISTRY = web.AppKey("registry", Registry)
AUTHENTICATOR = web.AppKey("authenticator", Authenticator)
EVENT_FEED = web.AppKey("event_feed", EventFeed)
# Where requests' templates are parsed and evaluated, under a deadline (libs/evaluation_pool.py).
EVALUATION = web.AppKey("evaluation", EvaluationPool)
# Answers for template validation's cloud-checked custom constraints (nova.flavor...).
CLOUD_LOOKUPS = web.AppKey("cloud_lookups", CloudLookups)
