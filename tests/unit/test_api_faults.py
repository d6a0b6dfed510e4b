"""The one table from a domain error to Heat's status and fault body (services/api/faults.py)."""

from __future__ import annotations

import orjson
import pytest

from libs import operations, stack_snapshots
from libs.db.stacks import StackRow
from libs.template import errors
from libs.template.errors import TemplateError
from services.api import faults, policy


def _busy_stack() -> StackRow:
    fields = dict.fromkeys(StackRow.__dataclass_fields__)
    fields.update(name="busy", action="UPDATE")
    return StackRow(**fields)  # type: ignore[arg-type]


CASES: list[tuple[TemplateError, int, str, str]] = [
    (errors.StackValidationFailed("bad", ("resources", "r")), 400, "StackValidationFailed",
     "resources.r: bad"),
    (errors.MalformedRequest(), 400, "HTTPBadRequest", errors.MALFORMED),
    (errors.InvalidBreakPointHook('Invalid hook type "x"'), 400, "InvalidBreakPointHook",
     'Invalid hook type "x"'),
    (errors.UnhandledPythonError("KeyError", "'k'"), 400, "KeyError", "'k'"),
    (errors.NotFound("Template with version x not found"), 404, "NotFound",
     "Template with version x not found"),
    (errors.EntityNotFound("Stack", "gone"), 404, "EntityNotFound", "The Stack (gone) could not be found."),
    (policy.Forbidden("stacks:global_index"), 403, "Forbidden",
     "You are not authorized to use stacks:global_index."),
    (operations.StackExists("talk"), 409, "StackExists", "The Stack (talk) already exists."),
    (stack_snapshots.ActionInProgress(_busy_stack()), 409, "ActionInProgress",
     "Stack busy already has an action (UPDATE) in progress."),
]


@pytest.mark.parametrize(("error", "status", "error_type", "message"), CASES,
                         ids=[type(c[0]).__name__ for c in CASES])
def test_each_domain_error_answers_with_heats_status_and_body(error: TemplateError, status: int,
                                                              error_type: str, message: str) -> None:
    assert faults.status_of(error) == status
    response = faults.answer(error)
    assert response.status == status
    assert response.body is not None
    body = orjson.loads(response.body)  # type: ignore[arg-type]
    assert body["code"] == status
    assert body["error"] == {"type": error_type, "message": message, "traceback": None}


def test_a_subclass_answers_as_its_base_does() -> None:
    class Gone(errors.EntityNotFound):
        pass

    assert faults.status_of(Gone("Stack", "x")) == 404


def test_domain_errors_carry_no_http_status() -> None:
    assert not any(hasattr(type(error), "http_status") for error, *_ in CASES)
