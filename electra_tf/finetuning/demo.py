"""The no-flags demonstration of run_finetuning: ELECTRA's claim in miniature, on a CPU.

Task ("coherence", built from the embedded corpus of the pretraining demo): given two lines,
does the second one follow the first in the same document ("next"), or was it drawn from another
document ("random")? Half of the pairs are each. Training pairs come from the pretraining
documents, dev pairs from the held-out tenth the pretraining never saw. Consecutive lines of
the standard library's documentation share their subject (names, terms), which a model can
only use if it knows which words go together: learnable, not random, and a question of word
knowledge that pretraining can supply.

Four rows, each the median of `TRIALS` fine-tuning seeds:
- ELECTRA: the pretraining demo's discriminator (`runs/electra_demo`);
- MLM baseline: the same encoder pretrained as a masked LM (`electra_objective: false`) on
  the same data for the same pretraining FLOPs (the generator's share included), as in the
  paper's comparisons (`runs/electra_demo_mlm`, trained here on first use);
- no pretraining: the same encoder from its random initialisation;
- majority class: the training set's most frequent label.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys

from absl import logging

from electra_tf import run_directory
from electra_tf.config import load_config
from electra_tf.pretraining_data import corpus
from electra_tf.task_data.classification_data import Example
from electra_tf.task_data.classification_features import LabelSpace
from electra_tf.pretraining_data.masking import max_predictions_per_seq
from electra_tf.errors import UserError
from electra_tf.finetuning import runner
from electra_tf.finetuning.api import resolve_finetune_config
from electra_tf.finetuning.source import resolve_source
from electra_tf.finetuning.tasks import TaskData
from electra_tf.training.flops import pretraining_step_flops

ELECTRA_DIR = "runs/electra_demo"
MLM_DIR = "runs/electra_demo_mlm"
OUTPUT_DIR = "runs/electra_demo_finetune"
TRIALS = 3
LABELS = ("random", "next")
MAX_TRAIN_PAIRS = 4000


class DemoError(UserError):
    """The demonstration cannot run (the pretraining demo is missing)."""


def coherence_pairs(documents: list[list[str]], seed: int, limit: int | None = None) -> list[Example]:
    """One example per pair of consecutive lines; half of them get a line of another document."""
    rng = random.Random(seed)
    examples = []
    for d, document in enumerate(documents):
        for first, second in zip(document, document[1:]):
            label = rng.choice(LABELS)
            if label == "random":
                other = rng.choice([i for i in range(len(documents)) if i != d] or [d])
                second = rng.choice(documents[other])
            examples.append(Example(f"{d}-{len(examples)}", first, second, label))
    rng.shuffle(examples)
    return examples[:limit] if limit else examples


def coherence_task(data_dir: str) -> TaskData:
    train_documents = list(corpus.read_documents(os.path.join(data_dir, "text")))
    dev_documents = list(corpus.read_documents(os.path.join(data_dir, "heldout_text")))
    return TaskData(
        name="coherence", label_space=LabelSpace(LABELS), metric="accuracy", default_epochs=3.0,
        double_unordered=False, train=coherence_pairs(train_documents, 0, MAX_TRAIN_PAIRS),
        eval_splits={"dev": coherence_pairs(dev_documents, 1)})


def _electra_steps(electra_dir: str) -> int:
    return load_config(run_directory.config_file(electra_dir)).optimizer.train_steps


def _step_flops(electra_dir: str) -> tuple[float, float]:
    """FLOPs of one step of the ELECTRA demo's run and of its MLM baseline."""
    config = load_config(run_directory.config_file(electra_dir))
    seq, batch = config.run.max_seq_length, config.run.train_batch_size
    predictions = max_predictions_per_seq(config.objective.mask_prob, seq)
    return (pretraining_step_flops(config.model, batch, seq, predictions, electra=True),
            pretraining_step_flops(config.model, batch, seq, predictions, electra=False))


def _mlm_steps(electra_dir: str) -> int:
    """Steps of the MLM baseline with the FLOPs of the ELECTRA demo's run."""
    electra, mlm = _step_flops(electra_dir)
    return round(_electra_steps(electra_dir) * electra / mlm)


def _pretrain_mlm_baseline(steps: int) -> None:
    logging.info("pretraining the MLM baseline for %d steps (the ELECTRA demo's FLOPs) in %s",
                 steps, MLM_DIR)
    # The ELECTRA run's own config (sizes, recipe, overrides it was run with), as an MLM.
    command = [sys.executable, "-m", "electra_tf.run_pretraining", "--model_dir", MLM_DIR,
               "--config", run_directory.config_file(ELECTRA_DIR),
               "--override", "objective.electra_objective=false", "--train_steps", str(steps),
               "--noexport"]
    if subprocess.run(command).returncode != 0:
        raise DemoError(f"pretraining the MLM baseline failed: {' '.join(command)}")


def run_demo(config_name: str = "finetune/demo", trials: int = TRIALS,
             overrides: list[str] | tuple = ()) -> int:
    """Fine-tunes ELECTRA, the MLM baseline and no pretraining on the coherence task, `trials`
    seeds each, with `config_name` and `overrides` (run_finetuning's --num_trials and
    --override); prints the table."""
    if not run_directory.has_checkpoint(ELECTRA_DIR):
        raise DemoError(f"the demonstration fine-tunes the pretraining demo's model, and "
                        f"{ELECTRA_DIR} has none: run `python -m electra_tf.run_pretraining` "
                        "first (about 90 s), then this command again")
    steps = _mlm_steps(ELECTRA_DIR)
    if not run_directory.has_checkpoint(MLM_DIR):
        _pretrain_mlm_baseline(steps)
    electra, mlm = resolve_source(ELECTRA_DIR), resolve_source(MLM_DIR)
    task = coherence_task(run_directory.demo_data_dir(ELECTRA_DIR))
    config = resolve_finetune_config(electra, config_name,
                                     [f"finetune.vocab_file={electra.vocab_file}", *overrides])
    rows = []
    for name, source in (("ELECTRA", electra), ("MLM baseline", mlm), ("no pretraining", None)):
        directory = os.path.join(OUTPUT_DIR, name.split()[0].lower())
        report = runner.run_trials(task, config, directory, source=source, num_trials=trials,
                                   export=name == "ELECTRA")
        rows.append((name, report["dev"]["dev"]))
    labels = [e.label for e in task.train]
    majority = max(LABELS, key=labels.count)
    dev = [e.label for e in task.eval_splits["dev"]]
    majority_accuracy = 100.0 * dev.count(majority) / len(dev)
    electra_steps = _electra_steps(ELECTRA_DIR)
    print(format_table(rows, majority_accuracy, electra_steps, steps, len(task.train), len(dev),
                       config.optimizer.learning_rate,
                       pretraining_flops=electra_steps * _step_flops(ELECTRA_DIR)[0]),
          flush=True)
    return 0


# The pretraining FLOPs at which ELECTRA first beat no pretraining on a real corpus (the Debian
# sections task, docs/pretraining_value.md), for the line under the demonstration's table.
PAYS_OFF_FLOPS = 2.65e14


def format_table(rows, majority_accuracy: float, electra_steps: int, mlm_steps: int,
                 num_train: int, num_dev: int, learning_rate: float,
                 pretraining_flops: float | None = None) -> str:
    """Markdown: a row per encoder with the median dev accuracy, min-max and every trial; then
    ELECTRA's gaps to the others' medians, and how its pretraining FLOPs compare with the budget
    at which pretraining paid off on a real corpus."""
    trials = len(rows[0][1]["values"])
    lines = [f"coherence task: {num_train} training pairs, {num_dev} dev pairs from held-out "
             f"documents; dev accuracy (%), {trials} seeds, fine-tuning lr {learning_rate:g}",
             "", "| encoder | median | min-max | trials |", "|---|---|---|---|"]
    names = {"ELECTRA": f"ELECTRA ({electra_steps} pretraining steps)",
             "MLM baseline": f"MLM baseline ({mlm_steps} steps, same FLOPs)"}
    for name, values in rows:
        lines.append(f"| {names.get(name, name)} | {values['median']:.1f} | "
                     f"{min(values['values']):.1f}-{max(values['values']):.1f} | "
                     + " ".join(f"{v:.1f}" for v in values["values"]) + " |")
    lines.append(f"| majority class | {majority_accuracy:.1f} | | |")
    medians = {name: values["median"] for name, values in rows}
    if "ELECTRA" in medians:
        gaps = [f"{medians['ELECTRA'] - medians[name]:+.1f} points against {name}"
                for name in ("no pretraining", "MLM baseline") if name in medians]
        lines.append("ELECTRA's median: " + ", ".join(gaps) + ".")
    if pretraining_flops:
        lines.append(
            f"This pretraining is {pretraining_flops:.1e} FLOPs; on a real corpus ELECTRA beat no "
            f"pretraining at {PAYS_OFF_FLOPS:.3g} ({PAYS_OFF_FLOPS / pretraining_flops:.0f}x; "
            "docs/pretraining_value.md), which a two-core CPU reaches in about an hour.")
    lines.append(f"(runs under {OUTPUT_DIR})")
    return "\n".join(lines)
