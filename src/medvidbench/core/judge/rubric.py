"""Judging rubrics: aspects scored 1-5, a prompt template, and a version by content hash.

A benchmark whose tasks an LLM judge scores declares its :class:`Rubric` (MedVidBench's is in
``medvidbench.benchmarks.medvidbench.rubric``). Any change to a rubric's wording changes its
:attr:`Rubric.version`, which is part of the judge's configuration id and stored with every
judgement, so scores from different prompts are never mixed silently.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Aspect:
    code: str
    name: str
    question: str
    anchors: tuple[str, str, str, str, str]  # what 1, 2, 3, 4 and 5 mean


def _aspect_block(a: Aspect) -> str:
    levels = "\n".join(f"  {n}: {text}" for n, text in enumerate(a.anchors, start=1))
    return f"{a.code} {a.name}: {a.question}\n{levels}"


@dataclass(frozen=True)
class Rubric:
    """What a judge is asked, for which tasks.

    Attributes:
        aspects: The aspects, each scored 1-5, in the order the answer lists them.
        task_types: Per task, what the judged text is ("video summary").
        template: The prompt, with ``{task}``, ``{reference}``, ``{prediction}``,
            ``{aspects}`` (the aspects and their anchors) and ``{format}`` (one
            ``CODE: <score>`` line per aspect, the answer's expected shape).
    """

    aspects: tuple[Aspect, ...]
    task_types: Mapping[str, str]
    template: str
    _aspects_text: str = field(init=False, repr=False)
    _format_text: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_aspects_text", "\n\n".join(map(_aspect_block, self.aspects)))
        object.__setattr__(
            self, "_format_text", "\n".join(f"{a.code}: <score>" for a in self.aspects)
        )

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(a.code for a in self.aspects)

    @property
    def version(self) -> str:
        """12 hex digits of the hash of everything the prompt says."""
        blob = self.template + self._aspects_text + repr(sorted(self.task_types.items()))
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def prompt(self, task: str, prediction: str, reference: str) -> str:
        """The single user message sent to the judge for one (prediction, reference) pair."""
        return self.template.format(
            task=self.task_types[task],
            reference=reference,
            prediction=prediction,
            aspects=self._aspects_text,
            format=self._format_text,
        )
