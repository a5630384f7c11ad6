"""Regular expressions matched in time linear in the text, with Python's own results.

Model answers are untrusted text, and Python's ``re`` backtracks: a pattern such as
``(\\d+\\.?\\d*)\\s*,\\s*(\\d+)`` splits a long digit run in many ways at every start position, so
one answer of a few thousand digits can hold the interpreter for minutes. Several published
parsers depend on exactly that backtracking (MedSG-Bench's strong parser splits ``346`` into
``34`` and ``6`` when a separator is missing), so the patterns cannot simply be made possessive.

:func:`compile` takes the same pattern string and flags as :func:`re.compile` and returns a
:class:`LinearPattern` whose ``findall``, ``finditer`` and ``search`` give exactly what ``re``
gives. It explores the same paths in the same order as ``re``'s backtracking engine, but
remembers every (instruction, position) pair it has already left without a match; since these
patterns have no back-references, such a pair fails again whenever it is reached, from any start
position. Each pair is therefore explored at most once per scan: the work is at most (program
length) x (text length + 1) steps.

Whether one character belongs to a class (``\\d``, ``\\s``, ``\\w``, ``[^:]``, a literal under
``re.IGNORECASE``...) is decided by ``re`` itself, on that single character, and remembered per
character: the Unicode rules cannot drift from Python's.

Inside a :func:`budgeted` block (the scorers parse a task's answers in one), each call first
runs Python's ``re`` itself under a time budget, and falls back to the engine only when that runs
out (:mod:`~medvidbench.core.linear_re.budget`): the same results, the same linear bound up to
a few budgets, and ``re``'s speed on ordinary answers.

:class:`Sections` reads a header and the text after it up to a terminator (an answer's events)
with the same results, a header and a terminator at a time where ``re`` answers.

Supported: literals and classes, ``.``, groups (capturing or not), alternation, greedy and lazy
repetition (bounded or not), the anchors ``^ $ \\A \\Z \\b \\B``, one-character
lookarounds (``(?!\\d)``, ``(?<![\\w.])``) and a lookahead that ends the pattern. Anything else
(back-references, other lookarounds, possessive or atomic groups, inline flags, patterns that can
match the empty string) is refused when the pattern is compiled, never matched differently.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from re import _compiler as sre_compile  # type: ignore[attr-defined]
from re import _constants as C  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

from medvidbench.core import cpu_budget
from medvidbench.core.linear_re import budget
from medvidbench.core.linear_re.budget import budgeted
from medvidbench.core.linear_re.program import (
    AT,
    CHAR,
    END,
    JMP,
    LAZY,
    LOOK,
    MATCH,
    RUN,
    SAVE,
    SHAPE_LONGEST,
    SHAPES_KEPT,
    SPLIT,
    WORD,
    CharClass,
    Compiler,
    Lazy,
    Run,
    Shapes,
    UnsupportedPattern,
    never,
    nullable,
    run_end,
    run_ends,
    word_character,
    words,
)

__all__ = [
    "LinearMatch",
    "LinearPattern",
    "Sections",
    "UnsupportedPattern",
    "budgeted",
    "compile",
]


class LinearMatch:
    """One match, with the parts of :class:`re.Match` the parsers use."""

    __slots__ = ("_slots", "string")

    def __init__(self, string: str, slots: list[int]) -> None:
        self.string = string
        self._slots = slots

    def span(self, group: int = 0) -> tuple[int, int]:
        return self._slots[2 * group], self._slots[2 * group + 1]

    def start(self, group: int = 0) -> int:
        return self._slots[2 * group]

    def end(self, group: int = 0) -> int:
        return self._slots[2 * group + 1]

    def group(self, group: int = 0) -> str | Any:
        """The text of a group, None when it took no part (typed as typeshed types re's)."""
        start, end = self.span(group)
        return None if start < 0 or end < 0 else self.string[start:end]

    def groups(self, default: str | None = None) -> tuple[str | None, ...]:
        count = len(self._slots) // 2
        return tuple(default if (g := self.group(i)) is None else g for i in range(1, count))

    def __repr__(self) -> str:
        return f"<LinearMatch span={self.span()} match={self.group()!r}>"


class LinearPattern:
    """A compiled pattern whose matching is linear in the text (see the module docstring)."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        if flags & (re.MULTILINE | re.VERBOSE | re.ASCII | re.LOCALE):
            raise UnsupportedPattern("flags other than IGNORECASE and DOTALL")
        self.pattern = pattern
        self.flags = flags
        parsed = sre_parse.parse(pattern, flags)
        if parsed.state.flags & ~(re.IGNORECASE | re.DOTALL | re.UNICODE):
            raise UnsupportedPattern("inline flags")
        if nullable(parsed):
            raise UnsupportedPattern("a pattern that can match the empty string")
        self.groups = parsed.state.groups - 1
        self._re = re.compile(pattern, flags)  # tried first inside budget.budgeted()
        compiler = Compiler(parsed.state, flags | parsed.state.flags)
        compiler.sequence(parsed, top=True)
        compiler.emit(MATCH)
        self._ops = compiler.ops
        self._args = compiler.args
        self._state, self._all_flags = parsed.state, flags | parsed.state.flags
        self._candidate: Callable[[str, int], re.Match[str] | None] | None = None  # _prepare
        self._shapes = Shapes(self._classes(), newline=C.AT_END in self._args)
        # What the engine runs: the same program with rows of literal characters joined.
        self._run_ops, self._run_args = words(self._ops, self._args, flags | parsed.state.flags)
        self._by_shape: dict[str, tuple[list[int], ...]] = {}

    def _prepare(self) -> Callable[[str, int], re.Match[str] | None]:
        """What the engine needs beyond the program, made on its first use (most patterns are
        matched by ``re`` only, and these are a few ``re`` patterns each): the search for
        where a match can start, at a character some first consuming instruction accepts
        (found by ``re``, linear, in C, so most positions cost nothing), and each lazy loop's
        plan."""
        if self._candidate is None:
            for pc, op in enumerate(self._ops):
                if op == LAZY:
                    self._plan_lazy(pc, self._state, self._all_flags)
            firsts = [self._first_member(pc).node for pc in self._first_chars()]
            union = [sre_parse.SubPattern(self._state, [node]) for node in firsts]
            branch = sre_parse.SubPattern(self._state, [(C.BRANCH, (None, union))])
            self._candidate = sre_compile.compile(branch, self._all_flags).search
        return self._candidate

    def _plan_lazy(self, loop: int, state: Any, flags: int) -> None:
        """Where a lazy loop's continuation (at loop + 3) can start: its first characters, and
        whether it can also succeed at the end of the text with none."""
        firsts: list[Any] = []
        end_ok = False
        seen: set[tuple[int, bool]] = set()
        todo = [(loop + 3, False)]
        while todo:
            pc, at_end = todo.pop()
            if (pc, at_end) in seen:
                continue
            seen.add((pc, at_end))
            op, arg = self._ops[pc], self._args[pc]
            if op == CHAR:
                firsts.append(arg.node)
            elif op == RUN:
                firsts.append(arg.member.node)
                todo.append((pc + 1, at_end))
            elif op == MATCH:
                if not at_end:
                    return  # a zero-width success anywhere: every position must be tried
                end_ok = True
            elif op == AT and arg is C.AT_END_STRING:
                todo.append((pc + 1, True))
            elif op in (AT, LOOK, LAZY):
                return  # too clever to skip over safely: try every position
            elif op == SPLIT:
                todo.extend((target, at_end) for target in arg)
            elif op == JMP:
                todo.append((arg, at_end))
            else:  # SAVE, END
                todo.append((pc + 1, at_end))
        lazy = self._args[loop]
        union = [sre_parse.SubPattern(state, [node]) for node in firsts]
        branch = sre_parse.SubPattern(state, [(C.BRANCH, (None, union))] if union else [])
        lazy.search = sre_compile.compile(branch, flags).search if union else never
        lazy.end_ok = end_ok

    def _classes(self) -> list[Callable[[str], bool]]:
        """Every test the program makes of one character."""
        tests: list[Callable[[str], bool]] = []
        for op, arg in zip(self._ops, self._args, strict=True):
            if op == CHAR:
                tests.append(arg)
            elif op == RUN:
                tests.append(arg.member)
            elif op == LAZY:
                tests.append(arg.run.member)
            elif op == LOOK:
                tests.append(arg[2])
            elif op == AT and arg in (C.AT_BOUNDARY, C.AT_NON_BOUNDARY):
                tests.append(word_character)
        return tests

    def _first_member(self, pc: int) -> CharClass:
        arg = self._args[pc]
        if isinstance(arg, Lazy):
            return arg.run.member
        return arg.member if isinstance(arg, Run) else arg

    def _first_chars(self) -> list[int]:
        """The consuming instructions reachable from the start without consuming anything."""
        seen: set[int] = set()
        todo = [0]
        chars = []
        while todo:
            pc = todo.pop()
            if pc in seen:
                continue
            seen.add(pc)
            op = self._ops[pc]
            if op == CHAR:
                chars.append(pc)
            elif op == RUN:
                chars.append(pc)
                todo.append(pc + 1)
            elif op == LAZY:
                chars.append(pc)
                todo.append(pc + 3)
            elif op == SPLIT:
                todo.extend(self._args[pc])
            elif op == JMP:
                todo.append(self._args[pc])
            elif op != MATCH:
                todo.append(pc + 1)
        return sorted(chars)

    def __repr__(self) -> str:
        return f"linear_re.compile({self.pattern!r})"

    # --- the public methods, as re's ----------------------------------------------------------

    def finditer(self, text: str) -> Iterator[LinearMatch]:
        """Every non-overlapping match, left to right, as :meth:`re.Pattern.finditer`."""
        within = budget.active()
        if within is not None:
            found = within.attempt(self._re_slots, text)
            if found is not None:
                return (LinearMatch(text, slots) for slots in found)
        return (LinearMatch(text, slots) for slots in self._matches(text))

    def findall(self, text: str) -> list[Any]:
        """As :meth:`re.Pattern.findall`: whole matches, one group's text, or tuples of groups."""
        within = budget.active()
        if within is not None:
            found = within.attempt(self._re.findall, text)
            if found is not None:
                return found
        return self._findall(text)

    def _findall(self, text: str) -> list[Any]:
        """:meth:`findall` by the engine."""
        out: list[Any] = []
        for slots in self._matches(text):
            match = LinearMatch(text, slots)
            if self.groups == 0:
                out.append(match.group())
            elif self.groups == 1:
                out.append(match.groups("")[0])
            else:
                out.append(match.groups(""))
        return out

    def search(self, text: str) -> LinearMatch | None:
        """The first match, as :meth:`re.Pattern.search`, or None."""
        within = budget.active()
        if within is not None:
            found = within.attempt(self._re_first, text)
            if found is not None:
                return LinearMatch(text, found[0]) if found else None
        return next((LinearMatch(text, slots) for slots in self._matches(text)), None)

    # --- the same calls in re, tried first inside budget.budgeted() -----------------------------

    def _re_slots(self, text: str) -> list[list[int]]:
        """Every match's group slots, as ``re`` finds them."""
        count = self.groups + 1
        return [[x for g in range(count) for x in m.span(g)] for m in self._re.finditer(text)]

    def _re_first(self, text: str) -> list[list[int]]:
        """The first match's group slots as ``re`` finds it (in a list: empty for none)."""
        m = self._re.search(text)
        return [] if m is None else [[x for g in range(self.groups + 1) for x in m.span(g)]]

    # --- matches by the text's shape ------------------------------------------------------------

    def _matches(self, text: str) -> Iterable[list[int]]:
        """The group slots of every match. The engine only ever asks which classes a character
        belongs to (and, for ``$`` and ``\\b``, whether it is a newline or a word character),
        so texts whose characters fall in the same classes position by position match at the
        same places: short texts are matched once per such *shape* (a string of one
        representative per class combination, made by ``str.translate``), then remembered."""
        if len(text) > SHAPE_LONGEST:
            return self._scan(text)
        shape = text.translate(self._shapes)
        found = self._by_shape.get(shape)
        if found is None:
            if len(self._by_shape) >= SHAPES_KEPT:
                self._by_shape.clear()
            found = self._by_shape[shape] = tuple(self._scan(shape))
        return [list(slots) for slots in found]

    # --- the engine -----------------------------------------------------------------------------

    def _scan(self, text: str) -> Iterator[list[int]]:
        cpu_budget.check()  # a text costs at most its task's answer cap (core.cpu_budget)
        width = len(text) + 1
        failed = bytearray(len(self._ops) * width)
        clear = bytes(len(self._ops))
        ends_of: dict[str, list[int]] = {}
        start = 0
        search = self._prepare()
        while (candidate := search(text, start)) is not None:
            start = candidate.start()
            slots, reached = self._attempt(text, start, failed, ends_of)
            if slots is None:
                start += 1
                continue
            yield slots
            # The pairs on the successful path, at or after its end, are not failures.
            end = slots[1]
            for pos in range(end, reached + 1):
                failed[pos::width] = clear
            start = end  # never empty, so the scan moves on

    def _attempt(
        self, text: str, start: int, failed: bytearray, ends_of: dict[str, list[int]]
    ) -> tuple[list[int] | None, int]:
        """The highest-priority match starting at ``start`` as its group slots, and the last
        position the successful path read; (None, 0) when there is none."""
        ops, args = self._run_ops, self._run_args
        n = len(text)
        width = n + 1
        slots = [-1] * (2 * self.groups + 2)
        slots[0] = start
        end = -1
        stack: list[tuple[int, int]] = [(0, start)]
        while stack:
            pc, pos = stack.pop()
            if pc < 0:  # undo a capture (or the match end) on the way back
                if pc == -1:
                    end = pos
                else:
                    slots[-pc - 2] = pos
                continue
            while True:
                key = pc * width + pos
                if failed[key]:
                    break
                failed[key] = 1
                op = ops[pc]
                if op == CHAR:
                    if pos == n:
                        break
                    hit = args[pc].known.get(text[pos])
                    if hit is None:
                        hit = args[pc](text[pos])
                    if not hit:
                        break
                    pc += 1
                    pos += 1
                    continue
                if op == WORD:
                    word, length = args[pc]
                    if not text.startswith(word, pos):
                        break
                    pc += length
                    pos += length
                    continue
                if op == RUN:
                    run = args[pc]
                    if run.unbounded:
                        ends = ends_of.get(run.key)
                        if ends is None:
                            ends = ends_of[run.key] = run_ends(text)
                        last = ends[pos]
                        if last < 0:
                            last = run_end(run, text, ends, pos)
                    else:
                        last = run.span(text, pos).end()
                    if run.unbounded and last > pos:
                        # A loop state already known to fail ends the run, as it ends the loop.
                        base = pc * width
                        known = failed.find(1, base + pos + 1, base + last + 1)
                        if known >= 0:
                            last = known - base - 1
                        failed[base + pos + 1 : base + last + 1] = b"\x01" * (last - pos)
                    pc += 1
                    if run.greedy:
                        stack.extend([(pc, p) for p in range(pos, last)])
                        pos = last
                    elif last > pos:
                        stack.append((pc, last))
                    continue
                if op == LAZY:
                    lazy = args[pc]
                    if lazy.search is not None:
                        found = lazy.search(text, pos)
                        nxt = found.start() if found else (n if lazy.end_ok else -1)
                        if nxt != pos:
                            run = lazy.run
                            ends = ends_of.get(run.key)
                            if ends is None:
                                ends = ends_of[run.key] = run_ends(text)
                            last = ends[pos]
                            if last < 0:
                                last = run_end(run, text, ends, pos)
                            if nxt >= 0:
                                last = min(last, nxt)
                            # The loop states passed over, as the loop would mark them.
                            base = pc * width
                            known = failed.find(1, base + pos + 1, base + last + 1)
                            if known >= 0:
                                last = known - base - 1
                            failed[base + pos + 1 : base + last + 1] = b"\x01" * (last - pos)
                            if last != nxt:
                                break  # the loop ends before its continuation can start
                            pos = nxt
                    stack.append((pc + 1, pos))
                    pc += 3
                    continue
                if op == SPLIT:
                    first, second = args[pc]
                    stack.append((second, pos))
                    pc = first
                elif op == JMP:
                    pc = args[pc]
                elif op == SAVE:
                    slot = args[pc]
                    stack.append((-slot - 2, slots[slot]))
                    slots[slot] = pos
                    pc += 1
                elif op == LOOK:
                    if not _look(text, pos, args[pc]):
                        break
                    pc += 1
                elif op == AT:
                    if not _at(text, pos, args[pc]):
                        break
                    pc += 1
                elif op == END:
                    stack.append((-1, end))
                    end = pos
                    pc += 1
                else:  # MATCH
                    slots[1] = pos if end < 0 else end
                    return slots, pos
        return None, 0


def _look(text: str, pos: int, arg: tuple[int, bool, CharClass]) -> bool:
    direction, negate, member = arg
    at = pos if direction == 1 else pos - 1
    hit = 0 <= at < len(text) and member(text[at])
    return hit != negate


def _is_word(text: str, at: int) -> bool:
    return 0 <= at < len(text) and word_character(text[at])


def _at(text: str, pos: int, code: Any) -> bool:
    n = len(text)
    if code in (C.AT_BEGINNING, C.AT_BEGINNING_STRING):
        return pos == 0
    if code is C.AT_END:
        return pos == n or (pos == n - 1 and text[pos] == "\n")
    if code is C.AT_END_STRING:
        return pos == n
    boundary = _is_word(text, pos - 1) != _is_word(text, pos)
    return boundary if code is C.AT_BOUNDARY else not boundary


def compile(pattern: str, flags: int = 0) -> LinearPattern:
    """A :class:`LinearPattern` for ``pattern`` (raises :class:`UnsupportedPattern`)."""
    return LinearPattern(pattern, flags)


class Sections:
    """The pattern ``head(.*?)(?=term|\\Z)`` under ``re.DOTALL``: each match of ``head`` with the
    text after it, up to the next place ``term`` matches or the end (an answer's events, each a
    header and its caption).

    :meth:`findall` gives exactly what :meth:`re.Pattern.findall` gives for that pattern
    (:attr:`whole`). Inside a :func:`budgeted` block it is found by searching ``head``, then
    ``term`` from the header's end, then ``head`` again from there: ``re`` finds a ``term`` that
    starts with a literal several times faster than it tries the lookahead at every character of
    a caption. The two ways agree because the lazy caption always succeeds (at the end of the
    text at the latest), so ``re`` never goes back into ``head``'s match, the caption ends at the
    first place the lookahead holds, and the next match is the next ``head`` found from there.
    When the budget runs out the engine matches :attr:`whole`, in linear time.
    """

    def __init__(self, head: str, term: str, flags: int = 0) -> None:
        self.whole = LinearPattern(f"{head}(.*?)(?={term}|\\Z)", flags | re.DOTALL)
        # the whole pattern's flags, a leading (?i) of the head's included, for both parts
        self._head = re.compile(head, self.whole._all_flags)
        self._term = re.compile(term, self.whole._all_flags)
        if self._term.groups:  # they would be findall's too
            raise UnsupportedPattern("a terminator with groups")

    def findall(self, text: str) -> list[Any]:
        """As :meth:`re.Pattern.findall` of :attr:`whole`."""
        within = budget.active()
        if within is not None:
            found = within.attempt(self._re_findall, text)
            if found is not None:
                return found
        return self.whole._findall(text)

    def search(self, text: str) -> LinearMatch | None:
        """As :meth:`re.Pattern.search` of :attr:`whole`."""
        return self.whole.search(text)

    def _re_findall(self, text: str) -> list[Any]:
        """:meth:`findall` by ``re``, a header and its terminator at a time."""
        out: list[Any] = []
        pos = 0
        alone = self._head.groups == 0  # then findall gives the captions alone
        while (head := self._head.search(text, pos)) is not None:
            start = head.end()
            term = self._term.search(text, start)
            pos = len(text) if term is None else term.start()
            out.append(text[start:pos] if alone else (*head.groups(""), text[start:pos]))
        return out
