"""Dates, weekdays and times of day found in text, in one canonical form: "May 1, 2024" /
"2024-05-01" / "1 May 2024" / "05/01/2024" (month-first and day-first both kept), "5 pm" /
"17:00" / "17:0", "noon". Read by `quantities.read` before numbers, so that their digits are
not also read as numbers."""

from __future__ import annotations

import re
from dataclasses import dataclass

MONTHS = {name: i for i, names in enumerate(
    ("January Jan", "February Feb", "March Mar", "April Apr", "May", "June Jun", "July Jul",
     "August Aug", "September Sep Sept", "October Oct", "November Nov", "December Dec"),
    start=1) for name in names.split()}
WEEKDAYS = {name: name[:3].lower() for name in
            "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()}
_MONTH = r"(?P<mon>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_ORD = r"(?:st|nd|rd|th)?"
_DATE_RES = [re.compile(p) for p in (
    r"\b(?P<y>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})\b",
    r"\b(?P<a>\d{1,2})[/.](?P<b>\d{1,2})[/.](?P<y>\d{4}|\d{2})\b",
    r"\b" + _MONTH + r"\s+(?P<d>\d{1,2})" + _ORD + r"(?!\d|:\d)(?:,?\s+(?P<y>\d{4})\b)?",
    r"\b(?P<d>\d{1,2})" + _ORD + r"\s+(?:of\s+)?" + _MONTH + r"(?:,?\s+(?P<y>\d{4})\b)?",
    r"\b" + _MONTH + r",?\s+(?P<y>\d{4})\b",
    r"(?:\b(?P<cue>in|of|since|until|by|early|late|mid|last|next|this|from|to|during)\s+)?\b"
    + _MONTH + r"(?![\w-])",
)]
_TIME_RES = [re.compile(p, re.I) for p in (
    r"\b(?P<h>\d{1,2})(?::(?P<min>\d{1,2}))?\s*(?P<half>[ap])\.?\s?m\b(?:\.(?=\w))?",
    r"\b(?P<h>\d{1,2}):(?P<min>\d{1,2})(?![\d:])",
    r"\b(?P<word>noon|midday|midnight)\b",
)]


@dataclass(frozen=True)
class When:
    """A date (year, month, day, any of them None), a weekday, or a time of day in minutes."""

    kind: str  # "date", "weekday" or "time"
    value: tuple
    text: str



def _blank(text: str, start: int, end: int) -> str:
    return text[:start] + " " * (end - start) + text[end:]


def _year(raw: str | None) -> int | None:
    if not raw:
        return None
    year = int(raw)
    return year + (2000 if year < 50 else 1900) if len(raw) == 2 else year


def _dates(match: re.Match) -> list[tuple]:
    groups = match.groupdict()
    year = _year(groups.get("y"))
    if groups.get("a"):  # 05/01/2024: month-first or day-first, both kept
        a, b = int(groups["a"]), int(groups["b"])
        return [(year, m, d) for m, d in {(a, b), (b, a)} if 1 <= m <= 12 and 1 <= d <= 31]
    month = int(groups["m"]) if groups.get("m") else MONTHS[groups["mon"]]
    day = int(groups["d"]) if groups.get("d") else None
    if not 1 <= month <= 12 or day is not None and not 1 <= day <= 31:
        return []
    return [(year, month, day)]


def read_dates(text: str) -> tuple[list[When], str]:
    found: list[When] = []
    for pattern in _DATE_RES:
        for match in pattern.finditer(text):
            mon = match.groupdict().get("mon")
            if mon == "May" and match.re is _DATE_RES[-1] and not match.group("cue"):
                continue  # "May" alone is the modal verb more often than the month
            found.extend(When("date", v, match.group().strip()) for v in _dates(match))
            text = _blank(text, match.start(), match.end())
    for match in re.finditer(r"\b(" + "|".join(WEEKDAYS) + r")s?\b", text):
        found.append(When("weekday", (WEEKDAYS[match.group(1)],), match.group()))
    return found, text


def read_times(text: str) -> tuple[list[When], str]:
    found: list[When] = []
    for pattern in _TIME_RES:
        for match in pattern.finditer(text):
            groups = match.groupdict()
            if groups.get("word"):
                minutes, ambiguous = (0 if groups["word"].lower() == "midnight" else 720), False
            else:
                hour, minute = int(groups["h"]), int(groups.get("min") or 0)
                if hour > 24 or minute > 59:
                    continue
                half = (groups.get("half") or "").lower()
                hour = hour % 12 + (12 if half == "p" else 0) if half else hour
                minutes, ambiguous = hour * 60 + minute, not half and hour <= 12
            found.append(When("time", (minutes % 1440, ambiguous), match.group().strip()))
            text = _blank(text, match.start(), match.end())
    return found, text
