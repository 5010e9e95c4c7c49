"""`run_study(...)`: what pretraining is worth downstream, the function behind
`python -m electra_tf.study`.

Steps, each skipped when already done (rerun the same call after an interruption):
  1. the data directory (`study.data.prepare_data`): corpus, task, vocabulary, records;
  2. ELECTRA and the MLM baseline at equal FLOPs, checkpoints at the listed steps
     (`study.pretraining`);
  3. the fine-tuning grid over every checkpoint and the random initialisation
     (`study.grid`), one line per trial in results.jsonl;
  4. the report (`study.report.write_report`): summary.json, table.md, accuracy_vs_flops.png.

output_dir holds study.json (the settings; a rerun with other pretraining or fine-tuning
settings is refused, since finished pieces would not match; label counts, seeds, learning
rates and objectives may change), pretrain/{electra,mlm}/, finetune/<encoder>/<n>/lr<lr>_seed<k>/
and the report.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Sequence

from absl import logging

from electra_tf.config import read_recipe
from electra_tf.study import (data as data_lib, grid, plan, pretraining, report, results,
                              reuse)
from electra_tf.study.plan import STUDY_FILE, StudyError
from electra_tf.training.callbacks import with_preemption

# Settings a finished piece depends on: a rerun must keep them.
FIXED_SETTINGS = ("data_dir", "pretrain_config", "overrides", "checkpoints", "schedule_steps",
                  "max_seq_length",
                  "finetune_config", "finetune_overrides", "min_finetune_steps",
                  "finetune_max_seq_length", "pretraining_from")


@dataclasses.dataclass
class StudyResult:
    """What a `run_study` call did: status "finished", "pretrained" (pretrain_only) or
    "preempted" (SIGTERM; rerun to continue); the report's paths and table (None before any
    trial finished); the encoders fine-tuned."""

    status: str
    output_dir: str
    encoders: list
    results: str | None = None
    summary: str | None = None
    table: str | None = None
    plot: str | None = None
    table_text: str | None = None


def _check_settings(output_dir: str, settings: dict) -> None:
    """Refuses an output_dir whose finished pieces were made with other settings."""
    path = os.path.join(output_dir, STUDY_FILE)
    if not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as f:
        previous = json.load(f).get("settings", {})
    for key in FIXED_SETTINGS:
        if key in previous and previous[key] != settings[key]:
            raise StudyError(f"{output_dir} holds a study with {key} {previous[key]!r}, now "
                             f"{settings[key]!r}: its finished pieces would not match. Use "
                             "another --output_dir, or the same settings to resume")


def _write_study_file(output_dir: str, settings: dict, runs, data) -> None:
    path = os.path.join(output_dir, STUDY_FILE)
    content = {"settings": settings, "data": dataclasses.asdict(data),
               "pretraining": [dataclasses.asdict(run) for run in runs]}
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(content, f, indent=1)
    os.replace(path + ".tmp", path)


@with_preemption
def run_study(*, data_dir: str = "data/debian", output_dir: str = "runs/study",
              pretrain_config: str = "pretrain/study", overrides: Sequence[str] = (),
              checkpoints: Sequence[int] = (500, 2000, 8000), schedule_steps: int | None = None,
              labels: Sequence[int | str] = (100, 300, 1000, "all"), seeds: int = 5,
              learning_rates: Sequence[float] = (3e-4, 1e-3, 3e-3),
              finetune_config: str = "finetune/small", finetune_overrides: Sequence[str] = (),
              min_finetune_steps: int = 100, finetune_max_seq_length: int = 128,
              objectives: Sequence[str] = ("electra", "mlm"), vocab_size: int = 8000,
              max_seq_length: int = 128, pretrain_only: bool = False,
              keep_finetune_checkpoints: bool = False, random_from: str | None = None,
              pretraining_from: str | None = None, preemption=None) -> StudyResult:
    """Runs (or resumes) the study and writes its report; see the module docstring.

    Args:
      data_dir: the corpus and task (`study.data`); what it lacks is built there.
      output_dir: the study's runs, results.jsonl and report.
      pretrain_config, overrides: the recipe and "section.key=value" overrides of both
        pretraining runs (run.max_seq_length is set to `max_seq_length` before them).
      checkpoints: ELECTRA steps of the encoders, multiples of the first; the last is the
        run's length. The MLM baseline gets the same FLOPs at each.
      schedule_steps: ELECTRA steps the learning-rate schedule spans (None: the last
        checkpoint). More makes the runs the first part of longer ones, so that a later study
        with more checkpoints and the same schedule_steps continues them.
      labels: training-set sizes to fine-tune on, "all" for the whole set.
      seeds: fine-tuning seeds per encoder and label count (seed 0 also chooses the rate).
      learning_rates: the grid seed 0 runs over.
      finetune_config, finetune_overrides: the fine-tuning recipe and its overrides.
      min_finetune_steps: epochs = max(3, ceil(min_finetune_steps * batch / n)); 3 for "all".
      finetune_max_seq_length: tokens per fine-tuning example.
      objectives: "electra" and/or "mlm" (the baseline).
      vocab_size: of the vocabulary learned when data_dir has no vocab.txt.
      max_seq_length: of the pretraining records (records<L>/, heldout<L>/ in data_dir).
      pretrain_only: stop after pretraining.
      keep_finetune_checkpoints: keep each trial's final checkpoint (default: deleted once
        the trial's results are written; results.json keeps it from being rerun).
      random_from: another study's directory whose random-initialisation trials this one
        reuses (`study.reuse`: same data, fine-tuning settings and encoder sizes, or refused).
      pretraining_from: another study's directory whose pretraining runs this one fine-tunes
        instead of pretraining (`study.reuse`: same data and pretraining settings, every
        checkpoint and objective finished there, or refused).
      preemption: a `callbacks.Preemption` installed earlier (SIGTERM: stop, rerun to resume).
    """
    checkpoints = plan.parse_checkpoints(checkpoints)
    schedule_steps = plan.parse_schedule_steps(schedule_steps, checkpoints)
    label_counts = plan.parse_label_counts(labels)
    learning_rates = plan.parse_learning_rates(learning_rates)
    objectives = plan.parse_objectives(objectives)
    if seeds < 1:
        raise StudyError(f"--seeds must be at least 1, got {seeds}")
    if min_finetune_steps < 1:
        raise StudyError(f"--min_finetune_steps must be at least 1, got {min_finetune_steps}")
    if os.path.exists(output_dir) and not os.path.isdir(output_dir):
        raise StudyError(f"--output_dir {output_dir} is an existing file")
    overrides = [f"run.max_seq_length={max_seq_length}", *overrides]
    settings = {"data_dir": os.path.abspath(data_dir), "pretrain_config": pretrain_config,
                "overrides": overrides, "checkpoints": list(checkpoints),
                "schedule_steps": schedule_steps,
                "max_seq_length": max_seq_length, "finetune_config": finetune_config,
                "finetune_overrides": list(finetune_overrides),
                "min_finetune_steps": min_finetune_steps,
                "finetune_max_seq_length": finetune_max_seq_length,
                "objectives": list(objectives), "labels": [str(n) for n in label_counts],
                "seeds": seeds, "learning_rates": list(learning_rates),
                "pretraining_from": pretraining_from and os.path.abspath(pretraining_from)}
    _check_settings(output_dir, settings)
    if random_from:  # checked before anything is built
        reuse.check_compatible(reuse.read_settings(random_from), settings, random_from)
    if pretraining_from:
        reuse.check_pretraining_compatible(
            reuse.read_settings(pretraining_from, "--pretraining_from"), settings,
            pretraining_from)
    finetune_recipe = read_recipe(finetune_config)  # once, for every trial; refused here

    data = data_lib.prepare_data(data_dir, vocab_size, max_seq_length)
    runs = pretraining.plan_runs(pretrain_config, overrides, data, checkpoints, objectives,
                                 schedule_steps)
    for run in runs:
        logging.info("%s: %d steps of %.3g FLOPs; encoders at steps %s (%s FLOPs)",
                     run.objective, run.train_steps, run.step_flops,
                     ", ".join(map(str, run.encoder_steps)),
                     ", ".join(f"{run.flops(s):.3g}" for s in run.encoder_steps))
    os.makedirs(output_dir, exist_ok=True)
    _write_study_file(output_dir, settings, runs, data)
    encoders = pretraining.pretrain_all(runs, pretrain_config, overrides, data, output_dir,
                                        preemption, pretraining_from)
    if encoders is None:
        logging.info("preempted during pretraining; rerun the same command to continue")
        return StudyResult("preempted", output_dir, [])
    if pretrain_only:
        return StudyResult("pretrained", output_dir, encoders)
    if random_from:
        copied = reuse.reuse_random_trials(output_dir, random_from, settings)
        logging.info("reused %d random-initialisation trials of %s", copied, random_from)
    grid_settings = grid.GridSettings(
        label_counts=label_counts, seeds=seeds, learning_rates=learning_rates,
        config=finetune_recipe, overrides=tuple(finetune_overrides),
        min_steps=min_finetune_steps, max_seq_length=finetune_max_seq_length,
        keep_checkpoints=keep_finetune_checkpoints)
    finished = grid.run_grid(encoders, data, grid_settings, output_dir, preemption)
    status = "finished" if finished else "preempted"
    if not finished:
        logging.info("preempted during fine-tuning; rerun the same command to continue")
    if not results.read_records(output_dir):
        return StudyResult(status, output_dir, encoders)
    paths = report.write_report(output_dir)
    return StudyResult(status, output_dir, encoders, results=results.results_path(output_dir),
                       summary=paths["summary"], table=paths["table"], plot=paths["plot"],
                       table_text=paths["text"])
