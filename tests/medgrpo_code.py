"""Files shaped exactly as MedGRPO-Code's inference pipeline writes them, for tests.

Written from the pipeline's documented behaviour (``run_inference.sh`` with ``N_GPUS``):
the split groups the test file by qa_type (types in order of first appearance) and sends the
i-th question of each type to GPU ``i % N``; each GPU answers its share grouped by type and
writes a dict keyed ``"0"``, ``"1"``, ... in its share's order; the merge concatenates GPU 0's
answers, then GPU 1's, ... re-keyed from 0; the conversion to a submission keeps that order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Record = dict[str, Any]


def by_type(records: list[Record]) -> dict[str, list[Record]]:
    """Records grouped by qa_type, types in order of first appearance, records in order."""
    groups: dict[str, list[Record]] = {}
    for rec in records:
        groups.setdefault(rec["qa_type"], []).append(rec)
    return groups


def split(test: list[Record], n: int) -> list[list[Record]]:
    """The per-GPU input files of an ``n``-GPU run."""
    shares: list[list[Record]] = [[] for _ in range(n)]
    for members in by_type(test).values():
        for i, rec in enumerate(members):
            shares[i % n].append(rec)
    return shares


def infer(share: list[Record], answer: Callable[[Record], str]) -> dict[str, Record]:
    """One GPU's results file: its share answered type by type, keyed by position."""
    position = {id(rec): k for k, rec in enumerate(share)}
    results: dict[int, Record] = {}
    for members in by_type(share).values():
        for rec in members:
            turns = rec["conversations"]
            out: Record = {
                "metadata": rec["metadata"],
                "qa_type": rec["qa_type"],
                "struc_info": rec.get("struc_info"),
                "question": turns[0]["value"].replace("<video>\n", ""),
                "answer": answer(rec),
                "data_source": rec.get("data_source"),
            }
            if len(turns) > 1:
                out["gnd"] = turns[1]["value"]
            results[position[id(rec)]] = out
    return {str(k): results[k] for k in sorted(results)}


def merge(shards: list[dict[str, Record]]) -> dict[str, Record]:
    """The merged results file: the shards one after another, re-keyed from 0."""
    rows = [shard[k] for shard in shards for k in sorted(shard, key=int)]
    return {str(k): row for k, row in enumerate(rows)}


def convert(results: dict[str, Record]) -> list[Record]:
    """The submission file the conversion script writes from a results file."""
    out = []
    for rec in results.values():
        m = rec["metadata"]
        sid = f"{m['video_id']}&&{m['input_video_start_frame']}&&{m['input_video_end_frame']}"
        out.append(
            {"id": f"{sid}&&{m['fps']}", "qa_type": rec["qa_type"], "prediction": rec["answer"]}
        )
    return out


def run(test: list[Record], n: int, answer: Callable[[Record], str]) -> list[dict[str, Record]]:
    """The per-GPU results files of an ``n``-GPU run (one file for one GPU)."""
    if n == 1:
        return [infer(test, answer)]
    return [infer(share, answer) for share in split(test, n)]
