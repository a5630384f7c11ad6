"""GRPO with TRL on a CPU, rewarded by medvidbench's scorers: a few steps, nothing downloaded.

A tiny randomly initialised Llama (2 layers, hidden size 32) and a word-level tokenizer built
on the fly from the training prompts learn, for a few steps, to answer MedVidBench's rule-based
questions of the demo set (``medvidbench synth``'s generator), the tasks taken in turn. The
model learns nothing useful in so few steps; the point is the plumbing: ``medvidbench rewards
prepare``-style rows, the TRL reward function, the per-task metrics it logs through TRL's
``log_metric`` (printed at the end) and a rollouts file that ``medvidbench rewards fit
--rollouts`` can refit from. Next-action prediction is among the default tasks because a random
model's words already earn it some reward (its answer is mapped to the nearest class), so the
rewards of a group differ and the first steps have a non-zero gradient; on STG and TAL alone it
writes nothing readable and every reward, advantage and gradient is 0.

Needs the training extras (pinned in tests/training-requirements.txt: ``torch==2.13.0`` as a
CPU wheel, ``trl==1.16.0``).

Usage: python examples/grpo_tiny_cpu.py [--steps 2] [--tasks next_action,stg,tal] [--prompts 8]
                                        [--async-rewards | --components] [--out DIR]
                                        [--metrics metrics.json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

SPECIAL = ["[PAD]", "[UNK]", "[EOS]"]
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)


def training_rows(folder: Path, tasks: list[str], count: int) -> list[dict[str, Any]]:
    """TRL-style rows (as ``medvidbench rewards prepare`` writes them) of the demo set."""
    from medvidbench import benchmarks
    from medvidbench.rewards import ground_truth_column, spec_of

    bench = benchmarks.get("medvidbench")
    assert bench.demo is not None
    files = bench.demo.synthesise(folder, None, 0)
    samples = bench.load_ground_truth(files["ground_truth"]).samples
    by_task = {t: [s for s in samples if s.task == t] for t in tasks}
    # the tasks in turn, so that every batch holds each of them
    items = [group[n] for n in range(count) for group in by_task.values() if n < len(group)]
    items = items[:count]
    spec = spec_of(bench)
    extras = spec.row_extras(items)
    rows = []
    for item, extra in zip(items, extras, strict=True):
        rows.append(
            {
                "prompt": [{"role": "user", "content": spec.prompt(item)["question"]}],
                "ground_truth": ground_truth_column(bench, item, extra),
                "task": item.task,
                "answer": item.answer,  # only to give the tokenizer the answers' words
            }
        )
    return rows


def local_tokenizer(rows: list[dict[str, Any]]) -> Any:
    """A word-level tokenizer trained on the rows' prompts and answers, wrapped for TRL."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    texts = [r["prompt"][0]["content"] for r in rows] + [str(r["answer"]) for r in rows]
    texts.append("user: assistant:")
    raw.train_from_iterator(texts, trainers.WordLevelTrainer(special_tokens=SPECIAL))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw, pad_token="[PAD]", unk_token="[UNK]", eos_token="[EOS]"
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def tiny_model(tokenizer: Any) -> Any:
    """A randomly initialised two-layer Llama for the tokenizer's vocabulary."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    return LlamaForCausalLM(config)


def train(args: argparse.Namespace, folder: Path) -> list[dict[str, Any]]:
    """Run GRPO for ``args.steps`` steps; returns the trainer's log history."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from medvidbench.rewards.trl import reward_function

    rows = training_rows(folder / "demo", args.tasks.split(","), args.prompts)
    tokenizer = local_tokenizer(rows)
    dataset = Dataset.from_list(
        [{k: r[k] for k in ("prompt", "ground_truth", "task")} for r in rows]
    )
    config = GRPOConfig(
        output_dir=str(folder / "out"),
        use_cpu=True,
        max_steps=args.steps,
        per_device_train_batch_size=8,
        num_generations=8,
        max_completion_length=24,
        learning_rate=1e-3,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        seed=0,
        data_seed=0,
        dataloader_num_workers=0,
    )
    if args.components:  # one function per term, each normalised in its group (GDPO)
        from medvidbench.rewards.trl import reward_functions

        funcs = reward_functions(components=("score", "similarity"), rollouts=args.rollouts)
        config.multi_objective_aggregation = "normalize_then_sum"
        config.reward_weights = [1.0, 1.0]
    elif args.async_rewards:  # one function per task, awaited together by TRL
        from medvidbench.rewards.trl import async_reward_function

        funcs = [
            async_reward_function(tasks=[t], rollouts=args.rollouts) for t in args.tasks.split(",")
        ]
    else:
        funcs = [reward_function(rollouts=args.rollouts)]  # raw rewards: no statistics needed
    trainer = GRPOTrainer(
        model=tiny_model(tokenizer),
        reward_funcs=funcs,
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    trainer.train()
    return list(trainer.state.log_history)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument(
        "--tasks", default="next_action,stg,tal", help="Comma-separated tasks to train on."
    )
    parser.add_argument(
        "--async-rewards",
        action="store_true",
        help="One async reward function per task (TRL awaits them together).",
    )
    parser.add_argument(
        "--components",
        action="store_true",
        help="One reward function per term (score, similarity), normalised in its group one "
        "by one before the weighted sum (TRL's normalize_then_sum); add a caption task, say "
        "--tasks next_action,video_summary, for the similarity term.",
    )
    parser.add_argument("--prompts", type=int, default=8, help="Training prompts (rows).")
    parser.add_argument("--out", type=Path, default=None, help="Working folder (default: temp).")
    parser.add_argument("--metrics", type=Path, default=None, help="Write the log history here.")
    parser.add_argument(
        "--rollouts", type=Path, default=None, help="Append every scored completion here."
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        history = train(args, args.out or Path(tmp))
    for entry in history:
        shown = {k: round(v, 4) if isinstance(v, float) else v for k, v in entry.items()}
        print(json.dumps(shown, sort_keys=True))
    if args.metrics is not None:
        args.metrics.write_text(json.dumps(history, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
