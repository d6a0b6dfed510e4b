"""What a worker's step code needs from its process: pool, bus, plugins, parsed templates."""

from __future__ import annotations

import dataclasses
import random

import asyncpg

from libs.cloud.caller import CloudCaller
from libs.config import CloudSettings
from libs.evaluation_pool import INLINE, EvaluationPool
from libs.messaging.bus import Bus
from libs.resources.registry import Registry
from libs.template.limits import Limits
from libs.template.request import DEFAULT_LIMITS
from services.worker import evaluation as routing
from services.worker.desired_cache import DesiredCache


@dataclasses.dataclass(frozen=True)
class WorkerContext:
    pool: asyncpg.Pool
    bus: Bus
    registry: Registry
    cache: DesiredCache
    rng: random.Random
    # Where heavy evaluations run, under a deadline (services/worker/evaluation.py).
    evaluation: EvaluationPool = INLINE
    # Where signals reach this installation's api (a wait condition handle's endpoint).
    api_url: str | None = None
    # What a nested stack may bring to its tree, checked as the worker makes it (as Heat's engine).
    limits: Limits = DEFAULT_LIMITS
    # Makes plugins' cloud calls; None: no cloud, and a step that asks for calls fails its resource.
    caller: CloudCaller | None = None
    # Which clouds.yaml entry each project's calls go to.
    cloud: CloudSettings = dataclasses.field(default_factory=CloudSettings)
    # Heat's action_retry_limit (libs/engine/create_retry.py).
    retry_limit: int = 2
    # Seconds a made thing may take to become ready (StepContext.ready_timeout; None: no limit).
    ready_timeout: float | None = None

    @property
    def outputs(self) -> routing.OutputsOf:
        return routing.outputs_resolver(self.evaluation, self.cache)
