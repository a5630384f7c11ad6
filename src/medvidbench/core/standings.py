"""Where a model stands on a board, and how sure that is: ranks from paired bootstrap replicates.

Every entry of a board is ranked again by the published rule's first key (each ranked metric's
competition rank on 3 decimals, averaged) in each of the board's shared bootstrap replicates, so
two entries' positions are paired replicate by replicate. From those positions:

- an entry is **significantly better** than another when it is ahead of it in at least
  ``need`` of the replicates, every pair of the board tested at once: ``need`` is set from the
  replicates so that the percentile intervals of all pairs hold together in 95 % of them (a
  simultaneous test; one pair alone would need 97.5 %), and is stricter below 30 clusters
  (:func:`significance`);
- its **rank** is 1 + the number of entries significantly better than it: entries that cannot be
  told apart share a rank (and a medal), identical ones always; rank 1 is then every entry that
  could be the best;
- its **rank interval** runs from that rank to the number of entries minus those it is
  significantly better than: every place it could hold, so the rank is always inside it, and
  because every pair is tested at once, all the intervals of a board hold together;
- **groups** follow the board's order: a row joins the group of the row heading it unless that
  row is significantly better than it, a paired test against the head, never a chain of
  overlapping intervals.

This is the simultaneous rank inference of Mogstad, Romano, Shaikh and Wilhelm (2024), made
with percentile intervals of the paired positions rather than studentized differences of
metric values (a board orders by an average of ranks, not by one estimate per model).
``bench/bench_ranks.py`` measures what it promises.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from medvidbench.core.benchmark import Metric
from medvidbench.core.intervals import CONFIDENCE

# Ranks use the first this many of an entry's stored replicates. The draws are independent and
# shared by every entry, so a prefix is a smaller bootstrap of the same kind, still paired; the
# metric intervals keep all of them. A board ranks five times faster than with 1,000
# (docs/performance.md); below 30 clusters it ranks with all of them (:func:`rank_replicates`).
RANK_REPLICATES = 200


def rank_replicates(stored: int, clusters: int | None) -> int:
    """How many of an evaluation's ``stored`` replicates its board ranks with: the first
    :data:`RANK_REPLICATES`, or all of them on a test set of few clusters, whose stricter test
    reads a thinner tail (and whose boards are small)."""
    from medvidbench.core.intervals import FEW_CLUSTERS

    if clusters is not None and clusters < FEW_CLUSTERS:
        return stored
    return min(RANK_REPLICATES, stored)


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
        >>> rank_codes(np.array([[0.5004], [np.nan]]), [Metric("a", "A", "t", "a")]).tolist()
        [[-500], [9223372036854775807]]
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
    need: int = 0  # replicates an entry must be ahead in to be significantly better

    @classmethod
    def of(
        cls,
        positions: np.ndarray,
        order: Sequence[int],
        confidence: float = CONFIDENCE,
        clusters: int | None = None,
    ) -> Standings:
        """From entries x replicates positions (or anything ordering and tying as they do in
        each replicate, lower first: :func:`rank_sums`), the board's order (entry indices)
        and the number of clusters the replicates resample (below
        :data:`~medvidbench.core.intervals.FEW_CLUSTERS` the test is stricter)."""
        ahead, need = significance(positions, confidence, clusters)
        entries = positions.shape[0]
        ranks = 1 + ahead.sum(axis=0).astype(np.int64)
        bounds = np.stack([ranks, entries - ahead.sum(axis=1).astype(np.int64)], axis=1)
        return cls(ranks, bounds, _groups(ahead, order), need)


def significance(
    positions: np.ndarray, confidence: float = CONFIDENCE, clusters: int | None = None
) -> tuple[np.ndarray, int]:
    """``[j, i]``: whether entry j is significantly better than entry i, every pair of the
    board tested at once at ``confidence``; and ``need``, the number of replicates an entry
    must be ahead in.

    A pair is a paired test on the replicates: j is significantly better than i when j is
    ahead of i in at least ``need`` of them (ahead strictly; a tie is not ahead). One pair
    alone, at 95 %, would need 97.5 % of them (195 of 200). A board asks every pair at once, so
    ``need`` is set from the replicates themselves, a simultaneous percentile interval for
    every pair: in each replicate, each pair's value (i's position minus j's) has a lower tail
    count (the replicates at or below it) and an upper one (at or above it); the allowance
    ``tau`` is the largest count such that at most 2.5 % of the replicates have some pair
    with a lower tail count of ``tau`` or less, and at most 2.5 % some pair with such an upper
    one. So every pair's interval (the values with both tail counts above ``tau``) holds in
    95 % of the replicates together, and j is significantly better when j is behind or level
    in ``tau`` replicates or fewer: ``need`` = replicates - ``tau``. Below
    :data:`~medvidbench.core.intervals.FEW_CLUSTERS` clusters the 2.5 % per side shrinks to
    the normal tail beyond a quantile widened by t(G-1)/z and CR1's sqrt(G / (G-1)) (0.6 % at
    8 clusters).

    Only pairs whose ranges of positions meet are counted: the others are decided by their
    ranges (one is ahead in every replicate). In the order of the entries' mean positions those
    pairs lie in a band beside the diagonal, so a block of entries is compared with one
    contiguous slice of the entries after it, not pair by pair."""
    entries, reps = positions.shape
    # the positions themselves (competition ranks in each replicate): what the tails are of,
    # whatever orders and ties as they do was given (rank sums)
    positions = _replicate_ranks(np.ascontiguousarray(positions, dtype=np.int64))
    order = np.argsort(positions.mean(axis=1), kind="stable")
    pos = np.ascontiguousarray(positions[order].astype(np.int64))
    low, high = pos.min(axis=1), pos.max(axis=1)
    ahead = high[:, None] < low[None, :]  # ahead in every replicate
    # the last entry after a whose range may still meet a's: beyond it every range starts later
    starts = np.minimum.accumulate(low[::-1])[::-1] if entries else low
    last = np.searchsorted(starts, high, side="right") - 1
    found = []  # per block: rows, cols, and how often each is ahead of the other
    lowest = np.full(reps, reps, dtype=np.int64)  # per replicate, the smallest lower tail count
    highest = np.full(reps, reps, dtype=np.int64)  # and the smallest upper one
    for top in range(0, entries - 1, _BLOCK):
        rows = np.arange(top, min(top + _BLOCK, entries - 1))
        end = int(last[rows].max()) + 1
        if end <= top + 1:
            continue
        cols = np.arange(top + 1, end)
        mine = (cols[None, :] > rows[:, None]) & (cols[None, :] <= last[rows][:, None])
        mine &= ~(high[rows][:, None] < low[cols][None, :])  # the ranges meet
        mine &= ~(high[cols][None, :] < low[rows][:, None])
        r, c = np.nonzero(mine)
        if not len(r):
            continue
        d = pos[cols[c]] - pos[rows[r]]  # pairs x replicates: > 0 where the row is ahead
        below, above = _tail_counts(d)
        np.minimum(lowest, below.min(axis=0), out=lowest)
        np.minimum(highest, above.min(axis=0), out=highest)
        found.append((rows[r], cols[c], (d > 0).sum(axis=1), (d < 0).sum(axis=1)))
    need = _needed(lowest, highest, reps, confidence, clusters)
    for rows, cols, row_ahead, col_ahead in found:
        ahead[rows, cols] = row_ahead >= need
        ahead[cols, rows] = col_ahead >= need
    back = np.empty(entries, dtype=np.int64)
    back[order] = np.arange(entries)
    out: np.ndarray = ahead[back][:, back]
    return out, need


def _tail_counts(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per pair (row) and replicate: the replicates at or below its value, and at or above.

    By counting: positions are whole numbers, so each pair's values span little; one histogram
    of every pair at once (each offset by its pair), and one running sum."""
    pairs, reps = d.shape
    shifted = d - d.min(axis=1, keepdims=True)
    span = int(shifted.max()) + 1 if d.size else 1
    keys = shifted + np.arange(pairs, dtype=np.int64)[:, None] * span
    small = np.int16 if reps < 2**15 else np.int64  # a count never exceeds the replicates
    counts = np.bincount(keys.ravel(), minlength=pairs * span).astype(small).reshape(pairs, span)
    upto = np.cumsum(counts, axis=1, dtype=small).ravel()  # at or below each value, per pair
    below = upto[keys].astype(np.int64)
    above = reps - below + counts.ravel()[keys]  # at or above: all but those strictly below
    return below, above


def _needed(
    lowest: np.ndarray, highest: np.ndarray, reps: int, confidence: float, clusters: int | None
) -> int:
    """Replicates an entry must be ahead in (see :func:`significance`)."""
    if reps <= 1:
        return 1  # fixed values: ahead is ahead
    tail = (1 - confidence) / 2  # per side
    factor = _few_clusters_factor(clusters, confidence)
    if factor > 1:
        from scipy.special import ndtr, ndtri

        tail = float(ndtr(factor * ndtri(tail))) if math.isfinite(factor) else 0.0
    per_side = int(tail * reps + 1e-9)  # replicates that may fall outside, per side
    tau = min(int(np.sort(lowest)[per_side]), int(np.sort(highest)[per_side])) - 1
    # never fewer than half: where the tails jump (positions are whole numbers) a larger
    # allowance decides nothing more, and would read oddly
    return reps - min(max(tau, 0), (reps - 1) // 2)


def _few_clusters_factor(clusters: int | None, confidence: float) -> float:
    """t(G-1)/z at the two-sided level and CR1's sqrt(G / (G-1)) below FEW_CLUSTERS; else 1."""
    from medvidbench.core.intervals import FEW_CLUSTERS

    if clusters is None or clusters >= FEW_CLUSTERS:
        return 1.0
    if clusters < 2:
        return math.inf  # one cluster: nothing can be told apart
    from scipy.special import ndtri, stdtrit

    q = 1 - (1 - confidence) / 2
    return float(stdtrit(clusters - 1, q) / ndtri(q)) * math.sqrt(clusters / (clusters - 1))


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
