"""The program a :class:`~medvidbench.core.linear_re.LinearPattern` runs, compiled from ``re``'s
own parse tree, and the character tests it is made of (decided by ``re`` itself)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from re import _compiler as sre_compile  # type: ignore[attr-defined]
from re import _constants as C  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

# Program instructions (WORD: several literal characters in a row, see :func:`words`).
CHAR, SPLIT, JMP, SAVE, LOOK, AT, MATCH, END, RUN, LAZY, WORD = range(11)
CONSUMING = {C.LITERAL, C.NOT_LITERAL, C.IN, C.ANY}


class UnsupportedPattern(ValueError):
    """A pattern construct this matcher does not reproduce exactly."""


class CharClass:
    """Membership of one character in one class, decided by ``re`` and remembered (the
    one-class pattern is compiled on the first question: most patterns are only ever matched
    by ``re`` itself, see :mod:`~medvidbench.core.linear_re.budget`)."""

    __slots__ = ("_flags", "_single", "_state", "known", "node")

    def __init__(self, node: tuple[Any, Any], state: Any, flags: int) -> None:
        self.node = node
        self._state = state
        self._flags = flags
        self._single: Callable[[str], re.Match[str] | None] | None = None
        self.known: dict[str, bool] = {}

    def compile_like(self, items: list[Any]) -> re.Pattern[str]:
        """``items`` (parsed nodes) compiled by ``re`` with this class's pattern state and flags."""
        compiled: re.Pattern[str] = sre_compile.compile(self.subpattern(items), self._flags)
        return compiled

    def subpattern(self, items: list[Any]) -> Any:
        """``items`` as a parse tree of this class's pattern."""
        return sre_parse.SubPattern(self._state, items)

    def __call__(self, ch: str) -> bool:
        known = self.known.get(ch)
        if known is None:
            if self._single is None:
                self._single = self.compile_like([self.node]).fullmatch
            known = self.known[ch] = self._single(ch) is not None
        return known


def nullable(items: Any) -> bool:
    """Whether a parsed sequence can match without consuming a character."""
    return all(_node_nullable(op, av) for op, av in items)


def _node_nullable(op: Any, av: Any) -> bool:
    if op in CONSUMING:
        return False
    if op in (C.MAX_REPEAT, C.MIN_REPEAT):
        return av[0] == 0 or nullable(av[2])
    if op is C.SUBPATTERN:
        return nullable(av[3])
    if op is C.BRANCH:
        return any(nullable(alt) for alt in av[1])
    return True  # assertions and anchors consume nothing


class Run:
    """``x*``, ``x?`` or ``x??`` for one character class ``x``, in one instruction.

    ``x*`` stands for the loop ``L: split(L+1, E) / L+1: x / jmp L``: it visits every loop state
    (L, p+i) along the run before any continuation, so they are all marked at once, and a loop
    state already known to fail ends the run there, as it would end the loop. Then the
    continuations (E, p+i) are explored in the loop's order, longest first. An optional ``x``
    has no loop state: (E, p+1) then (E, p) when greedy, the other way round when lazy. The
    run's end is found by ``re`` in one call.
    """

    __slots__ = ("_compiled", "greedy", "key", "member", "unbounded")

    def __init__(self, member: CharClass, greedy: bool, unbounded: bool) -> None:
        self.member = member
        self.greedy = greedy
        self.unbounded = unbounded
        self.key = repr(member.node)
        self._compiled: tuple[Any, Any, Any] | None = None  # (x?, x+, x*), on first use

    def _patterns(self) -> tuple[Any, Any, Any]:
        if self._compiled is None:
            body = self.member.subpattern([self.member.node])
            optional, some, any_ = (
                self.member.compile_like([(C.MAX_REPEAT, (low, high, body))])
                for low, high in ((0, 1), (1, C.MAXREPEAT), (0, C.MAXREPEAT))
            )
            self._compiled = (optional, some, any_)
        return self._compiled

    def span(self, text: str, pos: int) -> re.Match[str]:
        """``x?`` matched at ``pos`` (always a match, if only the empty one)."""
        found: re.Match[str] = self._patterns()[0].match(text, pos)
        return found

    def runs(self, text: str) -> Iterator[re.Match[str]]:
        """Every run of ``x+`` in the text."""
        found: Iterator[re.Match[str]] = self._patterns()[1].finditer(text)
        return found

    def whole(self, text: str, pos: int) -> re.Match[str]:
        """``x*`` matched at ``pos`` (always a match, if only the empty one)."""
        found: re.Match[str] = self._patterns()[2].match(text, pos)
        return found

    def ends(self, text: str) -> list[int]:
        """For every position, where the run of this class starting there ends (itself when
        the character there is not in the class): one pass over the text, in ``re``."""
        ends = list(range(len(text) + 1))
        for run in self.runs(text):
            start, end = run.span()
            ends[start:end] = [end] * (end - start)
        return ends


def words(ops: list[int], args: list[Any], flags: int) -> tuple[list[int], list[Any]]:
    """The program with each row of two or more literal characters (``seconds``) as one
    ``WORD`` instruction, which compares them at once (``str.startswith``) and skips past them.

    Only a row no instruction jumps into (but at its first character) is joined: its inner
    states can then be reached only through the first, which is remembered as failed like any
    other, so the work stays linear. Case-insensitive patterns keep one instruction per
    character (a literal there matches more than itself).
    """
    ops, args = list(ops), list(args)
    if flags & re.IGNORECASE:
        return ops, args
    targets: set[int] = set()
    for pc, (op, arg) in enumerate(zip(ops, args, strict=True)):
        if op == SPLIT:
            targets.update(arg)
        elif op == JMP:
            targets.add(arg)
        elif op == LAZY:
            targets.update((pc + 1, pc + 3))

    def literal(pc: int) -> bool:
        return ops[pc] == CHAR and args[pc].node[0] is C.LITERAL

    pc = 0
    while pc < len(ops):
        end = pc
        while end < len(ops) and literal(end) and (end == pc or end not in targets):
            end += 1
        if end - pc >= 2:
            ops[pc] = WORD
            args[pc] = ("".join(chr(args[i].node[1]) for i in range(pc, end)), end - pc)
        pc = max(end, pc + 1)
    return ops, args


def run_ends(text: str) -> list[int]:
    """A table for :func:`run_end`: every position unknown (-1), then the characters that
    may still be matched one position at a time (the text's length and one)."""
    ends = [-1] * (len(text) + 2)
    ends[-1] = len(text) + 1
    return ends


def run_end(run: Run, text: str, ends: list[int], pos: int) -> int:
    """Where the run of ``run``'s class starting at ``pos`` ends, for a position not known yet
    in ``ends`` (a :func:`run_ends` table, filled here).

    Most texts ask for a few positions only (a number after a known prefix), so a run is
    matched by ``re`` from where it is asked, and every position of it is then known. Once the
    characters matched that way add up to the text's length, every run is found in one pass
    (:meth:`Run.ends`): the work stays linear in the text however it is asked.
    """
    found = run.whole(text, pos)  # x* matches everywhere, if only the empty string
    assert found is not None
    last = found.end()
    budget = ends[-1] - (last - pos + 1)
    if budget < 0:
        ends[:-1] = run.ends(text)
        ends[-1] = 1 << 62
    else:
        ends[pos : last + 1] = [last] * (last + 1 - pos)
        ends[-1] = budget
    return last


class Lazy:
    """``x*?`` for one character class: ``L: split(E, L+1) / L+1: x / jmp L``, E = L+3.

    The loop tries its continuation at every position of the run, shortest first. Where the
    continuation cannot start (its first character is not there, and no zero-width path of it
    can succeed there), the try fails at once; this instruction jumps over such positions to the
    next one where it can (found by ``re``), marking the loop states it passes as the loop would.
    ``search`` is None when the continuation can succeed without a first character other than
    at the end of the text; then every position is tried.
    """

    __slots__ = ("end_ok", "run", "search")

    def __init__(self, run: Run) -> None:
        self.run = run
        self.search: Any = None
        self.end_ok = False


class Compiler:
    """Turns ``re``'s parse tree into a flat program for :class:`LinearPattern`."""

    def __init__(self, state: Any, flags: int) -> None:
        self.state = state
        self.flags = flags
        self.ops: list[int] = []
        self.args: list[Any] = []

    def emit(self, op: int, arg: Any = None) -> int:
        self.ops.append(op)
        self.args.append(arg)
        return len(self.ops) - 1

    def char_class(self, node: tuple[Any, Any]) -> CharClass:
        return CharClass(node, self.state, self.flags)

    def sequence(self, items: Any, *, top: bool = False) -> None:
        items = list(items)
        for i, (op, av) in enumerate(items):
            if top and i == len(items) - 1 and op is C.ASSERT and av[0] == 1:
                # A lookahead that ends the whole pattern: the match ends here, and what follows
                # must match; nothing after it can make the engine come back into it.
                self.emit(END)
                self.sequence(av[1])
                return
            self.node(op, av)

    def node(self, op: Any, av: Any) -> None:
        if op in CONSUMING:
            self.emit(CHAR, self.char_class((op, av)))
        elif op is C.SUBPATTERN:
            group, add_flags, del_flags, body = av
            if add_flags or del_flags:
                raise UnsupportedPattern("inline flags")
            if group is not None:
                self.emit(SAVE, 2 * group)
            self.sequence(body)
            if group is not None:
                self.emit(SAVE, 2 * group + 1)
        elif op is C.BRANCH:
            self.branch(av[1])
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT):
            self.repeat(av, greedy=op is C.MAX_REPEAT)
        elif op in (C.ASSERT, C.ASSERT_NOT):
            self.look(av, negate=op is C.ASSERT_NOT)
        elif op is C.AT:
            if av not in ANCHORS:
                raise UnsupportedPattern(f"anchor {av}")
            self.emit(AT, av)
        else:
            raise UnsupportedPattern(str(op))

    def branch(self, alternatives: Any) -> None:
        jumps = []
        for i, alt in enumerate(alternatives):
            split = None
            if i < len(alternatives) - 1:
                split = self.emit(SPLIT, None)
            start = len(self.ops)
            self.sequence(alt)
            jumps.append(self.emit(JMP, None))
            if split is not None:
                self.args[split] = (start, len(self.ops))
        for j in jumps:
            self.args[j] = len(self.ops)

    def repeat(self, av: Any, *, greedy: bool) -> None:
        low, high, body = av
        if nullable(body):
            raise UnsupportedPattern("a repeated part that can match nothing")
        for _ in range(low):
            self.sequence(body)
        body = list(body)
        single = len(body) == 1 and body[0][0] in CONSUMING
        if single and ((high == C.MAXREPEAT and greedy) or high - low == 1):
            # One character class, greedy or optional: a single instruction (see Run). A lazy
            # loop stays a loop: its states are visited one by one as its continuations fail.
            self.emit(RUN, Run(self.char_class(body[0]), greedy, high == C.MAXREPEAT))
            return
        if single and high == C.MAXREPEAT:
            # A lazy loop over one class: its continuation is only tried where it can start.
            loop = self.emit(LAZY, Lazy(Run(self.char_class(body[0]), True, True)))
            self.sequence(body)
            self.emit(JMP, loop)
            return
        if high == C.MAXREPEAT:
            loop = self.emit(SPLIT, None)
            self.sequence(body)
            self.emit(JMP, loop)
            self.args[loop] = self.choice(loop + 1, len(self.ops), greedy)
            return
        splits = []
        for _ in range(high - low):
            splits.append(self.emit(SPLIT, None))
            self.sequence(body)
        end = len(self.ops)
        for split in splits:
            self.args[split] = self.choice(split + 1, end, greedy)

    @staticmethod
    def choice(body: int, skip: int, greedy: bool) -> tuple[int, int]:
        return (body, skip) if greedy else (skip, body)

    def look(self, av: Any, *, negate: bool) -> None:
        direction, body = av
        body = list(body)
        if len(body) != 1 or body[0][0] not in CONSUMING:
            raise UnsupportedPattern("a lookaround other than one character or a final lookahead")
        self.emit(LOOK, (direction, negate, self.char_class(body[0])))


ANCHORS = {
    C.AT_BEGINNING,
    C.AT_BEGINNING_STRING,
    C.AT_END,
    C.AT_END_STRING,
    C.AT_BOUNDARY,
    C.AT_NON_BOUNDARY,
}


SHAPE_LONGEST = 512  # longer texts are matched as they are
SHAPES_KEPT = 4096  # shapes remembered per pattern (then forgotten all at once)


class Shapes(dict[int, str]):
    """A ``str.translate`` table: each character to the first character seen that every test of
    the program answers the same way (code points in, one-character strings out)."""

    def __init__(self, tests: list[Callable[[str], bool]], newline: bool) -> None:
        super().__init__()
        self._tests = tests
        self._newline = newline
        self._first: dict[tuple[bool, ...], str] = {}

    def __missing__(self, code: int) -> str:
        ch = chr(code)
        answers = tuple(test(ch) for test in self._tests)
        if self._newline:
            answers += (ch == "\n",)
        rep = self[code] = self._first.setdefault(answers, ch)
        return rep


def word_character(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def never(text: str, pos: int) -> None:
    return None
