"""The edge that answers template validation's cloud lookups: the calls made in the project's cloud."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TypeVar

from libs.cloud.caller import CloudCaller
from libs.cloud.calls import Answer, CloudError, ErrorKind
from libs.cloud.lookups import CloudAnswers, CloudLookupsNeeded, Lookup, calls_for
from libs.cloud.targets import NoCloudConfigured, target_for
from libs.config import CloudSettings

# Answers for a project's lookups (CloudLookups below).
CloudLookup = Callable[[str, Sequence[Lookup]], Awaitable[Mapping[str, Answer]]]
T = TypeVar("T")
# Rounds of lookups one check may ask for (each round's answers are kept for the next).
ROUNDS = 3


async def with_lookups(cloud: CloudLookup | None, project: str,
                       check: Callable[[CloudAnswers], Awaitable[T]]) -> T:
    """``check`` (a pure validation, run in the pool), its cloud lookups made here and it run again."""
    answers: dict[str, Answer] = {}
    for _ in range(ROUNDS):
        try:
            return await check(CloudAnswers(ask=cloud is not None, answers=dict(answers)))
        except CloudLookupsNeeded as needed:
            assert cloud is not None
            answers.update(await cloud(project, needed.lookups))
    return await check(CloudAnswers(ask=False, answers=answers))


async def with_lookups_told(cloud: CloudLookup | None, project: str,
                            check: Callable[[CloudAnswers], Awaitable[T]]) -> tuple[T, bool]:
    """:func:`with_lookups`, and whether the check asked the cloud nothing (so it answers the same
    whenever its input is the same, whatever the cloud holds by then)."""
    rounds = 0

    def counted(answers: CloudAnswers) -> Awaitable[T]:
        nonlocal rounds
        rounds += 1
        return check(answers)

    return await with_lookups(cloud, project, counted), rounds == 1


class CloudLookups:
    """A :data:`CloudLookup`: a request's lookups, each call made once, in its project's cloud.

    Without a caller or a cloud for the project, every lookup fails with that reason.
    """

    def __init__(self, caller: CloudCaller | None, settings: CloudSettings) -> None:
        self._caller = caller
        self._settings = settings

    async def __call__(self, project: str, lookups: Sequence[Lookup]) -> dict[str, Answer]:
        calls = calls_for(lookups)
        try:
            target = target_for(self._settings, project)
        except NoCloudConfigured as exc:
            missing = Answer(error=CloudError(ErrorKind.UNREACHABLE, str(exc), None, "NoCloudConfigured"))
            return {call.key: missing for call in calls}
        if self._caller is None:
            missing = Answer(error=CloudError(ErrorKind.UNREACHABLE, "This service makes no cloud calls",
                                              None, "NoCloudConfigured"))
            return {call.key: missing for call in calls}
        return await self._caller.call(target, calls)
