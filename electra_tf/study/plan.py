"""The study's plan as plain data: pretraining checkpoints, the MLM baseline's equal-FLOPs
steps, the fine-tuning grid (label counts, seeds, learning rates, epochs) and the names and
directories of its pieces. Pure Python (no TensorFlow), so it is cheap to test and to check
before anything runs.
"""

from __future__ import annotations

import dataclasses
import math
import os
import random

from electra_tf.errors import UserError
from electra_tf.pretraining_data.batch_growth import BatchGrowth

ALL = "all"  # the label count meaning "the whole training set"
OBJECTIVES = ("electra", "mlm")
RANDOM = "random"  # the encoder without pretraining
STUDY_FILE = "study.json"  # a study directory's settings, data and pretraining plans
MIN_EPOCHS = 3  # the original's epochs for every GLUE classification task but RTE


class StudyError(UserError):
    """A study that cannot run as asked (bad flags, data or a changed output directory)."""


# ---------------------------------------------------------------------------------------------
# Flags -> values


def parse_checkpoints(values) -> tuple[int, ...]:
    """ELECTRA steps of the encoders to fine-tune: positive, increasing, multiples of the first
    (the run saves every `first` steps; the last is the run's length)."""
    try:
        steps = tuple(int(v) for v in values)
    except (TypeError, ValueError):
        raise StudyError(f"--checkpoints must be whole numbers of steps, got {values}") from None
    if not steps:
        raise StudyError("--checkpoints needs at least one step")
    if steps[0] <= 0 or any(b <= a for a, b in zip(steps, steps[1:])):
        raise StudyError(f"--checkpoints must be positive and increasing, got {list(steps)}")
    bad = [s for s in steps if s % steps[0]]
    if bad:
        raise StudyError(f"--checkpoints must be multiples of the first ({steps[0]}): "
                         f"{', '.join(map(str, bad))} is not")
    return steps


def parse_label_counts(values) -> tuple[int | str, ...]:
    """Training-set sizes: positive numbers, smallest first, and "all" (the whole set) last."""
    counts, with_all = set(), False
    for value in values:
        text = str(value).strip().lower()
        if text == ALL:
            with_all = True
            continue
        try:
            count = int(text)
        except ValueError:
            raise StudyError(f"--labels takes numbers of training examples or 'all', got "
                             f"{value!r}") from None
        if count <= 0:
            raise StudyError(f"--labels must be positive, got {count}")
        counts.add(count)
    if not counts and not with_all:
        raise StudyError("--labels needs at least one label count")
    return tuple(sorted(counts)) + ((ALL,) if with_all else ())


def parse_learning_rates(values) -> tuple[float, ...]:
    try:
        rates = tuple(float(v) for v in values)
    except (TypeError, ValueError):
        raise StudyError(f"--learning_rates must be numbers, got {values}") from None
    if not rates or any(not rate > 0 for rate in rates):
        raise StudyError(f"--learning_rates must be positive numbers, got {values}")
    if len(set(rates)) != len(rates):
        raise StudyError(f"--learning_rates lists a rate twice: {values}")
    return rates


def parse_objectives(values) -> tuple[str, ...]:
    objectives = tuple(dict.fromkeys(str(v).strip().lower() for v in values))
    unknown = [o for o in objectives if o not in OBJECTIVES]
    if unknown or not objectives:
        raise StudyError(f"--objectives takes {' and '.join(OBJECTIVES)}, got {list(values)}")
    return tuple(o for o in OBJECTIVES if o in objectives)


# ---------------------------------------------------------------------------------------------
# Pretraining


@dataclasses.dataclass(frozen=True)
class PretrainingPlan:
    """One pretraining run: its steps, checkpoint cadence and the steps kept as encoders, and
    the steps its learning-rate schedule spans (more than it trains when the study's runs are
    the first part of longer ones)."""

    objective: str  # "electra" or "mlm"
    train_steps: int
    save_every: int  # run.save_checkpoints_steps
    keep: int  # run.keep_checkpoint_max: every encoder step survives (plus one spare save)
    encoder_steps: tuple[int, ...]
    step_flops: float  # at the full batch
    schedule_steps: int  # optimizer.train_steps: train_steps or more
    growth: BatchGrowth | None = None  # a batch that grows (run.batch_growth_steps)

    def flops(self, step: int) -> float:
        """The FLOPs of steps 0 .. step - 1 (fewer than step x step_flops while the batch
        grows)."""
        if self.growth is None:
            return step * self.step_flops
        full_batch = self.growth.final * self.growth.micro_batch
        return self.growth.sequences_before(step) / full_batch * self.step_flops


def parse_schedule_steps(value, checkpoints: tuple[int, ...]) -> int:
    """ELECTRA steps the learning-rate schedule spans: the last checkpoint (None or 0) or more
    (the runs are then the first checkpoints[-1] steps of longer ones)."""
    if not value:
        return checkpoints[-1]
    try:
        steps = int(value)
    except (TypeError, ValueError):
        raise StudyError(f"--schedule_steps must be a whole number of steps, got {value!r}"
                         ) from None
    if steps < checkpoints[-1]:
        raise StudyError(f"--schedule_steps ({steps}) must be at least the last checkpoint "
                         f"({checkpoints[-1]})")
    return steps


def electra_plan(checkpoints: tuple[int, ...], step_flops: float,
                 schedule_steps: int | None = None,
                 growth: BatchGrowth | None = None) -> PretrainingPlan:
    first, last = checkpoints[0], checkpoints[-1]
    return PretrainingPlan("electra", last, first, last // first + 1, checkpoints, step_flops,
                           schedule_steps or last, growth)


def mlm_plan(checkpoints: tuple[int, ...], electra_step_flops: float,
             mlm_step_flops: float, schedule_steps: int | None = None,
             growth: BatchGrowth | None = None) -> PretrainingPlan:
    """The MLM baseline at ELECTRA's FLOPs: total round(last * ratio) steps, saves every
    round(first * ratio), so its encoders sit at the same fractions of its run as ELECTRA's
    (ratio = ELECTRA's step FLOPs / the MLM's); its schedule spans round(schedule_steps *
    ratio) steps, and a growing batch (ELECTRA's `growth`) grows over round(growth.steps *
    ratio) steps. Each encoder's FLOPs are its exact steps x step FLOPs (summed over the
    growing batches); the last matches ELECTRA's last to within about an MLM step."""
    ratio = electra_step_flops / mlm_step_flops
    first, last = checkpoints[0], checkpoints[-1]
    schedule = max(1, round((schedule_steps or last) * ratio))
    every = max(1, round(first * ratio))
    total = max(1, round(last * ratio))
    steps = tuple(step // first * every for step in checkpoints[:-1]) + (total,)
    if any(b <= a for a, b in zip(steps, steps[1:])):
        raise StudyError(f"the MLM baseline's checkpoints at equal FLOPs ({list(steps)}, "
                         f"{ratio:.3f} MLM steps per ELECTRA step) are not increasing: space "
                         "--checkpoints further apart")
    keep = total // every + (1 if total % every else 0) + 1
    if growth is not None:
        growth = dataclasses.replace(growth, steps=max(1, round(growth.steps * ratio)))
    return PretrainingPlan("mlm", total, every, keep, steps, mlm_step_flops, max(schedule, total),
                           growth)


# ---------------------------------------------------------------------------------------------
# Encoders and trials


@dataclasses.dataclass(frozen=True)
class Encoder:
    """An encoder to fine-tune: a pretraining checkpoint, or the random initialisation."""

    objective: str  # "electra", "mlm" or "none"
    step: int  # pretraining steps (0 for the random initialisation)
    flops: float  # pretraining FLOPs (steps x step FLOPs)
    checkpoint: str | None  # checkpoint prefix (RUN/checkpoints/ckpt-<step>), None for random

    @property
    def name(self) -> str:
        return RANDOM if self.objective == "none" else f"{self.objective}@{self.step}"

    @property
    def directory_name(self) -> str:
        return RANDOM if self.objective == "none" else f"{self.objective}_{self.step}"


def random_encoder() -> Encoder:
    return Encoder("none", 0, 0.0, None)


def format_lr(lr: float) -> str:
    """3e-4 -> "3e-4", 0.001 -> "1e-3", 2.5e-5 -> "2.5e-5" (directory names, log lines)."""
    exponent = math.floor(math.log10(lr))
    mantissa = round(lr / 10 ** exponent, 6)
    if mantissa >= 10:  # floating-point edge: 1e-3 may come out as 10e-4
        mantissa, exponent = round(mantissa / 10, 6), exponent + 1
    return f"{mantissa:g}e{exponent}"


def trial_directory(output_dir: str, encoder: Encoder, n: int | str, lr: float, seed: int) -> str:
    return os.path.join(output_dir, "finetune", encoder.directory_name, str(n),
                        f"lr{format_lr(lr)}_seed{seed}")


def trial_key(encoder_name: str, n, lr: float, seed: int) -> tuple:
    """What identifies a trial in results.jsonl."""
    return (encoder_name, str(n), format_lr(float(lr)), int(seed))


def finetune_epochs(n: int | str, batch_size: int, min_steps: int) -> int:
    """Epochs for a training set of n examples: at least MIN_EPOCHS and at least `min_steps`
    steps (a hundred examples at batch 32 would give 12 steps in 3 epochs); the whole set gets
    MIN_EPOCHS, as the original."""
    if n == ALL:
        return MIN_EPOCHS
    return max(MIN_EPOCHS, math.ceil(min_steps * batch_size / n))


def subset_seed(n: int | str, seed: int) -> int:
    """The shuffle seed of the training subset of (label count, seed index): the same for every
    encoder, so they all see the same examples."""
    return 1_000_003 * (seed + 1) + (0 if n == ALL else n)


def training_subset(train: list, n: int | str, seed: int) -> list:
    """The first n examples of the training set shuffled with `subset_seed(n, seed)`; "all":
    the whole set, in file order."""
    if n == ALL:
        return list(train)
    order = list(range(len(train)))
    random.Random(subset_seed(n, seed)).shuffle(order)
    return [train[i] for i in order[:n]]


def majority_accuracy(train_labels: list, eval_labels: list) -> float:
    """Accuracy (x100) of always predicting the most frequent training label (ties: the one
    seen first)."""
    counts: dict = {}
    for label in train_labels:
        counts[label] = counts.get(label, 0) + 1
    majority = max(counts, key=counts.get)
    return 100.0 * sum(label == majority for label in eval_labels) / len(eval_labels)
