"""The study's fine-tuning grid: every encoder x label count, a learning rate chosen on seed 0's
dev accuracy, then the other seeds at that rate; one line per trial in results.jsonl.

For an encoder and a label count n: seed 0 runs at every learning rate of the grid, the rate
with the best dev accuracy (the first listed on a tie) is chosen, and seeds 1..S-1 run at it.
Seed k trains on `plan.training_subset(train, n, k)` (the same examples for every encoder) with
finetune.seed k, and is evaluated once, at its end, on dev and test. Every trial runs in its own
directory (output_dir/finetune/<encoder>/<n>/lr<lr>_seed<k>/) through
`electra_tf.finetuning.runner.run_trials`; a trial already in results.jsonl is not run again, and
one the runner finished (results.json) is not retrained.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging as python_logging
import math
import os
import shutil
import time

from absl import logging

from electra_tf import run_directory
from electra_tf.config import Recipe
from electra_tf.finetuning import runner
from electra_tf.finetuning.api import load_task, resolve_finetune_config
from electra_tf.finetuning.common import FinetuneError
from electra_tf.finetuning.source import resolve_source
from electra_tf.study import plan, results as results_lib
from electra_tf.study.data import LABEL_COLUMN, TEXT_COLUMN, StudyData
from electra_tf.task_data.classification_data import read_table

NEVER = 10 ** 9  # eval_every_steps / save_checkpoints_steps: only at the trial's end
LOG_EVERY_STEPS = 1000  # a trial's own progress lines (shown with -v 1)


@dataclasses.dataclass(frozen=True)
class GridSettings:
    """What the fine-tuning grid needs from the flags."""

    label_counts: tuple
    seeds: int
    learning_rates: tuple[float, ...]
    config: str | Recipe  # the recipe, e.g. "finetune/small", or read once (`read_recipe`)
    overrides: tuple[str, ...]
    min_steps: int
    max_seq_length: int
    keep_checkpoints: bool = False


def load_study_task(data: StudyData):
    """The task's TaskData: train, and dev and test as evaluation splits (dev first)."""
    task = load_task("csv", data_dir=data.task_dir, text_a_column=TEXT_COLUMN,
                     label_column=LABEL_COLUMN, labels=list(data.labels))
    test = read_table(os.path.join(data.task_dir, "test.tsv"), text_a_column=TEXT_COLUMN,
                      label_column=LABEL_COLUMN, labels=list(data.labels), split="test")
    return dataclasses.replace(task, eval_splits={"dev": task.eval_splits["dev"], "test": test})


def base_overrides(settings: GridSettings, vocab_file: str) -> list[str]:
    """The study's fine-tuning settings, then the user's (which may change any of them)."""
    return [f"finetune.vocab_file={vocab_file}",
            f"finetune.max_seq_length={settings.max_seq_length}",
            f"finetune.eval_every_steps={NEVER}", f"finetune.save_checkpoints_steps={NEVER}",
            "finetune.keep_checkpoint_max=1", f"finetune.log_every_steps={LOG_EVERY_STEPS}",
            *settings.overrides]


def batch_size(settings: GridSettings, sizes_source, vocab_file: str) -> int:
    return resolve_finetune_config(sizes_source, settings.config,
                                   base_overrides(settings, vocab_file)).finetune.train_batch_size


def check_label_counts(settings: GridSettings, num_train: int, batch: int) -> None:
    for n in settings.label_counts:
        size = num_train if n == plan.ALL else n
        if n != plan.ALL and n > num_train:
            raise plan.StudyError(f"--labels {n} exceeds the {num_train} training examples")
        if size < batch:
            raise plan.StudyError(f"--labels {n}: fewer training examples than one batch of "
                                  f"{batch}; use larger label counts or --finetune_override "
                                  "finetune.train_batch_size=<smaller>")


class Progress:
    """One line per finished trial, with the count done and an ETA: seconds = a + b x steps,
    fitted to this run's trials (setup and evaluation, then training), over the trials left."""

    def __init__(self, total: int, done: int, left_by_steps: dict[int, int]):
        self.total, self.done = total, done
        self.left_by_steps = dict(left_by_steps)  # training steps -> trials left of that length
        self.timings: list[tuple[int, float]] = []

    def finished(self, record: dict, seconds: float) -> None:
        self.done += 1
        steps = record["steps"]
        if self.left_by_steps.get(steps):
            self.left_by_steps[steps] -= 1
        self.timings.append((steps, seconds))
        eta = f"; ETA {_duration(self.eta())}" if self.done < self.total else ""
        outcome = ("diverged (non-finite loss)" if record["test"] is None
                   else f"test {record['test']:.1f}, dev {record['dev']:.1f}")
        logging.info("[%d/%d] %s n=%s lr=%s seed %d: %s (%.0f s)%s", self.done, self.total,
                     record["encoder"], record["n"], plan.format_lr(record["lr"]),
                     record["seed"], outcome, seconds, eta)

    def eta(self) -> float:
        steps, seconds = zip(*self.timings)
        mean_steps, mean_seconds = sum(steps) / len(steps), sum(seconds) / len(seconds)
        variance = sum((x - mean_steps) ** 2 for x in steps)
        if variance:
            per_step = max(0.0, sum((x - mean_steps) * (y - mean_seconds)
                                    for x, y in zip(steps, seconds)) / variance)
            fixed = max(0.0, mean_seconds - per_step * mean_steps)
        else:  # one length so far: all of it per step (the larger label counts come later)
            per_step, fixed = mean_seconds / max(mean_steps, 1), 0.0
        return sum(count * (fixed + per_step * length)
                   for length, count in self.left_by_steps.items())


def _duration(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {seconds:02d} s"


def trial_steps(num_train: int, batch: int, epochs: int) -> int:
    """Training steps of a trial, as `runner.steps_for` counts them."""
    return max(1, math.ceil(num_train / batch) * epochs)


def trials_per_cell(settings: GridSettings) -> int:
    return len(settings.learning_rates) + settings.seeds - 1


def run_grid(encoders: list[plan.Encoder], data: StudyData, settings: GridSettings,
             output_dir: str, preemption) -> bool:
    """Runs the grid's missing trials (label counts outermost, smallest first, so a partial study
    has every encoder at the small counts). Returns False when SIGTERM stopped it."""
    task = load_study_task(data)
    sources = {e.name: resolve_source(e.checkpoint) for e in encoders if e.checkpoint}
    sizes_source = next(iter(sources.values()))  # the random encoder gets the same sizes
    batch = batch_size(settings, sizes_source, data.vocab_file)
    check_label_counts(settings, len(task.train), batch)
    encoders = encoders + [plan.random_encoder()]
    done = results_lib.read_results(output_dir)
    in_grid = [key for key in done if _in_grid(key, encoders, settings)]
    left_by_steps = {}
    for n in settings.label_counts:
        steps = trial_steps(len(task.train) if n == plan.ALL else n, batch,
                            plan.finetune_epochs(n, batch, settings.min_steps))
        left = (len(encoders) * trials_per_cell(settings)
                - sum(1 for key in in_grid if key[1] == str(n)))
        left_by_steps[steps] = left_by_steps.get(steps, 0) + max(0, left)
    progress = Progress(len(encoders) * len(settings.label_counts) * trials_per_cell(settings),
                        len(in_grid), left_by_steps)

    def trial(encoder, n, lr, seed) -> dict | None:
        key = plan.trial_key(encoder.name, n, lr, seed)
        if key in done:
            return done[key]
        if preemption.requested:
            return None
        epochs = plan.finetune_epochs(n, batch, settings.min_steps)
        overrides = base_overrides(settings, data.vocab_file) + [
            f"optimizer.learning_rate={lr}", f"finetune.num_train_epochs={epochs}",
            f"finetune.seed={seed}"]
        source = sources.get(encoder.name)
        config = resolve_finetune_config(source or sizes_source, settings.config, overrides)
        record = run_trial(task, config, encoder, n, lr, seed, epochs, source,
                           plan.trial_directory(output_dir, encoder, n, lr, seed), preemption,
                           settings.keep_checkpoints)
        if record is None:
            return None
        record["directory"] = os.path.relpath(plan.trial_directory(output_dir, encoder, n, lr,
                                                                   seed), output_dir)
        results_lib.append_result(output_dir, record)
        done[key] = record
        progress.finished(record, record["seconds"])
        return record

    for n in settings.label_counts:
        for encoder in encoders:
            first = [trial(encoder, n, lr, 0) for lr in settings.learning_rates]
            if any(r is None for r in first):
                return False
            chosen = results_lib.choose_learning_rate(first)
            if chosen is None:  # every rate diverged: nothing to run the other seeds at
                logging.warning("%s n=%s: every learning rate diverged", encoder.name, n)
                continue
            for seed in range(1, settings.seeds):
                if trial(encoder, n, chosen, seed) is None:
                    return False
    return True


def _in_grid(key: tuple, encoders, settings: GridSettings) -> bool:
    name, n, lr, seed = key
    return (name in {e.name for e in encoders}
            and n in {str(c) for c in settings.label_counts}
            and seed < settings.seeds
            and (lr in {plan.format_lr(r) for r in settings.learning_rates}))


@contextlib.contextmanager
def _runner_lines_quiet():
    """The runner's lines of a trial (start, progress, dev metrics, checkpoint) at the default
    verbosity give way to the study's one line per trial; -v 1 shows them (and warnings always)."""
    logger = logging.get_absl_logger()  # its level, not --verbosity: callers may set either
    level = logger.level
    if logger.getEffectiveLevel() >= python_logging.INFO:  # not -v 1 (DEBUG)
        logger.setLevel(python_logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def run_trial(task, config, encoder: plan.Encoder, n, lr: float, seed: int, epochs: int, source,
              trial_dir: str, preemption, keep_checkpoints: bool) -> dict | None:
    """One fine-tuning trial; its results.jsonl record, or None when preempted."""
    subset = plan.training_subset(task.train, n, seed)
    trial_task = dataclasses.replace(task, train=subset)
    started = time.time()
    diverged = False
    try:
        with _runner_lines_quiet():
            report = runner.run_trials(trial_task, config, trial_dir, source=source, num_trials=1,
                                       export=False, preemption=preemption)
    except FinetuneError as e:
        if "non-finite" not in str(e):
            raise
        logging.warning("%s: %s", trial_dir, e)  # a rate too high: a result, not a failure
        diverged = True
    seconds = time.time() - started
    dev = test = None
    steps = trial_steps(len(subset), config.finetune.train_batch_size, epochs)
    if not diverged:
        if report["status"] != "finished":
            return None
        result = report["trial_results"][0]
        headline, steps = result["headline"], result["steps"]
        dev = result["dev"]["dev"]["last"][headline]
        test = result["dev"]["test"]["last"][headline]
    if not keep_checkpoints:  # results.json marks the trial finished; its weights are not needed
        shutil.rmtree(run_directory.checkpoints_dir(trial_dir), ignore_errors=True)
    train_labels = [e.label for e in subset]
    return {
        "encoder": encoder.name, "objective": encoder.objective,
        "pretraining_step": encoder.step, "flops": encoder.flops, "n": n,
        "train_examples": len(subset), "lr": lr, "seed": seed, "dev": dev, "test": test,
        "diverged": diverged,
        "majority_dev": plan.majority_accuracy(
            train_labels, [e.label for e in task.eval_splits["dev"]]),
        "majority_test": plan.majority_accuracy(
            train_labels, [e.label for e in task.eval_splits["test"]]),
        "epochs": epochs, "steps": steps, "seconds": round(seconds, 1)}
