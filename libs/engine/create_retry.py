"""Heat's ``action_retry_limit``: a create the cloud put in an error state is deleted and made again.

Ember goes further for updates: a resource its update left in an error state that a
delete and a create mend (a server gone ERROR while resized or rebuilt, ``Failed.remake``)
is deleted and made again the same way, with the update's properties, where Heat's
update fails.

Heat's ``Resource.create`` catches ``ResourceInError`` (a server that went ERROR, a
volume in ``error``): it records ``CREATE_FAILED``, deletes the resource
(``DELETE_IN_PROGRESS``, ``DELETE_COMPLETE``), waits ``2**n`` seconds and creates it
again, up to ``action_retry_limit`` times (2 by default); only then does the
resource fail. The worker's steps are short, so the state between them is kept in
the row's data under :data:`KEY`; :data:`RESTART` names the action whose ``start``
the next step runs (a delete, then the create again). Pure decisions; the worker
writes them (:mod:`services.worker.outcome`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final

from libs.engine.status import Action

KEY: Final = "ember_retry"
RESTART: Final = "ember_restart"
# The failures Heat retries a create after (its ResourceInError; a conflict is retried by
# the cloud edge's own backoff before it gets here).
RETRIED: Final = frozenset({"ResourceInError"})


@dataclasses.dataclass(frozen=True)
class Retry:
    """A create to be tried again: after the ``failed``-th failure, its delete starts.

    ``traversal``: the one whose create it is; a delete of another traversal (the stack's
    delete taking over) is a plain delete, never followed by a create.
    """

    failed: int
    traversal: str

    def record(self) -> dict[str, Any]:
        return {"failed": self.failed, "traversal": self.traversal}

    @property
    def delay(self) -> float:
        """Heat's ``retry_backoff_delay`` without its jitter: 2, 4, 8... seconds before the create."""
        return float(2 ** self.failed)


def retrying(data: Mapping[str, Any], traversal: str) -> Retry | None:
    """The retry ``traversal`` has under way on a row, if any."""
    kept = data.get(KEY)
    if not isinstance(kept, Mapping) or kept.get("traversal") != traversal:
        return None
    return Retry(int(kept.get("failed", 0)), traversal)


def retried(action: str, error: str, remake: bool) -> bool:
    """Whether a failure of ``action`` is one a delete and a create again may mend."""
    return (action == Action.CREATE and error in RETRIED) or (action == Action.UPDATE and remake)


def after_failure(action: str, error: str, data: Mapping[str, Any], limit: int, traversal: str,
                  *, remake: bool = False) -> Retry | None:
    """Whether a failed step of ``action`` is tried again (None: the resource fails)."""
    if not retried(action, error, remake):
        return None
    before = retrying(data, traversal)
    failed = (before.failed if before is not None else 0) + 1
    return Retry(failed, traversal) if failed <= limit else None


def restarts(data: Mapping[str, Any], action: str) -> bool:
    """Whether the next step of ``action`` is its ``start`` (a retry's delete, or its create again)."""
    return data.get(RESTART) == action
