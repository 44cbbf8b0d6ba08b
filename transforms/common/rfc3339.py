"""RFC 3339 timestamps (section 5.6, `date-time`) as nanoseconds since the epoch.

Python's `datetime.fromisoformat` reads ISO 8601 at large: it took week dates (`2024-W18-3`),
bare dates, hours without minutes and basic-format times, but refused the lower-case `t` and
`z` that RFC 3339 allows. A trace's time decides its day and window, so one strict reader
serves every source (trace records and the span formats) and accepts exactly:

    YYYY-MM-DD ( "T" | "t" | " " ) hh:mm:ss [ "." 1*DIGIT ] [ "Z" | "z" | ("+" | "-") hh:mm ]

- the space separator: RFC 3339 allows it by the note in section 5.6, and it is what SQL
  engines and Python's `str(datetime)` write;
- no offset: read as UTC. Not RFC 3339, but rt4chart's documented rule ("a timestamp without
  zone is UTC"), kept for exports that write local timestamps without a zone;
- a leap second (`23:59:60`) is read as the second after 23:59:59, where POSIX time puts it;
- fractions are exact to the nanosecond; further digits are cut (never rounded: rounding could
  carry into the next day).

Everything else, a bare date (`2024-05-01`) included, is refused. No Beam imports here.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

NS_PER_S = 1_000_000_000
_EPOCH_DAY = date(1970, 1, 1).toordinal()
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_DATE_TIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})?",
    re.ASCII)


class NotRfc3339(ValueError):
    """Text that is not an RFC 3339 date-time (or names a day that does not exist)."""


class OutOfRange(NotRfc3339):
    """An RFC 3339 date-time before year 1, which no datetime can hold."""


def parse_ns(text: str) -> int:
    """Nanoseconds since 1970-01-01T00:00:00Z of an RFC 3339 date-time (see the module).

    Raises:
        NotRfc3339: not one (its message quotes the text).
        OutOfRange: year 0000.
    """
    match = _DATE_TIME.fullmatch(text)
    if match is None:
        raise NotRfc3339(f"{text!r:.60} is not RFC 3339")
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    if year == 0:
        raise OutOfRange(f"{text!r:.60} is before year 1")
    try:
        days = date(year, month, day).toordinal() - _EPOCH_DAY
    except ValueError as exc:  # month 13, February 30, ...
        raise NotRfc3339(f"{text!r:.60} is not RFC 3339: {exc}") from exc
    if hour > 23 or minute > 59 or second > 60:
        raise NotRfc3339(f"{text!r:.60} is not RFC 3339: no such time of day")
    seconds = days * 86_400 + hour * 3600 + minute * 60 + second - _offset_s(match[8], text)
    fraction = int(((match[7] or "") + "000000000")[:9])
    return seconds * NS_PER_S + fraction


def _offset_s(offset: str | None, text: str) -> int:
    """Seconds east of UTC of `Z`, `+hh:mm` or `-hh:mm` (none: UTC)."""
    if offset is None or offset in "Zz":
        return 0
    hours, minutes = int(offset[1:3]), int(offset[4:6])
    if hours > 23 or minutes > 59:
        raise NotRfc3339(f"{text!r:.60} is not RFC 3339: no such offset {offset}")
    sign = -1 if offset[0] == "-" else 1
    return sign * (hours * 3600 + minutes * 60)


def format_ns(ns: int) -> str:
    """RFC 3339 text (UTC, `Z`, nine fraction digits) of nanoseconds since the epoch, which
    `parse_ns` reads back exactly; for the years 1-9999."""
    seconds, fraction = divmod(ns, NS_PER_S)
    moment = _EPOCH + timedelta(seconds=seconds)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{fraction:09d}Z"
