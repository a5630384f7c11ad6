"""The orders in which known inference pipelines write their answers, and how to undo them.

MedGRPO-Code, the official inference code of the MedVidBench paper, runs on N GPUs by
splitting the test file (``utils/split_data_balanced.py``): it groups the questions by
``qa_type``, types in order of first appearance, and sends the i-th question *of each type* to
GPU ``i % N`` (so the first ``count % N`` GPUs get one more question of a type than the others).
Each GPU answers its share grouped by type and writes them in that order, keyed ``"0"``, ``"1"``,
...; ``utils/merge_results_manual.py`` concatenates GPU 0's answers, then GPU 1's, ... and
re-keys them; ``utils/convert_to_submission.py`` keeps that order. One GPU keeps the test file's
order.

A file with several questions that share id, qa_type and question text can only be matched by
order, and that order is no longer the test file's after the split, so we recognise these
layouts by comparing the file's sequence of (id, qa_type[, question]) with the test set's and
answer each record with the test question it was asked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

MAX_GPUS = 16


def by_type(indices: Iterable[int], qa_types: Iterable[str]) -> list[list[int]]:
    """The questions grouped by qa_type, types in order of first appearance.

    Examples:
        >>> by_type([0, 1, 2, 3, 4], ["a", "b", "a", "a", "b"])
        [[0, 2, 3], [1, 4]]
    """
    groups: dict[str, list[int]] = {}
    for index, qa_type in zip(indices, qa_types, strict=True):
        groups.setdefault(qa_type, []).append(index)
    return list(groups.values())


def _share(groups: list[list[int]], n: int, gpu: int) -> Iterator[int]:
    for members in groups:
        yield from members[gpu::n]


def _merged(indices: Sequence[int], groups: list[list[int]], n: int) -> Iterator[int]:
    if n == 1:
        yield from indices
        return
    for gpu in range(n):
        yield from _share(groups, n, gpu)


def gpu_share(indices: Sequence[int], qa_types: Sequence[str], n: int, gpu: int) -> list[int]:
    """The test questions (positions in ``indices``' test set) GPU ``gpu`` of ``n`` answers, in
    the order it writes them.

    Args:
        indices: The test questions the run was given, in test-file order.
        qa_types: ``qa_types[k]`` is the qa_type of question ``indices[k]``.

    Examples:
        >>> gpu_share([0, 1, 2, 3, 4], ["a", "b", "a", "a", "b"], 2, 0)
        [0, 3, 1]
        >>> gpu_share([0, 1, 2, 3, 4], ["a", "b", "a", "a", "b"], 2, 1)
        [2, 4]
    """
    return list(_share(by_type(indices, qa_types), n, gpu))


def merged_order(indices: Sequence[int], qa_types: Sequence[str], n: int) -> list[int]:
    """The test questions in the order of an ``n``-GPU run's merged (and converted) file.

    Examples:
        >>> merged_order([0, 1, 2, 3, 4], ["a", "b", "a", "a", "b"], 2)
        [0, 3, 1, 2, 4]
        >>> merged_order([0, 1, 2], ["a", "b", "a"], 1)
        [0, 1, 2]
    """
    return list(_merged(indices, by_type(indices, qa_types), n))


def describe(n: int) -> str:
    """The one line that says a layout was undone.

    Examples:
        >>> describe(4)
        'restored the order of a 4-GPU MedGRPO-Code run'
    """
    return f"restored the order of a {n}-GPU MedGRPO-Code run"


def find_merged(
    count: int,
    fits: Callable[[Iterable[int]], bool],
    indices: Sequence[int],
    qa_types: Sequence[str],
) -> tuple[int, list[int]] | None:
    """The GPU count of the one MedGRPO-Code layout whose order ``fits`` the file, with that
    order; None when none fits or several fit with different orders (then order decides
    nothing and identity matching reports it).

    Args:
        count: The number of records in the file.
        fits: Whether the file's records are, one for one, the test questions of an order
            (given lazily: a file that is not in it is told apart at its first misfit).
    """
    if count != len(indices):
        return None
    groups = by_type(indices, qa_types)
    found: list[tuple[int, list[int]]] = []
    for n in range(1, min(MAX_GPUS, max(count, 1)) + 1):
        if fits(_merged(indices, groups, n)):
            order = list(_merged(indices, groups, n))
            if all(order != other for _, other in found):
                found.append((n, order))
    return found[0] if len(found) == 1 else None


def find_shards(
    sizes: Sequence[int],
    fits: Callable[[int, list[int]], bool],
    indices: Sequence[int],
    qa_types: Sequence[str],
) -> list[int] | None:
    """Which GPU wrote each of several per-GPU files of one MedGRPO-Code run.

    Args:
        sizes: The number of records in each file.
        fits: ``fits(file, order)``: whether that file's records are the questions of ``order``.

    Returns:
        ``gpus[f]``, the GPU of file ``f``, when every file is one GPU's share and every GPU
        has its file; else None.
    """
    n = len(sizes)
    if not 2 <= n <= MAX_GPUS or sum(sizes) != len(indices):
        return None
    groups = by_type(indices, qa_types)
    shares = [list(_share(groups, n, g)) for g in range(n)]
    gpus: list[int] = []
    for f, size in enumerate(sizes):
        free = [g for g in range(n) if g not in gpus and len(shares[g]) == size]
        gpu = next((g for g in free if fits(f, shares[g])), None)
        if gpu is None:
            return None
        gpus.append(gpu)
    return gpus
