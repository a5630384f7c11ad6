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

__all__ = ["LinearMatch", "LinearPattern", "UnsupportedPattern", "compile"]

# Program instructions.
_CHAR, _SPLIT, _JMP, _SAVE, _LOOK, _AT, _MATCH, _END, _RUN, _LAZY = range(10)
_CONSUMING = {C.LITERAL, C.NOT_LITERAL, C.IN, C.ANY}


class UnsupportedPattern(ValueError):
    """A pattern construct this matcher does not reproduce exactly."""


class _CharClass:
    """Membership of one character in one class, decided by ``re`` and remembered."""

    __slots__ = ("_flags", "_single", "_state", "known", "node")

    def __init__(self, node: tuple[Any, Any], state: Any, flags: int) -> None:
        self.node = node
        self._state = state
        self._flags = flags
        self._single = self.compile_like([node]).fullmatch
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
            known = self.known[ch] = self._single(ch) is not None
        return known


def _nullable(items: Any) -> bool:
    """Whether a parsed sequence can match without consuming a character."""
    return all(_node_nullable(op, av) for op, av in items)


def _node_nullable(op: Any, av: Any) -> bool:
    if op in _CONSUMING:
        return False
    if op in (C.MAX_REPEAT, C.MIN_REPEAT):
        return av[0] == 0 or _nullable(av[2])
    if op is C.SUBPATTERN:
        return _nullable(av[3])
    if op is C.BRANCH:
        return any(_nullable(alt) for alt in av[1])
    return True  # assertions and anchors consume nothing


class _Run:
    """``x*``, ``x?`` or ``x??`` for one character class ``x``, in one instruction.

    ``x*`` stands for the loop ``L: split(L+1, E) / L+1: x / jmp L``: it visits every loop state
    (L, p+i) along the run before any continuation, so they are all marked at once, and a loop
    state already known to fail ends the run there, as it would end the loop. Then the
    continuations (E, p+i) are explored in the loop's order, longest first. An optional ``x``
    has no loop state: (E, p+1) then (E, p) when greedy, the other way round when lazy. The
    run's end is found by ``re`` in one call.
    """

    __slots__ = ("greedy", "key", "member", "runs", "span", "unbounded")

    def __init__(self, member: _CharClass, greedy: bool, unbounded: bool) -> None:
        self.member = member
        self.greedy = greedy
        self.unbounded = unbounded
        body = member.subpattern([member.node])
        self.span = member.compile_like([(C.MAX_REPEAT, (0, 1, body))]).match
        self.runs = member.compile_like([(C.MAX_REPEAT, (1, C.MAXREPEAT, body))]).finditer
        self.key = repr(member.node)

    def ends(self, text: str) -> list[int]:
        """For every position, where the run of this class starting there ends (itself when
        the character there is not in the class): one pass over the text, in ``re``."""
        ends = list(range(len(text) + 1))
        for run in self.runs(text):
            start, end = run.span()
            ends[start:end] = [end] * (end - start)
        return ends


class _Lazy:
    """``x*?`` for one character class: ``L: split(E, L+1) / L+1: x / jmp L``, E = L+3.

    The loop tries its continuation at every position of the run, shortest first. Where the
    continuation cannot start (its first character is not there, and no zero-width path of it
    can succeed there), the try fails at once; this instruction jumps over such positions to the
    next one where it can (found by ``re``), marking the loop states it passes as the loop would.
    ``search`` is None when the continuation can succeed without a first character other than
    at the end of the text; then every position is tried.
    """

    __slots__ = ("end_ok", "run", "search")

    def __init__(self, run: _Run) -> None:
        self.run = run
        self.search: Any = None
        self.end_ok = False


class _Compiler:
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

    def char_class(self, node: tuple[Any, Any]) -> _CharClass:
        return _CharClass(node, self.state, self.flags)

    def sequence(self, items: Any, *, top: bool = False) -> None:
        items = list(items)
        for i, (op, av) in enumerate(items):
            if top and i == len(items) - 1 and op is C.ASSERT and av[0] == 1:
                # A lookahead that ends the whole pattern: the match ends here, and what follows
                # must match; nothing after it can make the engine come back into it.
                self.emit(_END)
                self.sequence(av[1])
                return
            self.node(op, av)

    def node(self, op: Any, av: Any) -> None:
        if op in _CONSUMING:
            self.emit(_CHAR, self.char_class((op, av)))
        elif op is C.SUBPATTERN:
            group, add_flags, del_flags, body = av
            if add_flags or del_flags:
                raise UnsupportedPattern("inline flags")
            if group is not None:
                self.emit(_SAVE, 2 * group)
            self.sequence(body)
            if group is not None:
                self.emit(_SAVE, 2 * group + 1)
        elif op is C.BRANCH:
            self.branch(av[1])
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT):
            self.repeat(av, greedy=op is C.MAX_REPEAT)
        elif op in (C.ASSERT, C.ASSERT_NOT):
            self.look(av, negate=op is C.ASSERT_NOT)
        elif op is C.AT:
            if av not in _ANCHORS:
                raise UnsupportedPattern(f"anchor {av}")
            self.emit(_AT, av)
        else:
            raise UnsupportedPattern(str(op))

    def branch(self, alternatives: Any) -> None:
        jumps = []
        for i, alt in enumerate(alternatives):
            split = None
            if i < len(alternatives) - 1:
                split = self.emit(_SPLIT, None)
            start = len(self.ops)
            self.sequence(alt)
            jumps.append(self.emit(_JMP, None))
            if split is not None:
                self.args[split] = (start, len(self.ops))
        for j in jumps:
            self.args[j] = len(self.ops)

    def repeat(self, av: Any, *, greedy: bool) -> None:
        low, high, body = av
        if _nullable(body):
            raise UnsupportedPattern("a repeated part that can match nothing")
        for _ in range(low):
            self.sequence(body)
        body = list(body)
        single = len(body) == 1 and body[0][0] in _CONSUMING
        if single and ((high == C.MAXREPEAT and greedy) or high - low == 1):
            # One character class, greedy or optional: a single instruction (see _Run). A lazy
            # loop stays a loop: its states are visited one by one as its continuations fail.
            self.emit(_RUN, _Run(self.char_class(body[0]), greedy, high == C.MAXREPEAT))
            return
        if single and high == C.MAXREPEAT:
            # A lazy loop over one class: its continuation is only tried where it can start.
            loop = self.emit(_LAZY, _Lazy(_Run(self.char_class(body[0]), True, True)))
            self.sequence(body)
            self.emit(_JMP, loop)
            return
        if high == C.MAXREPEAT:
            loop = self.emit(_SPLIT, None)
            self.sequence(body)
            self.emit(_JMP, loop)
            self.args[loop] = self.choice(loop + 1, len(self.ops), greedy)
            return
        splits = []
        for _ in range(high - low):
            splits.append(self.emit(_SPLIT, None))
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
        if len(body) != 1 or body[0][0] not in _CONSUMING:
            raise UnsupportedPattern("a lookaround other than one character or a final lookahead")
        self.emit(_LOOK, (direction, negate, self.char_class(body[0])))


_ANCHORS = {
    C.AT_BEGINNING,
    C.AT_BEGINNING_STRING,
    C.AT_END,
    C.AT_END_STRING,
    C.AT_BOUNDARY,
    C.AT_NON_BOUNDARY,
}


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
        if _nullable(parsed):
            raise UnsupportedPattern("a pattern that can match the empty string")
        self.groups = parsed.state.groups - 1
        compiler = _Compiler(parsed.state, flags | parsed.state.flags)
        compiler.sequence(parsed, top=True)
        compiler.emit(_MATCH)
        self._ops = compiler.ops
        self._args = compiler.args
        for pc, op in enumerate(self._ops):
            if op == _LAZY:
                self._plan_lazy(pc, parsed.state, flags | parsed.state.flags)
        # Where a match can start: at a character some first consuming instruction accepts.
        # Found by re itself (one character class: linear, in C), so most positions cost nothing.
        firsts = [self._first_member(pc).node for pc in self._first_chars()]
        union = [sre_parse.SubPattern(parsed.state, [node]) for node in firsts]
        branch = sre_parse.SubPattern(parsed.state, [(C.BRANCH, (None, union))])
        self._candidate = sre_compile.compile(branch, flags | parsed.state.flags).search
        self._shapes = _Shapes(self._classes(), newline=C.AT_END in self._args)
        self._by_shape: dict[str, tuple[list[int], ...]] = {}

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
            if op == _CHAR:
                firsts.append(arg.node)
            elif op == _RUN:
                firsts.append(arg.member.node)
                todo.append((pc + 1, at_end))
            elif op == _MATCH:
                if not at_end:
                    return  # a zero-width success anywhere: every position must be tried
                end_ok = True
            elif op == _AT and arg is C.AT_END_STRING:
                todo.append((pc + 1, True))
            elif op in (_AT, _LOOK, _LAZY):
                return  # too clever to skip over safely: try every position
            elif op == _SPLIT:
                todo.extend((target, at_end) for target in arg)
            elif op == _JMP:
                todo.append((arg, at_end))
            else:  # SAVE, END
                todo.append((pc + 1, at_end))
        lazy = self._args[loop]
        union = [sre_parse.SubPattern(state, [node]) for node in firsts]
        branch = sre_parse.SubPattern(state, [(C.BRANCH, (None, union))] if union else [])
        lazy.search = sre_compile.compile(branch, flags).search if union else _never
        lazy.end_ok = end_ok

    def _classes(self) -> list[Callable[[str], bool]]:
        """Every test the program makes of one character."""
        tests: list[Callable[[str], bool]] = []
        for op, arg in zip(self._ops, self._args, strict=True):
            if op == _CHAR:
                tests.append(arg)
            elif op == _RUN:
                tests.append(arg.member)
            elif op == _LAZY:
                tests.append(arg.run.member)
            elif op == _LOOK:
                tests.append(arg[2])
            elif op == _AT and arg in (C.AT_BOUNDARY, C.AT_NON_BOUNDARY):
                tests.append(_word_character)
        return tests

    def _first_member(self, pc: int) -> _CharClass:
        arg = self._args[pc]
        if isinstance(arg, _Lazy):
            return arg.run.member
        return arg.member if isinstance(arg, _Run) else arg

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
            if op == _CHAR:
                chars.append(pc)
            elif op == _RUN:
                chars.append(pc)
                todo.append(pc + 1)
            elif op == _LAZY:
                chars.append(pc)
                todo.append(pc + 3)
            elif op == _SPLIT:
                todo.extend(self._args[pc])
            elif op == _JMP:
                todo.append(self._args[pc])
            elif op != _MATCH:
                todo.append(pc + 1)
        return sorted(chars)

    def __repr__(self) -> str:
        return f"linear_re.compile({self.pattern!r})"

    # --- the public methods, as re's ----------------------------------------------------------

    def finditer(self, text: str) -> Iterator[LinearMatch]:
        """Every non-overlapping match, left to right, as :meth:`re.Pattern.finditer`."""
        return (LinearMatch(text, slots) for slots in self._matches(text))

    def findall(self, text: str) -> list[Any]:
        """As :meth:`re.Pattern.findall`: whole matches, one group's text, or tuples of groups."""
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
        return next(self.finditer(text), None)

    # --- matches by the text's shape ------------------------------------------------------------

    def _matches(self, text: str) -> Iterable[list[int]]:
        """The group slots of every match. The engine only ever asks which classes a character
        belongs to (and, for ``$`` and ``\\b``, whether it is a newline or a word character),
        so texts whose characters fall in the same classes position by position match at the
        same places: short texts are matched once per such *shape* (a string of one
        representative per class combination, made by ``str.translate``), then remembered."""
        if len(text) > _SHAPE_LONGEST:
            return self._scan(text)
        shape = text.translate(self._shapes)
        found = self._by_shape.get(shape)
        if found is None:
            if len(self._by_shape) >= _SHAPES_KEPT:
                self._by_shape.clear()
            found = self._by_shape[shape] = tuple(self._scan(shape))
        return [list(slots) for slots in found]

    # --- the engine -----------------------------------------------------------------------------

    def _scan(self, text: str) -> Iterator[list[int]]:
        width = len(text) + 1
        failed = bytearray(len(self._ops) * width)
        clear = bytes(len(self._ops))
        run_ends: dict[str, list[int]] = {}
        start = 0
        while (candidate := self._candidate(text, start)) is not None:
            start = candidate.start()
            slots, reached = self._attempt(text, start, failed, run_ends)
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
        self, text: str, start: int, failed: bytearray, run_ends: dict[str, list[int]]
    ) -> tuple[list[int] | None, int]:
        """The highest-priority match starting at ``start`` as its group slots, and the last
        position the successful path read; (None, 0) when there is none."""
        ops, args = self._ops, self._args
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
                if op == _CHAR:
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
                if op == _RUN:
                    run = args[pc]
                    if run.unbounded:
                        ends = run_ends.get(run.key)
                        if ends is None:
                            ends = run_ends[run.key] = run.ends(text)
                        last = ends[pos]
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
                if op == _LAZY:
                    lazy = args[pc]
                    if lazy.search is not None:
                        found = lazy.search(text, pos)
                        nxt = found.start() if found else (n if lazy.end_ok else -1)
                        if nxt != pos:
                            run = lazy.run
                            ends = run_ends.get(run.key)
                            if ends is None:
                                ends = run_ends[run.key] = run.ends(text)
                            last = ends[pos] if nxt < 0 else min(ends[pos], nxt)
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
                if op == _SPLIT:
                    first, second = args[pc]
                    stack.append((second, pos))
                    pc = first
                elif op == _JMP:
                    pc = args[pc]
                elif op == _SAVE:
                    slot = args[pc]
                    stack.append((-slot - 2, slots[slot]))
                    slots[slot] = pos
                    pc += 1
                elif op == _LOOK:
                    if not _look(text, pos, args[pc]):
                        break
                    pc += 1
                elif op == _AT:
                    if not _at(text, pos, args[pc]):
                        break
                    pc += 1
                elif op == _END:
                    stack.append((-1, end))
                    end = pos
                    pc += 1
                else:  # _MATCH
                    slots[1] = pos if end < 0 else end
                    return slots, pos
        return None, 0


_SHAPE_LONGEST = 512  # longer texts are matched as they are
_SHAPES_KEPT = 4096  # shapes remembered per pattern (then forgotten all at once)


class _Shapes(dict[int, str]):
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


def _word_character(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _never(text: str, pos: int) -> None:
    return None


def _look(text: str, pos: int, arg: tuple[int, bool, _CharClass]) -> bool:
    direction, negate, member = arg
    at = pos if direction == 1 else pos - 1
    hit = 0 <= at < len(text) and member(text[at])
    return hit != negate


def _is_word(text: str, at: int) -> bool:
    return 0 <= at < len(text) and _word_character(text[at])


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
