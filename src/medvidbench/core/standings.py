"""Where a model stands on a board, and how sure that is: ranks from paired bootstrap replicates.

Every entry of a board is ranked again by the published rule's first key (each ranked metric's
competition rank on 3 decimals, averaged) in each of the board's shared bootstrap replicates, so
two entries' positions are paired replicate by replicate. From those positions, as Chatbot Arena
defines ranks:

- an entry is **significantly better** than another when it is ahead of it in at least 97.5 % of
  the replicates (a paired two-sided test at 5 %);
- its **rank** is 1 + the number of entries significantly better than it: entries that cannot be
  told apart share a rank (and a medal), identical ones always;
- its **rank interval** runs from that rank to the number of entries minus those it is
  significantly better than: every place it could hold, so the rank is always inside it;
- **groups** follow the board's order: a row joins the group of the row heading it unless that
  row is significantly better than it, a paired test against the head, never a chain of
  overlapping intervals.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from medvidbench.core.benchmark import Metric
from medvidbench.core.intervals import CONFIDENCE

# Ranks use the first this many of an entry's stored replicates. The draws are independent and
# shared by every entry, so a prefix is a smaller bootstrap of the same kind, still paired; the
# metric intervals keep all of them. A pair is decided at 195 of 200 rather than 975 of 1,000:
# on boards like the real ones an end of a rank interval moves by at most three places against
# 1,000 and four in five do not move (tests/test_statistics.py checks it), while a board ranks
# five times faster (docs/performance.md).
RANK_REPLICATES = 200


def _min_ranks(values: np.ndarray) -> np.ndarray:
    """Row by row, competition ("min") ranks of ascending values: ties share the smaller rank
    (1, 1, 3). Vectorised: one sort of the whole matrix."""
    rows, cols = values.shape
    order = np.argsort(values, axis=1, kind="stable")
    ordered = np.take_along_axis(values, order, axis=1)
    new = np.ones((rows, cols), dtype=bool)
    new[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    first = np.maximum.accumulate(np.where(new, np.arange(cols), 0), axis=1)
    ranks = np.empty((rows, cols), dtype=np.float64)
    np.put_along_axis(ranks, order, first + 1.0, axis=1)
    return ranks


# A missing value's code: after every present one (see :func:`rank_codes`).
MISSING_CODE = np.iinfo(np.int64).max
_INFINITE_CODE = 2**62  # beyond rint(v * 1000) of any finite metric value


def rank_codes(values: np.ndarray, metrics: Sequence[Metric]) -> np.ndarray:
    """Integer codes of ``values`` (..., metrics) that order and tie as the board ranks them,
    best first: per ranked metric, ``rint(v * 1000)``, negated where higher is better, and
    :data:`MISSING_CODE` for a missing value. Returns (..., ranked metrics).

    ``np.round(v, 3)`` is ``rint(v * 1000) / 1000``, so the codes compare and tie exactly as
    the rounded values do.

    Examples:
        >>> from medvidbench.core.benchmark import Metric
        >>> rank_codes(np.array([0.5004, np.nan]), [Metric("a", "A", "t", "a")]).tolist()
        [-500, 9223372036854775807]
    """
    ranked = [j for j, m in enumerate(metrics) if m.ranked]
    sign = np.array([-1.0 if metrics[j].higher_is_better else 1.0 for j in ranked])
    v = values[..., ranked] * sign
    missing = np.isnan(v)
    scaled = np.rint(np.where(missing, 0.0, v) * 1000.0)
    codes = np.clip(scaled, -_INFINITE_CODE, _INFINITE_CODE).astype(np.int64)
    codes[missing] = MISSING_CODE
    return codes


def _replicate_ranks(codes: np.ndarray) -> np.ndarray:
    """Competition ("min") ranks of entries x replicates codes within each replicate (column):
    1 + the number of smaller codes; :data:`MISSING_CODE` ranks after every present code.

    By counting when the codes span little against the number of entries (a metric rounded to
    3 decimals spans about a thousand codes): one histogram of every replicate at once, each
    offset by its replicate, and one running sum. Otherwise by one sort of each replicate.
    """
    entries, reps = codes.shape
    low = int(codes.min(initial=0))
    high = int(np.max(codes, where=codes != MISSING_CODE, initial=low))
    span = high - low + 2  # the last bin holds the missing values
    if span > 2 * entries:
        return _sorted_ranks(np.minimum(codes, high + 1) - low, span)
    bins = np.minimum(codes, high + 1)
    bins += np.arange(reps, dtype=np.int64) * span - low
    smaller = np.bincount(bins.ravel(), minlength=reps * span)
    hist = smaller.copy()
    np.cumsum(smaller, out=smaller)
    smaller -= hist  # codes before each bin, every earlier replicate's too
    ranks: np.ndarray = smaller[bins]
    ranks -= np.arange(reps, dtype=np.int64) * entries - 1  # each earlier replicate's entries
    return ranks


def _sorted_ranks(codes: np.ndarray, span: int) -> np.ndarray:
    """:func:`_replicate_ranks` of codes in [0, ``span``) by sorting each replicate: the keys
    ``code * entries + entry`` sort as the codes and carry the entry along (a sort of integers
    is far quicker than an argsort)."""
    entries, reps = codes.shape
    if span * entries >= 2**62:
        return _min_ranks(codes.T).T.astype(np.int64)
    keys = codes.T * entries + np.arange(entries, dtype=np.int64)
    keys.sort(axis=1)
    ordered, entry = np.divmod(keys, entries)
    new = np.ones(keys.shape, dtype=bool)
    new[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    first = np.maximum.accumulate(np.where(new, np.arange(entries), 0), axis=1)
    ranks = np.empty((reps, entries), dtype=np.int64)
    np.put_along_axis(ranks, entry, first + 1, axis=1)
    return ranks.T


def positions_of(values: np.ndarray, metrics: Sequence[Metric]) -> np.ndarray:
    """Each entry's position in every replicate: ``values`` is entries x replicates x metrics
    (a reported row repeats its fixed values). Returns entries x replicates."""
    codes = rank_codes(values, metrics)  # entries x replicates x ranked metrics
    return positions_of_codes(np.ascontiguousarray(codes.transpose(2, 0, 1)))


def positions_of_codes(codes: np.ndarray) -> np.ndarray:
    """:func:`positions_of` from :func:`rank_codes` laid out ranked metrics x entries x
    replicates (what a board keeps of each entry, so that ranking again rounds nothing): the
    published rule's first key in each replicate, 1 + the number of entries with a strictly
    better average rank."""
    # the averages share one denominator, so their order and ties are those of the sums
    return _replicate_ranks(rank_sums(codes))


def rank_sums(codes: np.ndarray) -> np.ndarray:
    """Entries x replicates: each entry's sum over the ranked metrics of its competition rank in
    the replicate (1 + the number of entries with a smaller code), from codes laid out ranked
    metrics x entries x replicates. In each replicate they order and tie as the positions do,
    so :meth:`Standings.of` takes them in place of positions."""
    _, entries, reps = codes.shape
    total = np.zeros((entries, reps), dtype=np.int64)
    for by_metric in codes:
        total += _replicate_ranks(by_metric)
    return total


def compact_codes(codes: np.ndarray) -> np.ndarray | None:
    """``codes`` as 16-bit integers that order and tie alike (:data:`MISSING_CODE` the largest),
    a quarter of the memory to keep and compare; None when a present code does not fit (a
    value beyond +-32.7 on 3 decimals)."""
    missing = codes == MISSING_CODE
    present = np.where(missing, 0, codes)
    if present.size and (present.min() < -(2**15) or present.max() >= 2**15 - 1):
        return None
    out = present.astype(np.int16)
    out[missing] = 2**15 - 1
    return out


def rank_sums_changed(
    sums: np.ndarray, codes: np.ndarray, gone: Sequence[np.ndarray], added: Sequence[int]
) -> np.ndarray:
    """:func:`rank_sums` of ``codes`` (metrics x entries x replicates) from ``sums``, those of
    the same board before ``gone`` left it (their codes, metrics x replicates each) and the
    entries ``added`` (indices into ``codes``) joined it; the rows of ``sums`` at ``added`` are
    ignored. Exact: an entry leaving lowers every rank behind it by one, metric by metric and
    replicate by replicate, one joining raises them by one; a joining entry's own ranks are
    counted. Each change costs one comparison of its codes with the board's."""
    out = np.array(sums, dtype=np.int64)
    for leaving in gone:
        out -= (leaving[:, None, :] < codes).sum(axis=0, dtype=np.int64)
    for a in added:
        out += (codes[:, a][:, None, :] < codes).sum(axis=0, dtype=np.int64)
    for a in added:  # an entry's own code is not smaller than itself
        out[a] = codes.shape[0] + (codes < codes[:, a][:, None, :]).sum(axis=(0, 1))
    return out


@dataclass(slots=True)
class Standings:
    """Ranks, rank intervals and groups of a board's entries (see the module's docstring)."""

    ranks: np.ndarray  # per entry: 1 + the number of entries significantly better
    bounds: np.ndarray  # entries x 2: the rank, and the last place the entry could hold
    groups: list[int]  # along the order given, the group of each row

    @classmethod
    def of(
        cls, positions: np.ndarray, order: Sequence[int], confidence: float = CONFIDENCE
    ) -> Standings:
        """From entries x replicates positions (or anything ordering and tying as they do in
        each replicate, lower first: :func:`rank_sums`) and the board's order (entry
        indices)."""
        ahead = significance(positions, _needed(positions.shape[1], confidence))
        entries = positions.shape[0]
        ranks = 1 + ahead.sum(axis=0).astype(np.int64)
        bounds = np.stack([ranks, entries - ahead.sum(axis=1).astype(np.int64)], axis=1)
        return cls(ranks, bounds, _groups(ahead, order))


def _needed(reps: int, confidence: float) -> int:
    """Replicates an entry must be ahead in to be significantly better: 97.5 % of them."""
    return int(np.ceil((1 - (1 - confidence) / 2) * reps - 1e-9))


def significance(positions: np.ndarray, need: int) -> np.ndarray:
    """``[j, i]``: whether entry j is significantly better than entry i (ahead of it in at least
    ``need`` replicates).

    Exact. Entries whose ranges of positions do not meet are decided by their ranges (one is
    ahead in every replicate); only pairs whose ranges overlap are counted replicate by
    replicate. In the order of the entries' mean positions those pairs lie in a band beside
    the diagonal, so a block of entries is compared with one contiguous slice of the entries
    after it, not pair by pair."""
    entries, reps = positions.shape
    order = np.argsort(positions.mean(axis=1), kind="stable")  # any order is exact; this is quick
    small = entries == 0 or (positions.min() > -(2**14) and positions.max() < 2**14)
    pos = np.ascontiguousarray(positions[order].astype(np.int16 if small else np.int64))
    low, high = pos.min(axis=1), pos.max(axis=1)
    ahead = high[:, None] < low[None, :]  # ahead in every replicate
    # the last entry after a whose range may still meet a's: beyond it every range starts later
    starts = np.minimum.accumulate(low[::-1])[::-1]
    last = np.searchsorted(starts, high, side="right") - 1
    count = np.uint8 if reps < 256 else np.int64  # summed in bytes while a count fits one
    for top in range(0, entries - 1, _BLOCK):
        rows = np.arange(top, min(top + _BLOCK, entries - 1))
        end = int(last[rows].max()) + 1
        if end <= top + 1:
            continue
        cols = np.arange(top + 1, end)
        d: np.ndarray = pos[top + 1 : end][None, :, :] - pos[rows][:, None, :]
        behind = (d > 0).view(np.uint8).sum(axis=2, dtype=count) >= need  # [row, col]
        before = (d < 0).view(np.uint8).sum(axis=2, dtype=count) >= need
        mine = (cols[None, :] > rows[:, None]) & (cols[None, :] <= last[rows][:, None])
        r, c = np.nonzero(mine)
        ahead[rows[r], cols[c]] = behind[r, c]
        ahead[cols[c], rows[r]] = before[r, c]
    back = np.empty(entries, dtype=np.int64)
    back[order] = np.arange(entries)
    out: np.ndarray = ahead[back][:, back]
    return out


# Entries compared with the band after them at once (a block's differences stay small).
_BLOCK = 16


def _groups(ahead: np.ndarray, order: Sequence[int]) -> list[int]:
    """Along ``order``: a row joins the group of the row heading it unless the head is
    significantly better than it (then it heads a new group)."""
    groups: list[int] = []
    head = None
    for i in order:
        if head is None or ahead[head, i]:
            head = i
            groups.append((groups[-1] + 1) if groups else 1)
        else:
            groups.append(groups[-1])
    return groups
