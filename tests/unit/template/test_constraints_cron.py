"""The cron_expression constraint: croniter's accept/reject decisions and messages."""

from __future__ import annotations

from typing import Any

import pytest

from libs.template.cron import cron_expression


@pytest.mark.parametrize(
    "value",
    [
        "0 23 * * *", "* * * * *", "*/5 * * * *", "0 0 1 jan mon", "0 0 1-15/2 * mon-fri",
        "0 0 * * 7", "0 0 L * *", "0 0 ? * 1", "0 0 * * 1#2", "0 0 * * l5", "0 0 1 1 * 30",
        "0 0 1 1 * 0 2050", "@hourly", "@Daily", "0 0 * * fri-mon", "0 0 * * 5/2", "0,30 * * * *",
        "59/15 * * * *", "", None,
    ],
)
def test_accepts(value: Any) -> None:
    assert cron_expression(value) is None


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("* * * * * 100",
         "Invalid CRON expression: [* * * * * 100] is not acceptable, out of range"),
        ("* *",
         "Invalid CRON expression: Exactly 5, 6 or 7 columns has to be specified for iterator expression."),
        ("60 * * * *",
         "Invalid CRON expression: [60 * * * *] is not acceptable, out of range"),
        ("0 0 0 * *",
         "Invalid CRON expression: [0 0 0 * *] is not acceptable, out of range"),
        ("0 0 * 13 *",
         "Invalid CRON expression: [0 0 * 13 *] is not acceptable, out of range"),
        ("0 0 * * 1 0 7",
         "Invalid CRON expression: [0 0 * * 1 0 7] is not acceptable, out of range"),
        ("0 0 * * 1-8", "Invalid CRON expression: 0 0 * * 1-8 is out of bands"),
        ("0 0 * * foo", "Invalid CRON expression: [0 0 * * foo] is not acceptable"),
        ("0 0 * FOO *", "Invalid CRON expression: [0 0 * foo *] is not acceptable"),
        ("*/0 * * * *",
         "Invalid CRON expression: [*/0 * * * *] step '0' in field 0 is not acceptable"),
        ("-1 * * * *",
         "Invalid CRON expression: [-1 * * * *] is not acceptable, negative numbers not allowed"),
        ("? * * * *",
         "Invalid CRON expression: [? * * * *] is not acceptable. Question mark can only used in "
         "day_of_month or day_of_week"),
        ("* * 1? * *",
         "Invalid CRON expression: [* * 1? * *] is not acceptable. Question mark can not used with "
         "other characters"),
        ("0 0 * * 1#6",
         "Invalid CRON expression: [0 0 * * 1#6] is not acceptable. Invalid day_of_week value: '6'"),
        ("0 0 l-5 * *",
         "Invalid CRON expression: [0 0 l-5 * *] bands 'l-5' in field 2 are not acceptable"),
        (5, "Invalid CRON expression: 'int' object has no attribute 'lower'"),
    ],
)
def test_rejects_with_heats_reason(value: Any, reason: str) -> None:
    assert cron_expression(value) == reason
