"""The edge that makes cloud calls: what the worker, the api's validation and the observer hold."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Protocol

from libs.cloud.calls import Answer, CloudCall


@dataclasses.dataclass(frozen=True)
class CloudTarget:
    """Which cloud (a ``clouds.yaml`` entry) and which of its projects a call is made in."""

    cloud: str
    project: str | None = None


class CloudCaller(Protocol):
    """Makes calls on a cloud: one reused connection per target, openstacksdk off the event loop."""

    async def call(self, target: CloudTarget, calls: Sequence[CloudCall]) -> dict[str, Answer]:
        """Every call's answer by its key; never raises for what the cloud answered."""
        ...
