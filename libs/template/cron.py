"""The ``cron_expression`` custom constraint: croniter's parser, reduced to accept/reject and its messages.

Fields: minute hour day-of-month month day-of-week [second [year]]. Supported:
*, n, a-b, */s, a-b/s, a/s, lists, month/day names, ? (day fields), L (day of
month), d#n and Ln (day of week), @hourly-style aliases. croniter's H/R hash
forms and W are not.
"""

from __future__ import annotations

import re
from typing import Any

_CRON_ALIASES = {"@midnight": "0 0 * * *", "@hourly": "0 * * * *", "@daily": "0 0 * * *",
                 "@weekly": "0 0 * * 0", "@monthly": "0 0 1 * *", "@yearly": "0 0 1 1 *",
                 "@annually": "0 0 1 1 *"}
_CRON_BOUNDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6), (0, 59), (1970, 2099))
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_CRON_NAMES: tuple[dict[str, Any], ...] = (
    {}, {}, {"l": "l"}, {m: i + 1 for i, m in enumerate(_MONTHS)}, {d: i for i, d in enumerate(_DAYS)},
    {}, {})
_NTH_DAY = re.compile(rf"^(?:(?P<day>(?:(?:{'|'.join(_DAYS)})(?:-(?:{'|'.join(_DAYS)}))?"
                      rf"|(?:{'|'.join(_MONTHS)})(?:-(?:{'|'.join(_MONTHS)}))?|\w+))#|l)(?P<nth>\d+)$")
_CRON_RANGE = re.compile(r"^([^-]+)-([^-/]+)(/(\d+))?$")


class _CronError(Exception):
    pass


def _cron_alias(value: int, field: int, columns: int) -> int:
    # croniter maps day/month 0 -> 1 and weekday 7 -> 0 only in some column counts.
    if field == 2 and columns == 6:
        return 1 if value == 0 else value
    if field == 4 and columns == 5:
        return 0 if value == 7 else value
    return value


def _cron_name(columns: list[str], field: int, token: str) -> Any:
    try:
        return _CRON_NAMES[field][token]
    except KeyError:
        raise _CronError(f"[{' '.join(columns)}] is not acceptable") from None


def _cron_span(expression: str, columns: list[str], field: int, item: str) -> list[int] | None:
    """The values a range item (a-b, */s, a/s, a-b/s) stands for; None for a single value."""
    low_bound, high_bound = _CRON_BOUNDS[field]
    ranged = _CRON_RANGE.search(re.sub(r"^\*(/.+)$", rf"{low_bound}-{high_bound}\1", item))
    if ranged is None:
        ranged = _CRON_RANGE.search(re.sub(r"^(.+)/(.+)$", rf"\1-{high_bound}/\2", item))
    if ranged is None:
        return None
    low, high, step = ranged.group(1), ranged.group(2), int(ranged.group(4) or 1)
    high = "31" if field == 2 and high == "l" else high
    low = low if low.isdigit() else str(_cron_name(columns, field, low))
    high = high if high.isdigit() else str(_cron_name(columns, field, high))
    if step == 0:
        raise _CronError(f"[{expression}] step '0' in field {field} is not acceptable")
    if not (low.isdigit() and high.isdigit()):
        raise _CronError(f"[{expression}] bands '{low}-{high}' in field {field} are not acceptable")
    first, last = (_cron_alias(int(v), field, len(columns)) for v in (low, high))
    if max(first, last) > high_bound:
        raise _CronError(f"{expression} is out of bands")
    if first > last:  # wraps around: fri-mon
        return [*range(first, high_bound + 1, step), *range(low_bound, last + 1, step)]
    if first == last:  # "5-5" means the whole cycle in croniter
        return list(range(low_bound, high_bound + 1, step))
    return list(range(first, last + 1, step))


def _cron_field(expression: str, columns: list[str], field: int, text: str) -> None:
    low_bound, high_bound = _CRON_BOUNDS[field]
    if "?" in text:
        if text != "?":
            raise _CronError(f"[{expression}] is not acceptable. Question mark can not used with other "
                             "characters")
        if field not in (2, 4):
            raise _CronError(f"[{expression}] is not acceptable. Question mark can only used in "
                             "day_of_month or day_of_week")
        text = "*"
    # croniter works through the items last to first, expanding ranges in
    # place, so the first error it reports is the one found this way.
    pending: list[Any] = text.split(",")
    seen: set[int] = set()
    while pending:
        item = str(pending.pop())
        if field == 4 and (special := _NTH_DAY.match(item)):
            if special["day"]:
                nth = int(special["nth"])
                if not 1 <= nth <= 5:
                    raise _CronError(f"[{expression}] is not acceptable. Invalid day_of_week value: "
                                     f"'{nth}'")
                item = special["day"]
            else:
                item = special["nth"]
        span = _cron_span(expression, columns, field, item)
        if span is not None:
            pending += [v for v in span if v not in seen]
            seen.update(span)
            continue
        if item.startswith("-"):
            raise _CronError(f"[{expression}] is not acceptable, negative numbers not allowed")
        value: Any = item if re.search(r"^(\d+|\*)$", item) else _cron_name(columns, field, item)
        if value in ("*", "l"):
            continue
        if not low_bound <= _cron_alias(int(value), field, len(columns)) <= high_bound:
            raise _CronError(f"[{expression}] is not acceptable, out of range")


def cron_expression(value: Any) -> str | None:
    """None if ``value`` is an acceptable cron expression, else why not (Heat's reason)."""
    if not value:
        return None
    if not isinstance(value, str):
        return f"Invalid CRON expression: '{type(value).__name__}' object has no attribute 'lower'"
    lowered = value.lower()
    columns = _CRON_ALIASES.get(lowered, lowered).split()
    try:
        if len(columns) not in (5, 6, 7):
            raise _CronError("Exactly 5, 6 or 7 columns has to be specified for iterator expression.")
        for field, text in enumerate(columns):
            _cron_field(value, columns, field, text)
    except _CronError as exc:
        return f"Invalid CRON expression: {exc}"
    return None
