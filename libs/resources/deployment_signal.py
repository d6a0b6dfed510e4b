"""What a signal of a deployment resource does to its deployment (pure; Heat's signal_software_deployment).

An agent signals ``{deploy_stdout, deploy_stderr, deploy_status_code, <outputs>...}``. Only a
deployment IN_PROGRESS takes it: a status code other than 0 fails it ("Deployment exited with
non-zero status code: N"), so does any output the config declares with ``error_output`` that the
signal names, whatever its value; otherwise it is COMPLETE "Outputs received". The outputs it
keeps are those it had, the declared ones the signal names, and the three ``deploy_*`` values
(null when not sent). A body that is not a map counts as an empty one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Final

from libs.engine.status import Status

STATUS_CODE: Final = "deploy_status_code"
STANDARD: Final = ("deploy_stdout", "deploy_stderr", STATUS_CODE)


@dataclasses.dataclass(frozen=True)
class Signalled:
    """The deployment's new status, reason and outputs, and the reason of the resource's SIGNAL event."""

    status: Status
    status_reason: str
    output_values: dict[str, Any]
    event_reason: str


def signalled(deployment_id: str, status: str, output_values: Mapping[str, Any] | None,
              outputs: Sequence[Mapping[str, Any]], details: Any) -> Signalled | None:
    """The signal's effect on a deployment in ``status`` whose config declares ``outputs``;
    None when the deployment takes no signal now (it is not IN_PROGRESS)."""
    if status != Status.IN_PROGRESS:
        return None
    given = details if isinstance(details, Mapping) else {}
    values = dict(output_values or {})
    failures: dict[str, str] = {}
    code = given.get(STATUS_CODE)
    event = f"deployment {deployment_id} succeeded"
    if code and str(code) != "0":
        failures[STATUS_CODE] = f"Deployment exited with non-zero status code: {code}"
        event = f"deployment {deployment_id} failed ({code})"
    for output in outputs:
        name = output["name"]
        if name in given:
            values[name] = given[name]
            if output.get("error_output"):
                failures[name] = str(given[name])
                event = f"deployment {deployment_id} failed"
    values.update({name: given.get(name) for name in STANDARD})
    if failures:
        reason = ", ".join(f"{name} : {text}" for name, text in failures.items())
        return Signalled(Status.FAILED, reason, values, event)
    return Signalled(Status.COMPLETE, "Outputs received", values, event)


def event_reason(result: Signalled | None, details: Any) -> str:
    """The reason of the SIGNAL event: ``Signal: <what it did>``, or, for a signal that changed
    nothing, Heat's words for its details."""
    if result is not None:
        return f"Signal: {result.event_reason}"
    if not isinstance(details, Mapping):  # Heat's API keeps only a map of details
        return "No signal details provided"
    if all(k in details for k in ("previous", "current", "reason")):
        return (f"alarm state changed from {details['previous']} to {details['current']} "
                f"({details['reason']})")
    return "Unknown"
