"""The edge that answers template validation's cloud lookups: the calls made in the project's cloud."""

from __future__ import annotations

from collections.abc import Sequence

from libs.cloud.caller import CloudCaller
from libs.cloud.calls import Answer, CloudError, ErrorKind
from libs.cloud.lookups import Lookup, calls_for
from libs.cloud.targets import NoCloudConfigured, target_for
from libs.config import CloudSettings


class CloudLookups:
    """``operations.CloudLookup``: a request's lookups, each call made once, in its project's cloud.

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
