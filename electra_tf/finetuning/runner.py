"""One fine-tuning run: N trials of train -> evaluate on dev -> export -> predict, with the
pretraining run's machinery (strategies, checkpoints and resume, SIGTERM, NaN guard, progress
lines, TensorBoard).

Layout of `model_dir` (one trial: the trial's files directly in it; the names are
`electra_tf.run_directory`'s):
  config.yaml                        the resolved fine-tuning config
  report.json                        every trial's dev metrics, median / mean / std
  trial_<k>/task.json, config.yaml, checkpoints/, tensorboard/, results.json, export/<step>/,
            predictions/
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import statistics
import time

import keras
import tensorflow as tf
from absl import logging

from electra_tf import run_directory, run_lock
from electra_tf.config import FinetuneConfig, check_accumulation
from electra_tf.export.staging import write_staged
from electra_tf.finetuning import kinds
from electra_tf.finetuning.common import FinetuneError, TaskJob
from electra_tf.finetuning.source import EncoderSource, restore_encoder
from electra_tf.models.replicated import ReplicatedModel
from electra_tf.training import callbacks, loop
from electra_tf.training.optimizer import create_optimizer


def featurize_task(task, config: FinetuneConfig, vocab_file: str, work_dir: str = "") -> TaskJob:
    """The task's job, made by its kind (`kinds.py`); SQuAD writes its training windows under
    `work_dir`."""
    return kinds.kind_of(task).make_job(task, config, vocab_file, work_dir)


def steps_for(job: TaskJob, config: FinetuneConfig) -> tuple[int, int, int]:
    """(steps per epoch, total steps, warmup steps) as the original: the train set padded to
    a multiple of the batch, times the epochs; warmup a proportion of the total. Without
    finetune.num_train_epochs, a training set too small for finetune.min_train_steps in the
    task's epochs gets whole epochs more until it has them."""
    epochs = config.finetune.num_train_epochs or job.default_epochs
    per_epoch = math.ceil(job.num_train / config.finetune.train_batch_size)
    total = max(1, int(per_epoch * epochs))
    if config.finetune.num_train_epochs is None and total < config.finetune.min_train_steps:
        total = per_epoch * math.ceil(config.finetune.min_train_steps / per_epoch)
    return per_epoch, total, int(total * config.finetune.warmup_proportion)


# Below this sum of peak learning rate over steps, a run barely moves a fresh head. Measured
# (docs/pretraining_value.md): 200 labels at finetune/small's lr 1e-4 for 20 epochs (0.014)
# stays at chance, 300 labels at 1e-3 for 10 epochs (0.1) learns; the original's GLUE runs sit
# at 0.03 (MRPC on Base) and above.
MIN_LR_STEPS = 0.02


def short_run_warning(total_steps: int, learning_rate: float, num_train: int,
                      batch_size: int) -> str | None:
    """A warning for a run too short to learn, with the epochs that would reach MIN_LR_STEPS at
    this learning rate; None when the run is long enough."""
    if total_steps * learning_rate >= MIN_LR_STEPS:
        return None
    per_epoch = math.ceil(num_train / batch_size)
    epochs = math.ceil(MIN_LR_STEPS / learning_rate / per_epoch)
    return (f"fine-tuning for only {total_steps} steps at learning rate {learning_rate:g} "
            f"({num_train} training examples): a run this short often stays at the majority "
            f"class. Raise finetune.num_train_epochs (to about {epochs} at this rate) or "
            f"optimizer.learning_rate (small models take 1e-3)")


def describe_recipe(config: FinetuneConfig) -> str:
    """The fine-tuning settings that matter most, for the log: the default recipe picks the
    learning rate and layer-wise decay from the encoder's size."""
    optimizer, run, model = config.optimizer, config.finetune, config.model
    return (f"recipe for a {model.num_layers}-layer, {model.hidden_size}-wide encoder: "
            f"{optimizer.name} at learning rate {optimizer.learning_rate:g}, layer-wise decay "
            f"{optimizer.layerwise_lr_decay:g}, weight decay {optimizer.weight_decay:g}, batch "
            f"{run.train_batch_size}, warmup {run.warmup_proportion:.0%}"
            + (f", {ReplicatedModel.parallel_chains} chains side by side"  # --cpu_chains
               if ReplicatedModel.parallel_chains > 1 else ""))


class DevEvaluation(keras.callbacks.Callback):
    """Dev metrics every `every` steps and at the last one: log line, TensorBoard, history."""

    def __init__(self, evaluate_all, total_steps: int, initial_step: int, every: int,
                 log_dir: str, history: list, on_result=None):
        super().__init__()
        self.evaluate_all = evaluate_all
        self.total_steps = total_steps
        self.initial_step = initial_step
        self.every = every
        self.writers = {}
        self.log_dir = log_dir
        self.history = history
        self.on_result = on_result

    def on_train_batch_end(self, batch, logs=None):
        step = self.initial_step + batch + 1
        if step != self.total_steps and step % self.every:
            return
        results = self.evaluate_all()
        self.history.append({"step": step, **results})
        for split, metrics in results.items():
            logging.info("%s at step %d: %s", split, step,  # "dev", "dev_matched", ...
                         "  ".join(f"{k} {v:.2f}" for k, v in metrics.items()))
            if split not in self.writers:
                self.writers[split] = tf.summary.create_file_writer(os.path.join(self.log_dir, split))
            callbacks.write_scalars(self.writers[split], step, metrics)
        if self.on_result is not None:
            self.on_result()


def _best_and_last(history: list, split: str, headline: str) -> dict:
    entries = [(h["step"], h[split]) for h in history if split in h]
    best_step, best = max(entries, key=lambda e: e[1][headline])
    last_step, last = entries[-1]
    return {"best": {"step": best_step, **best}, "last": {"step": last_step, **last}}


def run_trial(job: TaskJob, config: FinetuneConfig, trial_dir: str, seed: int, *,
              source: EncoderSource | None, strategy, jit_compile: bool,
              preemption: callbacks.Preemption, export: bool = True,
              with_tokenizer: bool = False, do_predict: bool = False) -> dict:
    """Trains, evaluates and exports one trial; returns its results (also in results.json).

    A finished trial (results.json with status "finished") is not run again.
    """
    results_path = os.path.join(trial_dir, run_directory.RESULTS)
    previous = run_directory.read_json(results_path) or {}
    if previous.get("status") == "finished":
        logging.info("%s is finished; keeping its results", trial_dir)
        return previous
    run = config.finetune
    check_accumulation(run.train_batch_size, run.gradient_accumulation_steps, "finetune",
                       strategy.num_replicas_in_sync, ReplicatedModel.parallel_chains)
    per_epoch, total, warmup = steps_for(job, config)
    optimizer_config = dataclasses.replace(config.optimizer, train_steps=total, warmup_steps=warmup)
    tf.io.gfile.makedirs(trial_dir)
    history = list(previous.get("history", []))
    headline = job.headline
    results = {"task": job.name, "seed": seed, "steps": total, "steps_per_epoch": per_epoch,
               "warmup_steps": warmup, "train_examples": job.num_train,
               "init_checkpoint": source.checkpoint if source else None, "headline": headline,
               "history": history, "status": "running"}

    def evaluate_all(model):
        return job.evaluate(model, run.eval_batch_size,
                            os.path.join(trial_dir, run_directory.PREDICTIONS, "dev"))

    def save_results():
        run_directory.write_json(results_path, results)

    def initialize(model):
        history.clear()  # a fresh start: the previous call's evaluations are not this run's
        if source is not None:
            restore_encoder(model.encoder, source)
            logging.info("encoder initialised from %s", source.checkpoint)
        if run.reinit_top_layers:
            try:
                model.encoder.reinitialize_top_layers(run.reinit_top_layers)
            except ValueError as e:
                raise FinetuneError(f"finetune.reinit_top_layers: {e}") from None
            logging.info("the top %d transformer blocks start from a fresh initialisation",
                         run.reinit_top_layers)

    log_dir = run_directory.tensorboard_dir(trial_dir)

    def dev_evaluation(model, start):
        return [DevEvaluation(lambda: evaluate_all(model), total, start,
                              run.eval_every_steps or per_epoch, log_dir, history, save_results)]

    def build_model():
        model = job.build_model()
        model.gradient_accumulation_steps = run.gradient_accumulation_steps
        return model

    result = loop.run_training(
        strategy=strategy, seed=seed, build_model=build_model,
        make_optimizer=lambda: create_optimizer(optimizer_config, config.model.num_layers),
        jit_compile=jit_compile, checkpoint_dir=run_directory.checkpoints_dir(trial_dir),
        keep_checkpoint_max=run.keep_checkpoint_max, total_steps=total,
        save_checkpoints_steps=run.save_checkpoints_steps, log_every_steps=run.log_every_steps,
        global_batch_size=run.train_batch_size, tensorboard_dir=os.path.join(log_dir, "train"),
        preemption=preemption,
        make_dataset=lambda start: job.train_dataset(run.train_batch_size, seed, start),
        describe=lambda start: (f"fine-tuning {job.name} ({trial_dir}), seed {seed}: {total} "
                                f"steps ({per_epoch} per epoch, warmup {warmup}), batch "
                                f"{run.train_batch_size}"
                                + (f" in {run.gradient_accumulation_steps} micro-batches"
                                   if run.gradient_accumulation_steps > 1 else "")),
        initialize=initialize, make_callbacks=dev_evaluation, metric_names=job.metric_names,
        on_restored=lambda start: write_task_card(trial_dir, job, config))
    model, run_checkpoint = result.model, result.checkpoint
    if result.status == "non_finite":
        raise FinetuneError(f"the loss became non-finite at step {result.step} of {trial_dir}; "
                            f"stopped without saving (last good checkpoint: "
                            f"{run_checkpoint.latest or 'none'})")
    if result.status == "preempted":
        results["status"] = "preempted"
        save_results()
        return results
    if not history or history[-1]["step"] != total:  # resumed at the end: evaluate once more
        history.append({"step": total, **evaluate_all(model)})
    results["dev"] = {split: _best_and_last(history, split, headline) for split in history[-1]
                      if split != "step"}
    if export:
        export_dir = os.path.join(run_directory.export_dir(trial_dir), str(total))
        results["export"] = write_staged(
            export_dir, lambda staging: job.export(model, staging, with_tokenizer))
    if do_predict:
        output_dir = os.path.join(trial_dir, run_directory.PREDICTIONS)
        tf.io.gfile.makedirs(output_dir)
        results["predictions"] = job.write_predictions(model, output_dir, run.eval_batch_size)
    results["status"] = "finished"
    save_results()
    return results


def write_task_card(trial_dir: str, job: TaskJob, config: FinetuneConfig) -> None:
    """What `export_savedmodel` and `electra_tf.load` need to rebuild a fine-tuned checkpoint
    (the task, its labels, ...: `run_directory.read_task_card`) and the resolved config."""
    run_directory.write_task_card(trial_dir, job.card())
    run_directory.write_config(trial_dir, config)


def summarize(trials: list[dict], job: TaskJob) -> dict:
    """Per-trial headline values (last evaluation, as the original reports) and their median,
    mean and standard deviation over trials, per dev split."""
    summary = {"task": job.name, "trials": len(trials), "headline": job.headline, "dev": {}}
    splits = next((t["dev"] for t in trials if t.get("status") == "finished"), {})
    for split in splits:
        values = [t["dev"][split]["last"][summary["headline"]] for t in trials
                  if t.get("status") == "finished"]
        if values:
            summary["dev"][split] = {
                "values": values, "median": statistics.median(values),
                "mean": statistics.fmean(values),
                "std": statistics.stdev(values) if len(values) > 1 else 0.0}
    return summary


@callbacks.with_preemption
def run_trials(task, config: FinetuneConfig, model_dir: str, *,
               source: EncoderSource | None = None, num_trials: int = 1, strategy=None,
               jit_compile: bool = False, export: bool = True, with_tokenizer: bool = False,
               do_predict: bool = False, preemption: callbacks.Preemption | None = None) -> dict:
    """Fine-tunes `num_trials` times (seeds config.finetune.seed + k) from the same encoder.

    `source`: the pretrained encoder (`resolve_source`), or None to train from scratch; `config`
    should come from `api.resolve_finetune_config`, which checks it fits the source. Returns
    the report (also `model_dir/report.json`) with every trial's results.
    """
    if num_trials < 1:
        raise FinetuneError(f"num_trials must be at least 1, got {num_trials}")
    started = time.time()
    vocab_file = config.finetune.vocab_file or (source.vocab_file if source else None)
    if not vocab_file:
        raise FinetuneError("no vocabulary: the init checkpoint has none beside it; give "
                            "--vocab_file (finetune.vocab_file)")
    config = dataclasses.replace(
        config, finetune=dataclasses.replace(config.finetune, vocab_file=vocab_file)).validate()
    strategy = strategy or tf.distribute.get_strategy()
    check_accumulation(config.finetune.train_batch_size, config.finetune.gradient_accumulation_steps,
                       "finetune", strategy.num_replicas_in_sync, ReplicatedModel.parallel_chains)
    is_chief = strategy.extended.should_checkpoint  # one writer per directory: the chief
    with run_lock.hold(model_dir) if is_chief else contextlib.nullcontext():
        return _run_trials(task, config, model_dir, vocab_file, source=source,
                           num_trials=num_trials, strategy=strategy, jit_compile=jit_compile,
                           export=export, with_tokenizer=with_tokenizer, do_predict=do_predict,
                           preemption=preemption, started=started)


def _run_trials(task, config: FinetuneConfig, model_dir: str, vocab_file: str, *, source,
                num_trials: int, strategy, jit_compile: bool, export: bool, with_tokenizer: bool,
                do_predict: bool, preemption: callbacks.Preemption, started: float) -> dict:
    tf.io.gfile.makedirs(model_dir)
    job = featurize_task(task, config, vocab_file, model_dir)
    if job.num_train < config.finetune.train_batch_size:
        raise FinetuneError(f"{job.name} has {job.num_train} training examples, "
                            f"fewer than one batch of {config.finetune.train_batch_size}")
    if num_trials > 1:  # one trial writes its config.yaml once its checkpoint is restored
        run_directory.write_config(model_dir, config)
    logging.info("%s", describe_recipe(config))
    warning = short_run_warning(steps_for(job, config)[1], config.optimizer.learning_rate,
                                job.num_train, config.finetune.train_batch_size)
    if warning:
        logging.warning("%s", warning)
    trials = []
    for k in range(num_trials):
        trial_dir = run_directory.trial_dir(model_dir, k, num_trials)
        result = run_trial(job, config, trial_dir, config.finetune.seed + k,
                           source=source, strategy=strategy, jit_compile=jit_compile,
                           preemption=preemption, export=export, with_tokenizer=with_tokenizer,
                           do_predict=do_predict)
        trials.append(result)
        if result["status"] != "finished":
            break
    report = summarize(trials, job)
    report.update(seconds=round(time.time() - started, 1), trial_results=trials,
                  status="finished" if all(t["status"] == "finished" for t in trials)
                  and len(trials) == num_trials else "preempted")
    run_directory.write_json(os.path.join(model_dir, run_directory.REPORT), report)
    return report


def format_report(report: dict, model_dir: str) -> str:
    """The closing lines of a run: the headline dev metric of every trial and their summary."""
    lines = [f"{report['task']}: {report['trials']} trial(s) in {report['seconds']:.0f} s"]
    for split, values in report["dev"].items():
        lines.append(f"{split} {report['headline']}: " + ", ".join(
            f"{v:.2f}" for v in values["values"]) + f"  (median {values['median']:.2f}, mean "
            f"{values['mean']:.2f}, std {values['std']:.2f})")
    lines += [f"run directory:  {model_dir}", f"report:         {os.path.join(model_dir, run_directory.REPORT)}"]
    exports = [t["export"] for t in report["trial_results"] if t.get("export")]
    if exports:
        lines.append(f"SavedModel:     {exports[0]}" + (f" (and {len(exports) - 1} more)"
                                                         if len(exports) > 1 else ""))
    return "\n".join(lines)
