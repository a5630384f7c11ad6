"""Next-action prediction: NAP_acc (metrics.md §3.3).

``leaderboard-v1``: answer and GT are stripped (CoPESD legacy labels mapped); a GT outside the
class list skips the sample; an answer equal to a class is that class, anything else becomes the
class of highest all-MiniLM-L6-v2 cosine similarity (so nothing is unparseable). Class lists are
per dataset; NurViD's is the list of the *first* procedure (in the reference order) named in the
question, else all NurViD actions; EgoSurgery's and unknown datasets' are the sorted distinct GT
labels of the group (with the scoring option ``label_sets``, ``{dataset: labels}``, those
labels too: a training reward scores a few rows at a time, and the class list must be the whole
file's). NAP_acc pools correct answers over all evaluated samples.

``strict-v2``: labels compare case- and punctuation-insensitively; NurViD picks the *longest*
procedure named in the question (so "Subcutaneous Injection Insulin" is not taken for
"Subcutaneous Injection", bug B16); a GT outside the list joins the list instead of skipping
the sample; an answer without a letter or digit (empty, "--") is wrong instead of being mapped
to a class.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING

import msgspec

from medvidbench.benchmarks.medvidbench.groundtruth import Sample
from medvidbench.benchmarks.medvidbench.nap_classes import nap_classes
from medvidbench.benchmarks.medvidbench.rules import corrected, tolerant
from medvidbench.core.benchmark import Profile
from medvidbench.core.nearest import nearest
from medvidbench.core.scoring import (
    Context,
    SampleResult,
    TaskResult,
    TaskScorer,
    diagnostics,
    group_by_dataset,
    micro_mean,
)

if TYPE_CHECKING:
    from medvidbench.core.embeddings import Embedder

_PUNCT = re.compile(r"[^\w\s-]")
_SPACE = re.compile(r"\s+")
_ALNUM = re.compile(r"[^\W_]")


def normalize(text: str, strict: bool = False) -> str:
    """v1: strip and map CoPESD legacy labels. v2 also folds case, punctuation and spacing.

    Examples:
        >>> normalize("  dissect flap with knife ")
        'dissect flap tissue with knife'
        >>> normalize("Tying.", strict=True)
        'tying'
    """
    mapping: dict[str, str] = nap_classes()["CoPESD_legacy_mapping"]
    text = text.strip()
    text = mapping.get(text, text)
    if strict:
        text = _SPACE.sub(" ", _PUNCT.sub("", text.casefold())).strip()
        folded = {k.casefold(): v.casefold() for k, v in mapping.items()}
        text = folded.get(text, text)
    return text


def nurvid_procedure(question: str, strict: bool = False) -> str | None:
    """The NurViD procedure a question names: v1 the first listed, v2 the longest."""
    q = question.lower()
    names = [p for p, lowered in _procedures() if lowered in q]
    if not names:
        return None
    return str(max(names, key=len) if strict else names[0])


@cache
def _procedures() -> list[tuple[str, str]]:
    """The NurViD procedures in the list's order, each with its lower-case form."""
    return [(p, p.lower()) for p in nap_classes()["NurViD_procedures"]]


def group_key(dataset: str, question: str, strict: bool) -> tuple[str, str | None]:
    """Which class list a sample uses: (dataset, NurViD procedure or None)."""
    if dataset == "NurViD":
        return dataset, nurvid_procedure(question, strict)
    return dataset, None


def class_list(key: tuple[str, str | None], gt_labels: Sequence[str]) -> list[str]:
    """The classes for a group; GT-derived (sorted, distinct) where no list is known."""
    data = nap_classes()
    dataset, procedure = key
    if dataset == "NurViD":
        procedures: dict[str, list[str]] = data["NurViD_procedures"]
        if procedure is not None:
            return list(procedures[procedure])
        return list(dict.fromkeys(a for actions in procedures.values() for a in actions))
    if dataset in ("AVOS", "CholecT50", "CoPESD"):
        return list(data[dataset])
    return sorted(set(gt_labels))


def known_labels() -> list[str]:
    """Every class label of the shipped lists, as both profiles compare them."""
    data = nap_classes()
    raw = [
        *data["AVOS"],
        *data["CholecT50"],
        *data["CoPESD"],
        *data["EgoSurgery_reference_only"],
        *(a for actions in data["NurViD_procedures"].values() for a in actions),
    ]
    return sorted({t for label in raw for t in (label, normalize(label, strict=True))})


@cache
def prepared_embedder() -> Embedder:
    """The process-wide embedder with every known class label already encoded.

    Class lists are fixed by the benchmark, so encoding them belongs with loading the model,
    not with scoring a submission; the disk cache makes it once per machine.
    """
    from medvidbench.core.embeddings import default_embedder

    embedder = default_embedder()
    embedder.encode_fixed(known_labels())
    return embedder


class NAPAnswer(msgspec.Struct, frozen=True):
    """One answer read against its item's class list.

    Attributes:
        parsed: Whether it counts as read (v1 maps every answer, even an empty one, to a class).
        exact: Whether it names a class exactly (no embedding needed).
        correct: Whether its class is the reference's; None when the reference label is not in
            the class list (the sample is skipped).
    """

    parsed: bool
    exact: bool
    correct: bool | None


def predict(texts: Sequence[str], classes: Sequence[str], ctx: Context) -> list[int]:
    """Class index per answer: exact match first, else the class of most similar embedding
    (the largest exact dot product of the unit vectors, the first of equals: core/nearest)."""
    index = {c: i for i, c in enumerate(classes)}
    out = [index.get(t, -1) for t in texts]
    pending = sorted({t for t, i in zip(texts, out, strict=True) if i < 0})
    if pending:
        vectors = ctx.embedder().vectors([*pending, *classes])
        found = nearest(vectors[: len(pending)], vectors[len(pending) :])
        by_text = dict(zip(pending, found, strict=True))
        out = [i if i >= 0 else by_text[t] for t, i in zip(texts, out, strict=True)]
    return out


class NAPScorer(TaskScorer[Sample]):
    task = "next_action"
    metric_keys: tuple[str, ...] = ("nap_acc",)

    def parse_all(
        self, items: Sequence[Sample], texts: Sequence[str], profile: Profile, ctx: Context
    ) -> list[NAPAnswer]:
        """Each answer's class against its item's class list, in one embedding batch."""
        strict = tolerant(profile)  # how labels and answers are read
        counts_all = corrected(profile)  # every answer scored, the test set's own labels added
        # Scoring a subset (training rewards): the labels of the whole file, for the class
        # lists a test set derives from its own labels (EgoSurgery), by dataset.
        label_sets: dict[str, Sequence[str]] = ctx.options.get("label_sets") or {}
        groups: dict[tuple[str, str | None], list[int]] = {}
        for i, s in enumerate(items):
            groups.setdefault(group_key(s.dataset, s.question, strict), []).append(i)
        out: list[NAPAnswer | None] = [None] * len(items)
        prepared = []
        for key, members in groups.items():
            gts = [normalize(items[i].answer, strict) for i in members]
            preds = [normalize(texts[i], strict) for i in members]
            known = [normalize(label, strict) for label in label_sets.get(key[0], ())]
            classes = class_list(key, gts + known)
            if counts_all:
                classes = [normalize(c, True) for c in classes]
                classes += sorted({g for g in gts if g not in classes})
            prepared.append((members, gts, preds, classes))
        # Every answer that needs its embedding, across all groups, in one batch: the encoder
        # is several times faster on one large batch than on one small batch per group.
        unmatched = {t for _, _, preds, classes in prepared for t in set(preds) - set(classes)}
        if unmatched:
            ctx.embedder().prefetch(
                sorted(unmatched | {c for *_, classes in prepared for c in classes})
            )
        for members, gts, preds, classes in prepared:
            gt_index = {c: n for n, c in reversed(list(enumerate(classes)))}  # first occurrence
            predicted = predict(preds, classes, ctx)
            for i, gt, pred, p in zip(members, gts, preds, predicted, strict=True):
                out[i] = NAPAnswer(
                    # v1 maps even an empty answer to a class; v2 reads an answer only when it
                    # holds a letter or digit ("--" is no answer, not the nearest class)
                    parsed=bool(_ALNUM.search(pred)) or not counts_all,
                    exact=pred in gt_index,
                    correct=None if gt not in gt_index else p == gt_index[gt],
                )
        return [a for a in out if a is not None]

    def score_sample(self, parsed: NAPAnswer, item: Sample, profile: Profile) -> SampleResult:
        extra = {"exact": parsed.exact}
        if parsed.correct is None:
            return SampleResult(
                item.index,
                item.dataset,
                parsed.parsed,
                None,
                "reference label not in the class list",
                extra,
            )
        correct = parsed.parsed and parsed.correct
        return SampleResult(
            item.index, item.dataset, parsed.parsed, {"nap_acc": float(correct)}, extra=extra
        )

    def aggregate(self, results: list[SampleResult], profile: Profile) -> TaskResult:
        per_dataset: dict[str, dict[str, float | int | None]] = {
            d: {
                "nap_acc": micro_mean(rs, "nap_acc"),
                "count": len(rs),
                "evaluated": sum(r.values is not None for r in rs),
            }
            for d, rs in group_by_dataset(results).items()
        }
        exact = sum(bool(r.extra and r.extra["exact"]) for r in results)
        diag = diagnostics(results)
        diag["exact_match_rate"] = exact / len(results) if results else None
        diag["skipped"] = diag["count"] - diag["evaluated"]
        return TaskResult(
            self.task, {"nap_acc": micro_mean(results, "nap_acc")}, per_dataset, diag, results
        )


SCORER = NAPScorer()
