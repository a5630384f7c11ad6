"""The linear-time matcher gives exactly what ``re`` gives, and every answer parser uses it.

The parsers' patterns are collected from their modules, so a pattern added later is checked
too; each is compared with ``re`` on thousands of short texts drawn from the characters these
patterns care about (digits, separators, brackets, unit words, Unicode digits and spaces). Long
hostile answers (the ones that took ``re`` minutes) then parse to what ``re`` gives on their
short versions, and finish.
"""

from __future__ import annotations

import random
import re
from re import _constants as C  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

import pytest

from medvidbench.benchmarks.medsg import scoring as medsg
from medvidbench.benchmarks.medvidbench.tasks import dvc, sa, stg, tal
from medvidbench.core import linear_re
from medvidbench.core.linear_re import LinearPattern, Sections, UnsupportedPattern, program

PARSER_MODULES = (medsg, tal, dvc, stg, sa)
ALPHABET = "0123456789 ,.-:/()[]\n\t5sto SECONDS seconds to ١٢ſK\u2212\u3000，（）*–"


def _parser_patterns() -> list[tuple[str, LinearPattern]]:
    found = []
    for module in PARSER_MODULES:
        for name, value in vars(module).items():
            values = value if isinstance(value, tuple) else (value,)
            found += [
                (f"{module.__name__}.{name}", p.whole if isinstance(p, Sections) else p)
                for p in values
                if isinstance(p, LinearPattern | Sections)
            ]
    return found


PATTERNS = _parser_patterns()
SECTIONS = [
    (f"{module.__name__}.{name}", value)
    for module in PARSER_MODULES
    for name, value in vars(module).items()
    if isinstance(value, Sections)
]


def _one_character(pattern: re.Pattern[str]) -> bool:
    """A pattern that matches one character of a class: linear in ``re`` too (split on it)."""
    parsed = list(sre_parse.parse(pattern.pattern, pattern.flags))
    return len(parsed) == 1 and parsed[0][0] in (C.LITERAL, C.NOT_LITERAL, C.IN, C.ANY)


def test_every_answer_parser_pattern_is_linear() -> None:
    """No answer parser keeps a backtracking ``re`` pattern."""
    for module in PARSER_MODULES:
        for name, value in vars(module).items():
            values = value if isinstance(value, tuple) else (value,)
            for v in values:
                if isinstance(v, re.Pattern):
                    assert _one_character(v), f"{module.__name__}.{name} backtracks in re"
    assert len(PATTERNS) >= 17


def _texts(seed: int, count: int, longest: int = 32) -> list[str]:
    rng = random.Random(seed)
    return [
        "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, longest))) for _ in range(count)
    ]


@pytest.mark.parametrize(("name", "pattern"), PATTERNS, ids=[n for n, _ in PATTERNS])
def test_same_matches_as_re(name: str, pattern: LinearPattern) -> None:
    reference = re.compile(pattern.pattern, pattern.flags)
    for text in _texts(sum(map(ord, name)), 1500):
        assert pattern.findall(text) == reference.findall(text), text
        assert [m.span() for m in pattern.finditer(text)] == [
            m.span() for m in reference.finditer(text)
        ], text


@pytest.mark.parametrize(
    ("pattern", "flags"),
    [
        (r"a.*?$", re.DOTALL),
        (r"x[^:]*?\Z", 0),
        (r"(.+?)(?=,|\Z)", re.DOTALL),
        (r"(\w+?)(?:,|;)\s*(\d*?)x", 0),
        (r"b\s*?\d+?c", re.IGNORECASE),
        (r"\b\w+\b", 0),
        (r"(a|ab)(c|bcd)(d*)", 0),
        (r"(?:x(\d)){2,3}y?", 0),
        (r"(\w+)(\d+)y", 0),  # a run asked for at falling positions (backtracking into \w+)
        # rows of literal characters, matched as one word: alone, in loops, jumped over
        (r"ab(?:cd|c)d?,", 0),
        (r"(?:ab)+c", 0),
        (r"x[^y]*?ab;", 0),
        (r"ab|abc|bcd", 0),
        (r"a(b)cd(?=\n1 2)", 0),
        (r"CB?cd", re.IGNORECASE),
    ],
)
def test_constructs_match_re(pattern: str, flags: int) -> None:
    ours, reference = linear_re.compile(pattern, flags), re.compile(pattern, flags)
    rng = random.Random(7)
    for _ in range(3000):
        text = "".join(rng.choice("ab,;x:1 2\ncdCB_y") for _ in range(rng.randint(0, 20)))
        assert ours.findall(text) == reference.findall(text), text
        found = ours.search(text)
        expected = reference.search(text)
        assert (found and (found.span(), found.groups())) == (
            expected and (expected.span(), expected.groups())
        ), text


@pytest.mark.parametrize(
    "pattern",
    [r"(a)\1", r"(?=ab)a", r"(?i:a)b", r"a*+b", r"(?>a)b", r"a*", r"(a?)*b", r"^a"],
)
def test_what_it_cannot_reproduce_is_refused(pattern: str) -> None:
    if pattern == r"^a":  # anchors are supported: the control case
        assert linear_re.compile(pattern).findall("ab") == ["a"]
        return
    with pytest.raises(UnsupportedPattern):
        linear_re.compile(pattern)


HOSTILE = {
    "digits": "1" * 8_000,
    "digits-and-commas": "1," * 4_000,
    "spaces": "1" + " " * 8_000 + "x",
    "no-colon": "a" * 8_000,
    "dotted": "1." * 4_000,
}


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_hostile_answers_parse_as_re_parses_them(kind: str) -> None:
    """The answers that held ``re`` for minutes finish, with re's result on a short version
    (the structure repeats, so the long result is the short one extended the same way)."""
    text = HOSTILE[kind]
    short = text[:60] if kind != "spaces" else "1" + " " * 60 + "x"
    for name, pattern in PATTERNS:
        reference = re.compile(pattern.pattern, pattern.flags)
        assert pattern.findall(short) == reference.findall(short), name
        pattern.findall(text)  # finishes: minutes with re, well under a second here
    medsg.parse_strong(text)
    tal.parse(text)
    tal.parse(text, strict=True)
    dvc.parse(text)
    dvc.parse(text, strict=True)
    sa.parse(text)
    sa.parse(text, strict=True)
    stg.parse(text, ["1.0"])
    stg.parse(text, ["1.0"], strict=True)


@pytest.mark.parametrize("order", ["rising", "falling", "shuffled"])
def test_run_ends_found_on_demand_match_the_one_pass_table(order: str) -> None:
    """A run's end is matched where it is asked; asked in any order, every answer is the
    one-pass table's, and once the characters matched add up to the text's length the table
    is built instead (so asking at falling positions stays linear)."""
    text = "12 345" + "6" * 300 + "x 7 8" + "9" * 50
    run = linear_re.compile(r"\d+x")._args[1]  # \d+ is a digit, then a run of \d*
    assert isinstance(run, program.Run)
    table = run.ends(text)
    positions = list(range(len(text) + 1))
    if order == "falling":
        positions.reverse()
    elif order == "shuffled":
        random.Random(3).shuffle(positions)
    ends = program.run_ends(text)
    for pos in positions:
        got = ends[pos] if ends[pos] >= 0 else program.run_end(run, text, ends, pos)
        assert got == table[pos], pos
    assert ends[:-1] == table
    if order == "falling":  # one character at a time: the budget ran out, the table was built
        assert ends[-1] > len(text)


def test_the_strong_parser_still_splits_numbers_as_the_official_script() -> None:
    assert medsg.parse_strong("[161, 346, 187,") == [161.0, 34.0, 6.0, 187.0]
    assert medsg.parse_strong("(12,34)" + "5" * 300 + ",6") == [12.0, 34.0, float("5" * 300), 6.0]


# --- sections: a header and its text, up to the next terminator (linear_re.Sections) ------------


def test_sections_of_the_parsers_find_what_re_finds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside a budget a Sections pattern is read a header and a terminator at a time; it finds
    what ``re`` finds for the whole pattern, on texts made of the pieces its headers and
    terminators are made of (events on one line, on several, bullets, captions spanning lines,
    terminators without the header's space)."""
    monkeypatch.setattr(linear_re.budget, "BASE", 1.0)  # no timeout on a loaded machine
    pieces = ["0", "1", "12", "3.5", ".", "-", "–", " ", "\t", "\n", "\n\n", ":", "a", "b c"]
    pieces += ["seconds", "second", "1.0-2.5 seconds: ", "\n3-4 seconds:", "\n5-6.5 second:x"]
    rng = random.Random(23)
    assert SECTIONS
    with linear_re.budgeted() as budget:
        assert budget is not None
        for name, sections in SECTIONS:
            reference = re.compile(sections.whole.pattern, sections.whole.flags)
            for _ in range(5000):
                text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 16)))
                assert sections.findall(text) == reference.findall(text), (name, text)
        assert budget.timeouts == 0 and budget.tried == 5000 * len(SECTIONS)


@pytest.mark.parametrize(
    ("head", "term", "flags"),
    [
        (r"x", r";", 0),  # no group in the head: findall gives the texts alone
        (r"(a)(b)?:", r"\n[ab]", re.IGNORECASE),  # a group that takes no part: ""
        (r"\d+:", r"\d+:", 0),  # every terminator is the next header
        (r"(\w+)\s*=", r"[;\n]", 0),
        (r"(?i)(b):", r"\nb:", 0),  # the head's inline flag holds for the terminator too
    ],
)
def test_sections_of_any_head_and_terminator_find_what_re_finds(
    head: str, term: str, flags: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(linear_re.budget, "BASE", 1.0)
    sections = Sections(head, term, flags)
    reference = re.compile(f"{head}(.*?)(?={term}|\\Z)", flags | re.DOTALL)
    rng = random.Random(5)
    texts = [
        "".join(rng.choice("ab;x:12\nAB =") for _ in range(rng.randint(0, 20))) for _ in range(3000)
    ]
    expected = [reference.findall(t) for t in texts]
    assert [sections.findall(t) for t in texts] == expected  # the engine, outside a block
    with linear_re.budgeted() as budget:
        assert budget is not None
        assert [sections.findall(t) for t in texts] == expected  # re, a header at a time
        assert budget.timeouts == 0
    assert [bool(sections.search(t)) for t in texts] == [bool(e) for e in expected]


def test_a_terminator_with_groups_is_refused() -> None:
    with pytest.raises(UnsupportedPattern, match="terminator"):
        Sections("a", "(b)")


def test_a_hostile_answer_to_sections_runs_out_of_time_and_the_engine_finishes_it() -> None:
    """A run of digits makes ``re``'s search for a header quadratic; inside a budget the call
    is stopped and the engine answers, as it does outside one."""
    text = "1" * 20_000 + " then 0.0-1.0 seconds: a cut"
    expected = dvc._V1_EVENT.findall(text)
    assert expected == [("0.0", "1.0", "a cut")]
    with linear_re.budgeted() as budget:
        assert budget is not None
        assert dvc._V1_EVENT.findall(text) == expected
        assert budget.timeouts == 1


# --- re first, under a time budget (linear_re.budget) ------------------------------------------


def test_inside_a_budget_re_itself_answers_with_the_same_results(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Within ``budgeted``, ordinary answers are matched by ``re`` (the fast path), and every
    method gives what ``re`` gives, as the engine does outside the block."""
    monkeypatch.setattr(linear_re.budget, "BASE", 1.0)  # no timeout on a loaded machine
    with linear_re.budgeted() as budget:
        assert budget is not None
        for name, pattern in PATTERNS:
            reference = re.compile(pattern.pattern, pattern.flags)
            for text in _texts(sum(map(ord, name)) + 1, 200):
                assert pattern.findall(text) == reference.findall(text), (name, text)
                assert [(m.span(), m.groups()) for m in pattern.finditer(text)] == [
                    (m.span(), m.groups()) for m in reference.finditer(text)
                ], (name, text)
                found, expected = pattern.search(text), reference.search(text)
                assert (found and found.span()) == (expected and expected.span()), text
        assert (budget.tried, budget.timeouts) == (3 * 200 * len(PATTERNS), 0)


def test_a_hostile_answer_runs_out_of_time_and_the_engine_finishes_it() -> None:
    """``re`` needs seconds for this answer (its backtracking is cubic in the digit run: about
    6 s here); the budget stops each call after a few milliseconds and the engine answers it."""
    pattern, text = medsg._STRONG_PAIRS, "(12, 34), (5.5, 6) then " + "1" * 1000
    first = pattern.search(text)  # the engine's answers, outside any block
    expected = (pattern.findall(text), [m.span() for m in pattern.finditer(text)], first)
    assert expected[0] == [("12", "34", "5.5", "6")] and first is not None
    with linear_re.budgeted() as budget:
        assert budget is not None
        found = pattern.search(text)
        assert found is not None and found.groups() == first.groups()
        assert pattern.findall(text) == expected[0]
        assert [m.span() for m in pattern.finditer(text)] == expected[1]
        # search stops at the first match, before the digit run: re answers it in time
        assert (budget.tried, budget.timeouts) == (3, 2)


def test_after_enough_timeouts_a_block_goes_straight_to_the_engine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(linear_re.budget, "TIMEOUTS_PER_BATCH", 2)
    pattern, text = medsg._STRONG_PAIRS, "1" * 1000
    with linear_re.budgeted() as budget:
        assert budget is not None
        for _ in range(4):
            pattern.findall(text)
        assert (budget.tried, budget.timeouts) == (2, 2)
        assert pattern.findall("(1, 2) (3, 4)") == [("1", "2", "3", "4")]
        assert budget.tried == 2  # not given to re any more


def test_the_timer_and_the_signal_are_left_as_they_were() -> None:
    """A block installs its handler for its own duration only, and stays out of the way of a
    program that uses ``SIGALRM`` or a real-time timer itself."""
    import signal

    with linear_re.budgeted() as budget:
        assert budget is not None
        assert signal.getsignal(signal.SIGALRM) is not signal.SIG_DFL
        with linear_re.budgeted() as inner:  # nested: the same block
            assert inner is budget
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)

    fired: list[int] = []

    def theirs(signum: int, frame: object) -> None:
        fired.append(signum)

    previous = signal.signal(signal.SIGALRM, theirs)
    try:
        with linear_re.budgeted() as budget:
            assert budget is None  # their handler: the engine matches everything
            assert medsg._STRONG_PAIRS.findall("(1, 2) (3, 4)") == [("1", "2", "3", "4")]
        assert signal.getsignal(signal.SIGALRM) is theirs
    finally:
        signal.signal(signal.SIGALRM, previous)

    signal.setitimer(signal.ITIMER_REAL, 600)  # a timer of theirs, with the default handler
    try:
        with linear_re.budgeted() as budget:
            assert budget is None
        assert 590 < signal.getitimer(signal.ITIMER_REAL)[0] <= 600
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    assert fired == []


def test_other_threads_match_with_the_engine() -> None:
    """Signals reach the main thread only, so no other thread ever arms the timer."""
    import threading

    seen: list[object] = []

    def work() -> None:
        with linear_re.budgeted() as mine:
            seen.append(mine)
        seen.append(medsg._STRONG_PAIRS.findall("(1, 2) (3, 4)"))

    with linear_re.budgeted() as budget:
        assert budget is not None
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
        assert budget.tried == 0
    assert seen == [None, [("1", "2", "3", "4")]]


def test_the_timer_is_set_once_for_many_short_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call that finds the timer running does not set it again (two system calls per call
    cost as much as ``re`` itself on a typical answer)."""
    import signal

    real = signal.setitimer
    sets: list[float] = []

    def counting(which: int, seconds: float, interval: float = 0.0) -> tuple[float, float]:
        sets.append(seconds)
        return real(which, seconds, interval)

    monkeypatch.setattr(signal, "setitimer", counting)
    monkeypatch.setattr(linear_re.budget, "BASE", 0.5)  # no timeout on a loaded machine
    with linear_re.budgeted() as budget:
        assert budget is not None
        for n in range(2000):
            assert dvc._V1_EVENT.findall(f"{n}.0-{n + 1}.0 seconds: a cut") == [
                (f"{n}.0", f"{n + 1}.0", "a cut")
            ]
        assert budget.tried == 2000 and budget.timeouts == 0
    assert 1 <= len([s for s in sets if s > 0]) < 500
    assert sets[-1] == 0  # cleared when the block ends


def test_a_slow_tracer_cannot_let_the_timeout_escape(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a debugger or a Python-level coverage tracer, the handler can run at any line of
    the call; its exception must still be caught there (every call still answers)."""
    import sys
    import time

    monkeypatch.setattr(linear_re.budget, "BASE", 0.001)
    code = linear_re.budget.Budget.attempt.__code__

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code is not code:
            return None

        def each_line(frame: Any, event: str, arg: Any) -> Any:
            if event == "line":
                time.sleep(0.0015)  # longer than the budget: the timer fires at this line
            return each_line

        return each_line

    pattern = dvc._V1_EVENT
    texts = [f"{n}.0-{n + 1}.0 seconds: a cut" for n in range(12)]
    with linear_re.budgeted() as budget:
        assert budget is not None
        sys.settrace(tracer)
        try:
            found = [pattern.findall(t) for t in texts]
        finally:
            sys.settrace(None)
    assert found == [[(f"{n}.0", f"{n + 1}.0", "a cut")] for n in range(12)]


def test_each_call_is_stopped_at_its_own_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long ordinary answer sets the timer far ahead; a hostile short answer after it is
    still stopped at its own, much nearer deadline (not the long answer's)."""
    import time

    monkeypatch.setattr(linear_re.budget, "PER_CHARACTER", 4e-6)
    long_ordinary = "0.0-1.0 seconds: a cut\n" * 100_000  # a budget of about 9 s
    hostile = medsg._STRONG_PAIRS, "(12, 34), (5.5, 6) then " + "1" * 1000  # seconds in re
    with linear_re.budgeted() as budget:
        assert budget is not None
        assert len(dvc._V1_EVENT.findall(long_ordinary)) == 100_000
        started = time.perf_counter()
        assert hostile[0].findall(hostile[1]) == [("12", "34", "5.5", "6")]
        took = time.perf_counter() - started
        assert budget.timeouts == 1
    assert took < 4.0, took  # its own budget is 10 ms + 4 ms; the long answer's is 9 s


def test_a_collection_callback_running_when_the_time_is_up_cannot_swallow_the_timeout() -> None:
    """Python code of someone else's can run inside an armed call: a garbage collection started
    by the call's own allocations runs ``gc.callbacks`` and weakref callbacks (SQLAlchemy's,
    in the server). An exception raised there is printed and dropped, so a handler that raised
    at the first moment the time was up lost the timeout, with the timer off, and ``re`` went on
    backtracking through a hostile answer for seconds. The handler raises only in the call's
    own frames; elsewhere it waits a millisecond and tries again."""
    import time

    slept: list[float] = []

    def slow_callback(phase: str, info: dict[str, Any], budget: Any) -> None:
        # once, inside the call: longer than its budget (about 12 ms)
        if phase == "start" and not slept and budget.armed:
            slept.append(time.perf_counter())
            time.sleep(0.03)

    _hostile_call_with_a_collection_callback(slow_callback)  # the budget, the sleep, the engine
    assert slept, "no collection ran inside the call"


def test_a_parse_from_inside_an_armed_call_leaves_the_call_armed() -> None:
    """A collection's callback that itself parses an answer (a finaliser, say) runs inside the
    armed call: it is matched by the engine, and the outer call keeps its deadline (the inner
    call's end once disarmed the outer one, and re backtracked to the end)."""
    inner: list[Any] = []

    def parsing_callback(phase: str, info: dict[str, Any], budget: Any) -> None:
        if phase == "start" and not inner and budget.armed:
            inner.append(medsg._STRONG_PAIRS.findall("(1, 2) (3, 4)"))

    _hostile_call_with_a_collection_callback(parsing_callback)
    assert inner == [[("1", "2", "3", "4")]]


def _hostile_call_with_a_collection_callback(callback: Any) -> None:
    """A hostile answer read by ``finditer`` inside a budget while every allocation starts a
    collection whose callbacks include ``callback(phase, info, budget)`` (each match object is
    an allocation: the first collection comes after the first match). It must time out once,
    give re's answer, and finish in seconds, not the minutes re would take."""
    import gc
    import time

    pattern, text = medsg._STRONG_PAIRS, "(12, 34), (5.5, 6) then " + "1" * 1000
    threshold = gc.get_threshold()
    with linear_re.budgeted() as budget:
        assert budget is not None

        def bound(phase: str, info: dict[str, Any]) -> None:
            callback(phase, info, budget)

        gc.callbacks.append(bound)
        gc.set_threshold(1)
        try:
            started = time.perf_counter()
            found = [m.groups() for m in pattern.finditer(text)]
            took = time.perf_counter() - started
        finally:
            gc.set_threshold(*threshold)
            gc.callbacks.remove(bound)
        assert found == [("12", "34", "5.5", "6")] and budget.timeouts == 1
    assert took < 4.0, took
