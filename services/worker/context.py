"""What a worker's step code needs from its process: pool, bus, plugins, parsed templates."""

from __future__ import annotations

import dataclasses
import random

import asyncpg

from libs.evaluation_pool import INLINE, EvaluationPool
from libs.messaging.bus import Bus
from libs.resources.registry import Registry
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

    @property
    def outputs(self) -> routing.OutputsOf:
        return routing.outputs_resolver(self.evaluation, self.cache)
