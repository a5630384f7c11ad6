"""The test-set half of the benchmark kernel: what the evaluator reads of a test item and a
test set, and how a benchmark reads its test set and matches a prediction file to it
(:class:`TestSetFormat`, most simply two functions: :class:`TestSetFunctions`).
:mod:`medvidbench.core.benchmark` re-exports every name, and a definition imports them from
there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeAlias, cast

from medvidbench.core.errors import UsageError

if TYPE_CHECKING:
    # TypeVar defaults (PEP 696): a bare ``Benchmark`` or ``TestSet`` means "of any item"
    from pathlib import Path

    from typing_extensions import TypeVar

    from medvidbench.core.submission import MatchedSubmission
else:
    from typing import TypeVar as _TypeVar

    def TypeVar(name: str, *args: Any, default: Any = None, **kwargs: Any) -> Any:
        """:class:`typing.TypeVar` without the ``default`` Python 3.11 lacks (it matters only
        to the type checker), so that importing the kernel does not import typing_extensions."""
        return _TypeVar(name, *args, **kwargs)


Source: TypeAlias = "str | Path | bytes | Sequence[str | Path]"
"""What a prediction reader accepts: a file, its bytes, or several files (or a folder) read
as one submission (the per-GPU files of one run, say)."""


class TestItem(Protocol):
    """What the evaluator reads of a benchmark's test item (its scorers read more)."""

    @property
    def index(self) -> int: ...
    @property
    def sample_id(self) -> str: ...
    @property
    def task(self) -> str: ...
    @property
    def dataset(self) -> str: ...


ItemT = TypeVar("ItemT", bound=TestItem, default=Any)
ItemT_co = TypeVar("ItemT_co", bound=TestItem, covariant=True, default=Any)


class TestSet(Protocol[ItemT_co]):
    """A loaded, validated test set: items in file order, ``samples[i].index == i``."""

    @property
    def samples(self) -> Sequence[ItemT_co]: ...
    @property
    def sha256(self) -> str: ...
    def __len__(self) -> int: ...


class TestSetFormat(Protocol[ItemT]):
    """The kernel's reader and matcher: how a benchmark reads its test set and matches a
    prediction file to it."""

    def load_ground_truth(
        self, source: str | Path | bytes, max_bytes: int | None = None
    ) -> TestSet[ItemT]:
        """Read and validate a test set.

        Raises:
            InvalidGroundTruthError: listing every problem found.
        """
        ...

    def validate_submission(
        self,
        source: Source,
        test_set: TestSet[ItemT],
        max_bytes: int | None = None,
        name: str = "",
    ) -> MatchedSubmission:
        """Validate a prediction file (or several files, or a folder, where the format reads
        them as one submission) and match it to the test items; never raises on the file's
        content (the problems are in the returned report)."""
        ...

    def load_questions(
        self, source: str | Path | bytes, max_bytes: int | None = None
    ) -> TestSet[ItemT]:
        """Read the public questions file (the test set without answers): a test set that
        validates a submission and never scores one.

        Raises:
            InvalidGroundTruthError: listing every problem found.
            UsageError: when the benchmark has no questions file.
        """
        ...


SetT = TypeVar("SetT", bound="TestSet[Any]", default=Any)
SetT_co = TypeVar("SetT_co", bound="TestSet[Any]", covariant=True, default=Any)
SetT_contra = TypeVar("SetT_contra", contravariant=True, default=Any)


class ReadTestSet(Protocol[SetT_co]):
    """``(source, max_bytes=its default) -> test set``: how a benchmark reads its test set (or
    its questions file), the bytes limit given positionally; ``SetT_co`` is the benchmark's own
    test-set class (a :class:`TestSet` of its items)."""

    def __call__(self, source: str | Path | bytes, max_bytes: int = ..., /) -> SetT_co:
        """Read and validate; raise InvalidGroundTruthError listing every problem."""
        ...


class MatchFile(Protocol[SetT_contra]):
    """``(source, test_set, max_bytes=its default, name="") -> MatchedSubmission``: how a
    benchmark matches a prediction file (or several files, or a folder: :data:`Source`) to its
    test set, ``test_set`` being what its own loader returned. A benchmark that reads one file
    refuses several with :func:`medvidbench.core.formats.one_source`."""

    def __call__(
        self, source: Source, test_set: SetT_contra, max_bytes: int = ..., /, name: str = ...
    ) -> MatchedSubmission:
        """Decode and match; never raise on the file's content (problems go in the report)."""
        ...


@dataclass(frozen=True, slots=True)
class TestSetFunctions(Generic[SetT]):
    """A :class:`TestSetFormat` made of two functions, ``load(source, max_bytes)`` and
    ``match(source, test_set, max_bytes, name)`` (a function that imports the real one when
    called keeps importing the definition cheap). ``SetT`` is the benchmark's own test-set
    class, taken from what ``load`` returns; ``match`` must accept exactly that (mypy checks
    the pair: a function with its arguments swapped, or without ``name``, is refused)."""

    load: ReadTestSet[SetT]
    match: MatchFile[SetT]
    questions: ReadTestSet[SetT] | None = None
    """``questions(source, max_bytes)``: the public questions file, where the benchmark has one."""
    kept_as: Callable[[], type[SetT]] | None = None
    """``() -> the test-set class``, when the command line may keep a prepared copy of a
    test-set file for its next run (:mod:`medvidbench.core.testset_cache`): a dataclass or
    msgspec Struct of plain data that msgspec encodes and decodes back equal. None: the file is
    read every time."""

    def load_ground_truth(self, source: str | Path | bytes, max_bytes: int | None = None) -> SetT:
        return self.load(source) if max_bytes is None else self.load(source, max_bytes)

    def validate_submission(
        self,
        source: Source,
        test_set: TestSet[Any],
        max_bytes: int | None = None,
        name: str = "",
    ) -> MatchedSubmission:
        # the kernel only ever passes a test set this benchmark's own loader made
        own = cast("SetT", test_set)
        if max_bytes is None:
            return self.match(source, own, name=name)
        return self.match(source, own, max_bytes, name=name)

    def load_questions(self, source: str | Path | bytes, max_bytes: int | None = None) -> SetT:
        if self.questions is None:
            raise UsageError("this benchmark has no public questions file to validate against")
        return self.questions(source) if max_bytes is None else self.questions(source, max_bytes)
