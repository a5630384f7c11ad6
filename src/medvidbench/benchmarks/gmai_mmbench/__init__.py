"""GMAI-MMBench: single-choice medical image questions, scored as VLMEvalKit's exact matching.

:data:`BENCHMARK` is published in the ``medvidbench.benchmarks`` entry-point group, as the other
built-ins are, and uses nothing but the plug-in contract (``medvidbench.core``). Its scoring
reproduces VLMEvalKit's rule-based path (``GMAIMMBenchDataset.evaluate`` with no judge) at
commit e8e78f05, and its two older rule sets under their own profiles; see
docs/benchmarks/gmai-mmbench.md. Importing this module is cheap: the loaders, scorers and
generator are imported on first use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from medvidbench.benchmarks.gmai_mmbench.importers import IMPORTERS
from medvidbench.core.benchmark import (
    Benchmark,
    DemoData,
    Metric,
    Presentation,
    Profile,
    Rule,
    Source,
    Task,
    TestSetFunctions,
    Uncertainty,
)
from medvidbench.core.formats import DEFAULT_MAX_BYTES, one_source

if TYPE_CHECKING:
    from pathlib import Path

    from medvidbench.benchmarks.gmai_mmbench.testset import Question, QuestionSet
    from medvidbench.core.scoring import TaskScorer
    from medvidbench.core.submission import MatchedSubmission

# Kept in step with .synth.ARCHETYPES (a test checks), so that listing benchmarks stays cheap.
ARCHETYPES = ("perfect", "strong", "weak", "verbose", "garbage")

TASKS = (
    Task(
        "mcq",
        "VQA",
        "Single-choice medical visual question answering",
        test_count=4550,  # the VAL split, the one scorable with its answers
        family="multiple-choice",
    ),
)

METRICS = (
    Metric(
        "acc",
        "Accuracy",
        "mcq",
        "Share of questions whose answer VLMEvalKit's rules read as the right option (an "
        "answer they cannot read is wrong)",
        percent=True,
    ),
)

# Which of VLMEvalKit's rule sets reads the answers (core/answers/vlmevalkit.py).
RULES = Rule(
    "extraction",
    ("vlmevalkit", "vlmevalkit-2025-08", "vlmevalkit-2024"),
    "vlmevalkit: VLMEvalKit's rules at e8e78f05 (since 2026-06-17); vlmevalkit-2025-08: those "
    "of 2025-08-04 to 2026-06-17 (no 'answer is X' rule); vlmevalkit-2024: those before "
    "2025-08-04 (a lone letter anywhere, option texts in answers of any length).",
)

PROFILES = (
    Profile(
        "vlmevalkit",
        "VLMEvalKit's exact matching at commit e8e78f05, quirks included, no judge: what "
        "'python run.py --data GMAI-MMBench_VAL --judge exact_matching' reports.",
        (("extraction", "vlmevalkit"),),
    ),
    Profile(
        "vlmevalkit-2025-08",
        "VLMEvalKit's exact matching as from 2025-08-04 to 2026-06-17 (run at 0bccf452).",
        (("extraction", "vlmevalkit-2025-08"),),
    ),
    Profile(
        "vlmevalkit-2024",
        "VLMEvalKit's exact matching before 2025-08-04 (run at c026693a), the rules of the "
        "paper's time, without its judge.",
        (("extraction", "vlmevalkit-2024"),),
    ),
)

ABOUT = """GMAI-MMBench (NeurIPS 2024 Datasets and Benchmarks) asks single-choice questions \
about medical images: 38 modalities, 18 clinical VQA tasks, 18 departments and 4 perceptual \
granularities (image, box, mask, contour), from 284 public datasets. Its 25,831 questions are \
split into VAL (4,550, answers public) and TEST (21,281, answers withheld by the authors); \
each has 2 to 5 options.

Scoring is VLMEvalKit's exact matching, rule for rule: the option letter is read from the raw \
answer (a lone capital letter among its last four words, an "answer is X", or the one option \
text it contains); an answer the rules cannot read is wrong. The leaderboard's accuracy is the \
plain share of right answers, VLMEvalKit's Overall; reports also give it per clinical VQA \
task, department, perceptual granularity and modality. VLMEvalKit's judge-assisted reading (a \
GPT model asked about unreadable answers) is not offered: a board never mixes judged and \
rule-read scores.

The 2024 paper's numbers were read with an earlier rule set and a judge; the profiles \
vlmevalkit-2025-08 and vlmevalkit-2024 give the earlier rules, never the judge."""

CITATION = """@inproceedings{chen2024gmaimmbench,
  title     = {{GMAI-MMBench}: A Comprehensive Multimodal Evaluation Benchmark Towards
               General Medical {AI}},
  author    = {Chen, Pengcheng and Ye, Jin and Wang, Guoan and Li, Yanjun and Deng, Zhongying
               and Li, Wei and Li, Tianbin and Duan, Haodong and Huang, Ziyan and Su, Yanzhou
               and Wang, Benyou and Zhang, Shaoting and Fu, Bin and Cai, Jianfei and Zhuang,
               Bohan and Seibel, Eric J. and He, Junjun and Qiao, Yu},
  booktitle = {Advances in Neural Information Processing Systems (Datasets and Benchmarks
               Track)},
  year      = {2024},
  eprint    = {2408.03361},
  archivePrefix = {arXiv}
}"""

LINKS = {
    "Paper (arXiv:2408.03361)": "https://arxiv.org/abs/2408.03361",
    "Project page": "https://uni-medical.github.io/GMAI-MMBench.github.io/",
    "Dataset (OpenGVLab)": "https://huggingface.co/datasets/OpenGVLab/GMAI-MMBench",
    "Dataset (VLMEvalKit's TSV)": "https://huggingface.co/datasets/VLMEval/GMAI-MMBench",
    "Code": "https://github.com/uni-medical/GMAI-MMBench",
    "VLMEvalKit": "https://github.com/open-compass/VLMEvalKit",
}

LICENCE = (
    "unclear: the Hugging Face dataset cards (OpenGVLab/GMAI-MMBench, VLMEval/GMAI-MMBench) "
    "say Apache-2.0, a third-party script says CC BY-NC-SA (unverified), and the images come "
    "from 284 source datasets under their own terms"
)


# The breakdowns (VLMEvalKit's sub-boards, and modality): a missing value is the group "None".
def _clinical_task(q: Question) -> str:
    return q.clinical_task


def _department(q: Question) -> str:
    return q.department


def _granularity(q: Question) -> str:
    return q.granularity


def _modality(q: Question) -> str:
    return q.modality


# The loaders, scorers and generator, imported on first use; written out (not ``lazy``) so that
# mypy checks each against the kernel's types.
def _kept_as() -> type[QuestionSet]:
    from medvidbench.benchmarks.gmai_mmbench.testset import QuestionSet

    return QuestionSet


def _load(source: str | Path | bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> QuestionSet:
    from medvidbench.benchmarks.gmai_mmbench.testset import load_ground_truth

    return load_ground_truth(source, max_bytes)


def _questions(source: str | Path | bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> QuestionSet:
    from medvidbench.benchmarks.gmai_mmbench.testset import load_questions

    return load_questions(source, max_bytes)


def _match(
    source: Source, gt: QuestionSet, max_bytes: int = DEFAULT_MAX_BYTES, name: str = ""
) -> MatchedSubmission:
    from medvidbench.benchmarks.gmai_mmbench.submission import validate_submission

    return validate_submission(one_source(source), gt, max_bytes, name)


def _scorers() -> Mapping[str, TaskScorer[Question]]:
    from medvidbench.benchmarks.gmai_mmbench.scoring import scorers

    return scorers()


def _synthesise(out_dir: Path, samples: int | None, seed: int) -> dict[str, Path]:
    from medvidbench.benchmarks.gmai_mmbench.synth import write_synthetic

    return write_synthetic(out_dir, samples, seed)


# The test set's reader and matcher, typed with its own test-set class (mypy checks the pair).
TESTSET: TestSetFunctions[QuestionSet] = TestSetFunctions(
    load=_load, match=_match, questions=_questions, kept_as=_kept_as
)

BENCHMARK: Benchmark[Question] = Benchmark(
    slug="gmai-mmbench",
    title="GMAI-MMBench",
    version="VAL-2024.10",
    scorer_version="0.1.0",
    tasks=TASKS,
    metrics=METRICS,
    profiles=PROFILES,
    rules=(RULES,),
    testset=TESTSET,
    scorers=_scorers,
    breakdowns={
        "clinical VQA task": _clinical_task,
        "department": _department,
        "perceptual granularity": _granularity,
        "modality": _modality,
    },
    uncertainty=Uncertainty(
        cluster_rule="each question on its own (the TSV names no image or case that several "
        "questions share)"
    ),
    demo=DemoData(synthesise=_synthesise, archetypes=ARCHETYPES),
    presentation=Presentation(
        about=ABOUT,
        identity="A prediction names its question by VLMEvalKit's 'index' (the dataset TSV's "
        "index column), never by its row's position.",
        submission_format="VLMEvalKit's prediction file as run.py writes it "
        "(<model>_GMAI-MMBench_VAL.xlsx, .tsv or .json: the dataset's columns and "
        '"prediction", the raw answer), its _result.xlsx, or a JSON list of {"index", '
        '"prediction"} records; every question answered.',
        submission_example="""[
  {"index": 1, "prediction": "B"},
  {"index": 2, "prediction": "The answer is (C) tuberculosis."}
]""",
        citation=CITATION,
        links=LINKS,
        licence=LICENCE,
    ),
    importers=IMPORTERS,
)
