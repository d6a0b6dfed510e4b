"""What a plugin step's answer writes (services.worker.outcome, pending): tables, no database."""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from typing import Any

import pytest

from libs.cloud.calls import Answer, CloudCall, CloudError, ErrorKind, Service
from libs.db.resources import ResourceRow
from libs.engine import create_retry
from libs.engine.status import Status
from libs.resources.base import ResourceType
from libs.resources.steps import KEEP, Call, Done, Failed, StepContext, StepResult, Wait
from services.worker import outcome, pending
from services.worker.outcome import Outcome

TRAV = uuid.UUID(int=1)
TEMPLATE = uuid.UUID(int=2)
MADE = CloudCall("made", Service.COMPUTE, "create_server", (), {"name": "ember-x-1"})
KEPT = pending.recorded({}, [MADE], attempted=True)[pending.KEY]


class Thing(ResourceType):
    type_name = "Test::Thing"

    def start_create(self, ctx: StepContext) -> StepResult:
        return Done()


def _row(**changes: Any) -> ResourceRow:
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    base: dict[str, Any] = dict(
        id=7, stack_id=uuid.UUID(int=3), name="r", type="Test::Thing", is_current=True, physical_id="p1",
        action="CREATE", status="IN_PROGRESS", status_reason="", template_id=None, traversal_id=TRAV,
        action_started=now, properties=None, reference=None, attributes={}, data={"a": "1"}, requires=[],
        replaces=None, deletion_policy="Delete", version=3, created_at=now, updated_at=None)
    return ResourceRow(**{**base, **changes})


def _of(result: Done | Wait | Failed | Call, action: str = "CREATE", *, kept: bool = False,
        can_call: bool = True, retry_limit: int = 0, **row: Any) -> Outcome:
    return outcome.of_step(_row(**row), action, result, Thing(), props={"v": 1}, traversal_id=TRAV,
                           template_id=TEMPLATE, deletion_policy="Delete", kept=kept, can_call=can_call,
                           retry_limit=retry_limit)


IN_ERROR = Failed('Went to status ERROR due to "Message: boom, Code: 500"', "ResourceInError")
RETRIED_TWICE = {"failed": 2, "traversal": str(TRAV)}
RESIZED_TO_ERROR = Failed("Resizing to 'm1.small' failed, status 'ERROR'", "Error", remake=True)
ERROR_REASON = 'ResourceInError: resources.r: Went to status ERROR due to "Message: boom, Code: 500"'
GIVEN_UP = f"{ERROR_REASON} (made 3 times: EMBER_ACTION_RETRY_LIMIT is 2)"


CASES: list[tuple[str, Outcome, Outcome]] = [
    ("a wait records nothing new", _of(Wait(2.0)),
     Outcome(retry=2.0, about="CREATE of r in progress")),
    ("a wait records its data and physical id", _of(Wait(1.0, data={"b": "2", "a": None}, physical_id="p2")),
     Outcome({"data": {"b": "2"}, "physical_id": "p2"}, retry=1.0, about="CREATE of r in progress")),
    ("a call now is marked attempted before it is made", _of(Call((MADE,), data={"b": "2"})),
     Outcome({"data": {"a": "1", "b": "2", pending.KEY: KEPT}}, calls=(MADE,),
             about="CREATE of r waits on the cloud")),
    ("a delayed call is kept, unattempted, for the redelivery", _of(Call((MADE,), delay=5.0)),
     Outcome({"data": {"a": "1", pending.KEY: {**KEPT, "attempted": False}}}, retry=5.0,
             about="CREATE of r waits on the cloud")),
    ("a call with no cloud fails the resource", _of(Call((MADE,)), can_call=False),
     outcome.failed("CREATE", "ResourceFailure: resources.r: no cloud is configured for this worker to call"
                              " (compute.create_server)", TRAV)),
    ("the step after a call drops the kept calls", _of(Wait(0.5), data={"a": "1", pending.KEY: KEPT}),
     Outcome({"data": {"a": "1"}}, retry=0.5, about="CREATE of r in progress")),
    ("a failure", _of(Failed("boom", "ValueError")),
     Outcome({"action": "CREATE", "status": "FAILED", "traversal_id": TRAV,
              "status_reason": "ValueError: resources.r: boom"},
             event=(Status.FAILED, "ValueError: resources.r: boom"),
             failure="Resource CREATE failed: ValueError: resources.r: boom")),
    # Heat's action_retry_limit: a create the cloud put in error is deleted and made again.
    ("a create in error, retries left: its delete starts", _of(IN_ERROR, retry_limit=2),
     Outcome({"action": "DELETE", "status": "IN_PROGRESS", "status_reason": "state changed",
              "data": {"a": "1", create_retry.KEY: {"failed": 1, "traversal": str(TRAV)},
                       create_retry.RESTART: "DELETE"}},
             preceding=(("CREATE", Status.FAILED, ERROR_REASON),
                        ("DELETE", Status.IN_PROGRESS, "state changed")),
             retry=0.0, about="r is deleted to be made again (1 failed)")),
    ("the retry's delete done: made again after 2**n s, afresh", _of(
        Done(), "DELETE", data={"a": "1", create_retry.KEY: RETRIED_TWICE}),
     Outcome({"action": "CREATE", "status": "IN_PROGRESS", "status_reason": "state changed",
              "physical_id": None, "data": {create_retry.KEY: RETRIED_TWICE, create_retry.RESTART: "CREATE"}},
             preceding=(("DELETE", Status.COMPLETE, "state changed"),
                        ("CREATE", Status.IN_PROGRESS, "state changed")),
             retry=4.0, about="r is made again in 4s")),
    ("the limit reached: the resource fails, its reason saying what was tried",
     _of(IN_ERROR, retry_limit=2, data={"a": "1", create_retry.KEY: RETRIED_TWICE}),
     dataclasses.replace(outcome.failed("CREATE", GIVEN_UP, TRAV), changes={
         **outcome.failed("CREATE", GIVEN_UP, TRAV).changes, "data": {"a": "1"}})),
    ("an update that left the thing in error a remake mends: deleted to be made again",
     _of(RESIZED_TO_ERROR, "UPDATE", retry_limit=1),
     Outcome({"action": "DELETE", "status": "IN_PROGRESS", "status_reason": "state changed",
              "data": {"a": "1", create_retry.KEY: {"failed": 1, "traversal": str(TRAV)},
                       create_retry.RESTART: "DELETE"}},
             preceding=(("UPDATE", Status.FAILED, "Error: resources.r: " + RESIZED_TO_ERROR.message),
                        ("DELETE", Status.IN_PROGRESS, "state changed")),
             retry=0.0, about="r is deleted to be made again (1 failed)")),
    ("an update's other failures fail it, as Heat's",
     _of(dataclasses.replace(RESIZED_TO_ERROR, remake=False), "UPDATE", retry_limit=1),
     outcome.failed("UPDATE", "Error: resources.r: " + RESIZED_TO_ERROR.message, TRAV)),
    ("a create's failure is retried by its kind alone, as Heat's", _of(RESIZED_TO_ERROR, retry_limit=1),
     outcome.failed("CREATE", "Error: resources.r: " + RESIZED_TO_ERROR.message, TRAV)),
    ("another traversal's delete (the stack's) is a plain delete",
     _of(Done(), "DELETE", data={create_retry.KEY: {"failed": 1, "traversal": "another"}}),
     Outcome(event=(Status.COMPLETE, "state changed"), removed=True, finished=True)),
    ("no retry of other failures", _of(Failed("boom", "ValueError"), retry_limit=2),
     outcome.failed("CREATE", "ValueError: resources.r: boom", TRAV)),
    ("no retry of an update", _of(IN_ERROR, "UPDATE", retry_limit=2),
     outcome.failed("UPDATE", ERROR_REASON, TRAV)),
    ("made at last: the retry's record goes", _of(
        Done(physical_id="p9"), data={create_retry.KEY: RETRIED_TWICE, create_retry.RESTART: "CREATE"}),
     Outcome({"action": "CREATE", "status": "COMPLETE", "status_reason": "state changed", "physical_id": "p9",
              "data": {}, "properties": {"v": 1}, "reference": "p9", "attributes": {},
              "template_id": TEMPLATE, "deletion_policy": "Delete"},
             event=(Status.COMPLETE, "state changed"), finished=True)),
    ("a delete done removes the row", _of(Done(), "DELETE"),
     Outcome(event=(Status.COMPLETE, "state changed"), removed=True, finished=True)),
    ("a delete done at a post-hook keeps it", _of(Done(), "DELETE", kept=True),
     Outcome({"action": "DELETE", "status": "COMPLETE", "status_reason": "state changed"},
             event=(Status.COMPLETE, "state changed"), finished=True)),
    ("a create done", _of(Done(physical_id="p9", data={"c": "3"}, reason=""),
                          data={"a": "1", pending.KEY: KEPT}),
     Outcome({"action": "CREATE", "status": "COMPLETE", "status_reason": "state changed", "physical_id": "p9",
              "data": {"a": "1", "c": "3"}, "properties": {"v": 1}, "reference": "p9", "attributes": {},
              "template_id": TEMPLATE, "deletion_policy": "Delete"},
             event=(Status.COMPLETE, "state changed"), finished=True)),
    ("a check keeps the applied properties", _of(Done(physical_id=KEEP), "CHECK", properties={"v": 0}),
     Outcome({"action": "CHECK", "status": "COMPLETE", "status_reason": "state changed", "physical_id": "p1",
              "data": {"a": "1"}, "properties": {"v": 0}, "reference": "p1", "attributes": {},
              "template_id": TEMPLATE, "deletion_policy": "Delete"},
             event=(Status.COMPLETE, "state changed"), finished=True)),
]


@pytest.mark.parametrize(("case", "got", "expected"), CASES, ids=[c[0] for c in CASES])
def test_what_a_step_writes(case: str, got: Outcome, expected: Outcome) -> None:
    assert got == expected, case


def test_kept_calls_read_back_and_are_hidden_from_plugins() -> None:
    data = pending.recorded({"a": "1"}, [MADE], attempted=False)
    kept = pending.of(data)
    assert kept == pending.Pending((MADE,), attempted=False)
    assert pending.of(pending.attempting(data)) == pending.Pending((MADE,), attempted=True)
    assert pending.without(data) == {"a": "1"}
    assert pending.of({"a": "1"}) is None


PORT = CloudCall("port", Service.NETWORK, "create_port", (), {})
OK = Answer({"id": "s1"})
# A 503: the cloud surely made nothing, so even a create is made again.
DOWN = Answer(error=CloudError(ErrorKind.SERVER, "Service Unavailable", 503))
# A 500 on a create may have made the server: the plugin sees it at once and adopts by tag.
BROKEN = Answer(error=CloudError(ErrorKind.SERVER, "Internal Server Error", 500))
GONE = Answer(error=CloudError(ErrorKind.NOT_FOUND, "No Server found", 404))
TRIED = pending.attempting(pending.recorded({}, [MADE, PORT], attempted=False))


@pytest.mark.parametrize(("case", "data", "answers", "answered", "expected"), [
    ("the answers of this very try", TRIED, {"made": OK, "port": OK}, 3, {"made": OK, "port": OK}),
    ("a crash lost them", TRIED, None, None, {}),
    ("answers for another version of the row", TRIED, {"made": OK}, 2, {}),
    ("an error the plugin handles", TRIED, {"made": GONE, "port": OK}, 3, {"made": GONE, "port": OK}),
    ("no calls kept", {}, {"made": OK}, 3, {}),
])
def test_what_the_step_after_a_call_sees(case: str, data: dict[str, Any], answers: dict[str, Answer] | None,
                                          answered: int | None, expected: dict[str, Answer]) -> None:
    assert pending.next_step(data, 3, answers, answered) == expected, case


def test_a_500_on_a_create_goes_to_the_plugin_at_once() -> None:
    assert pending.next_step(TRIED, 3, {"made": BROKEN, "port": OK}, 3) == {"made": BROKEN, "port": OK}


def test_a_server_error_is_tried_again_with_the_other_answers_kept() -> None:
    got = pending.next_step(TRIED, 3, {"made": DOWN, "port": OK}, 3)
    assert isinstance(got, tuple)
    data, delay = got
    kept = pending.of(data)
    assert kept == pending.Pending((MADE, PORT), attempted=False, answered={"port": OK}, tries=2)
    assert (kept.to_make, delay) == ((MADE,), 2.0)
    # The next try's answer joins the one kept.
    assert pending.next_step(pending.attempting(data), 4, {"made": OK}, 4) == {"made": OK, "port": OK}
    # Past the last try the plugin sees the error.
    last = {**data, pending.KEY: {**data[pending.KEY], "tries": pending.TRIES, "attempted": True}}
    assert pending.next_step(last, 4, {"made": DOWN}, 4) == {"port": OK, "made": DOWN}


AT = datetime.datetime(2026, 11, 28, 12, 0, tzinfo=datetime.UTC)
TIMEOUT = 60.0
LIMIT = datetime.timedelta(seconds=2 * TIMEOUT + 10)


@pytest.mark.parametrize(("case", "data", "marked_at", "now", "expected"), [
    ("marked attempted a moment ago: maybe being made", TRIED, AT, AT + datetime.timedelta(seconds=1), True),
    ("marked attempted longer ago than a call takes: a dead step's", TRIED, AT, AT + LIMIT, False),
    ("kept, waiting for their backoff: not being made",
     pending.recorded({}, [MADE], attempted=False), AT, AT, False),
    ("no calls kept", {"a": "1"}, AT, AT, False),
    ("never written", TRIED, None, AT, False),
])
def test_calls_in_flight(case: str, data: dict[str, Any], marked_at: datetime.datetime | None,
                         now: datetime.datetime, expected: bool) -> None:
    assert pending.in_flight(data, marked_at, now, request_timeout=TIMEOUT) is expected, case
