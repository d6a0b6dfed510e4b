"""The bodies of runs that did not end on their own, and of signals too big to send (pure).

A run killed at its time limit, one whose runner stopped before it ended,
and one that could not start all report a non-zero ``deploy_status_code``
and say why at the end of ``deploy_stderr``, so the deployment fails with a
reason a person can read.
"""

from __future__ import annotations

from typing import Any

import orjson

# As timeout(1) and the shells: killed at its limit, could not be executed.
TIMED_OUT_STATUS = 124
NOT_STARTED_STATUS = 126
INTERRUPTED_STATUS = 1
CUT_MARK = "[...]\n"


def _said(stderr: str, reason: str) -> str:
    separator = "" if not stderr or stderr.endswith("\n") else "\n"
    return f"{stderr}{separator}ember agent: {reason}\n"


def timed_out(result: dict[str, Any], limit_seconds: float) -> dict[str, Any]:
    stderr = str(result.get("deploy_stderr") or "")
    return {**result, "deploy_status_code": TIMED_OUT_STATUS,
            "deploy_stderr": _said(stderr, f"the run was killed after {limit_seconds:g} s, its time limit")}


def interrupted(stdout: str, stderr: str) -> dict[str, Any]:
    return {"deploy_stdout": stdout, "deploy_status_code": INTERRUPTED_STATUS,
            "deploy_stderr": _said(stderr, "the run was interrupted (its runner stopped before it ended);"
                                           " it is not run again")}


def not_started(stderr: str, reason: str) -> dict[str, Any]:
    return {"deploy_stdout": "", "deploy_status_code": NOT_STARTED_STATUS,
            "deploy_stderr": _said(stderr, reason)}


def fitted(result: dict[str, Any], limit: int) -> dict[str, Any]:
    """``result`` whose JSON is at most ``limit`` bytes: stdout and stderr lose their beginnings.

    What a program prints last says most about how it ended, so the ends are
    kept; each of the two gives up a share of the excess in proportion to its
    length. Outputs are never cut: a body too big without any stdout or stderr
    left is sent as it is, and the API refuses it.
    """
    names = [name for name in ("deploy_stdout", "deploy_stderr") if isinstance(result.get(name), str)]
    tails = {name: str(result[name]) for name in names}
    while True:
        body = {**result, **{name: tail if tail == result[name] else CUT_MARK + tail
                             for name, tail in tails.items()}}
        excess = len(orjson.dumps(body)) - limit
        # Shares by size in JSON (an escaped character takes several bytes); a round may leave a
        # little excess (a cut multi-byte character counts one), the next takes it.
        total = sum(len(orjson.dumps(tail)) for tail in tails.values() if tail)
        if excess <= 0 or total == 0:
            return body
        tails = {name: tail[-(-excess * len(tail) // total) + 1:] if tail else tail
                 for name, tail in tails.items()}
