"""Reading a time span (start and end, in seconds) from a model's free-text answer.

The official MedVidQA code never reads text: its model emits two clip indices. This reader is
ours, for the text-prediction format (``{"sample_id", "prediction": "..."}``), and takes the
first span the answer states, by two rules tried in order:

1. **Labelled**: a start label (``start``, ``begin``, ``starting time``, ``"start_time":``,
   ``answer_start_second``...) followed by a time, then an end label (``end``, ``ending
   time``...) followed by a time, later in the answer.
2. **Range**: two times joined by a range word or mark: ``-``, ``--``, ``->``, ``-->``, ``~``,
   an en or em dash, ``to``, ``until``, ``till``, ``through``, ``and`` or a comma
   (``10-20``, ``from 1:05 to 2:10``, ``between 12 and 30 seconds``, ``[12.5, 30]``).

A time is ``SS``/``SS.s`` seconds, ``M:SS`` or ``H:MM:SS`` (a fraction allowed after the
seconds: ``1:05.5``), or a number with a unit (``s``, ``sec``, ``seconds``, ``m``, ``min``,
``minutes``, ``h``, ``hours``). A unit after the second time of a range also applies to a
first time that has none (``2-3 minutes`` is 120-180 s). Signs are not read: no time in a video
is negative, and ``-`` is a range mark. The span is returned as written, start first: ``30 to
10`` stays reversed, and is scored as the official formula scores a reversed span. An answer
with no span (one time alone, or none) is unread: it scores IoU 0 and counts as unparsed.

Every pattern is a :mod:`medvidbench.core.linear_re` pattern and each rule runs at most two
searches, so reading an answer takes time linear in its length, whatever it holds.
"""

from __future__ import annotations

import re

from medvidbench.core import linear_re

Segment = tuple[float, float]

# A clock time (M:SS, MM:SS, H:MM:SS, with an optional fraction) or a plain number.
_CLOCK = r"\d{1,3}(?::\d{2}){1,2}(?:\.\d+)?"
_NUMBER = r"\d+(?:\.\d+)?"
_TIME = rf"({_CLOCK}|{_NUMBER})"
# A unit is a whole word: "10 so" is ten, not ten seconds.
_UNIT = r"(?:\s*(hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)(?![A-Za-z]))?"
# A time never starts inside a number or a word: "v2-3" and "1.5-2" read no "2-3" or "5-2".
_START = r"(?<![\w.:])"
_RANGE = r"\s*(?:-+>?|→|–|—|~|,|(?:to|until|till|through|and)(?![A-Za-z]))\s*"
_SUFFIX = r"(?:s|ing|ning)?(?:[ _-]?(?:time|timestamp|second|seconds|sec|point))?(?![A-Za-z])"
# What may stand between a label and its time: quotes, colons, equals signs, a few words.
_FILL = r"(?:[\s\"'`:=]|(?<![A-Za-z])(?:at|is|of|from)(?![A-Za-z]))*"

RANGE = linear_re.compile(_START + _TIME + _UNIT + _RANGE + _TIME + _UNIT, re.IGNORECASE)
START_LABEL = linear_re.compile(
    rf"(?<![A-Za-z])(?:start|begin){_SUFFIX}{_FILL}{_TIME}{_UNIT}", re.IGNORECASE
)
END_LABEL = linear_re.compile(rf"(?<![A-Za-z])end{_SUFFIX}{_FILL}{_TIME}{_UNIT}", re.IGNORECASE)

_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0}


def seconds(time: str, unit: str = "") -> float:
    """One time in seconds: ``M:SS`` or ``H:MM:SS`` by its fields, a number by its unit.

    Examples:
        >>> seconds("1:05"), seconds("1:02:03.5"), seconds("90"), seconds("2", "min")
        (65.0, 3723.5, 90.0, 120.0)
    """
    if ":" in time:
        total = 0.0
        for field in time.split(":"):
            total = total * 60.0 + float(field)
        return total
    # the unit's first letter names it: h(ours), m(inutes), s(econds)
    return float(time) * _UNIT_SECONDS[unit[:1].lower() or "s"]


def _labelled(text: str) -> Segment | None:
    """Rule 1: a start label's time, then an end label's time after it."""
    start = START_LABEL.search(text)
    if start is None:
        return None
    end = END_LABEL.search(text[start.end() :])
    if end is None:
        return None
    first = seconds(start.group(1), start.group(2) or "")
    return first, seconds(end.group(1), end.group(2) or "")


def _range(text: str) -> Segment | None:
    """Rule 2: the first two times joined by a range word or mark."""
    found = RANGE.search(text)
    if found is None:
        return None
    first, first_unit, second, second_unit = found.groups()
    assert first is not None and second is not None  # both groups always take part
    shared = second_unit or ""
    return seconds(first, first_unit or shared), seconds(second, shared)


def parse_span(text: str) -> Segment | None:
    """The first time span an answer states, in seconds, or None when it states none.

    Examples:
        >>> parse_span("The answer is shown from 01:05 to 02:10.")
        (65.0, 130.0)
        >>> parse_span("between 12 and 30.5 seconds")
        (12.0, 30.5)
        >>> parse_span("2-3 minutes into the video")
        (120.0, 180.0)
        >>> parse_span('{"start_time": "0:12", "end_time": "0:30"}')
        (12.0, 30.0)
        >>> parse_span("[12.5, 30]")
        (12.5, 30.0)
        >>> parse_span("at 1:05") is None
        True
    """
    return _labelled(text) or _range(text)
