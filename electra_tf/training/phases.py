"""Pretraining in phases: BERT's and NVIDIA's 128 -> 512 schedule as one run.

A recipe lists its phases under `phases:`. Each phase is the recipe with the phase's `run:` and
`optimizer:` values on top (then the command line's overrides), trained on its own records:

    include: pretrain/electra_base
    phases:
      - run: {max_seq_length: 128, train_batch_size: 8192}
        optimizer: {learning_rate: 6e-3, warmup_steps: 2000, train_steps: 10000}
      - run: {max_seq_length: 512, train_batch_size: 2048, gradient_accumulation_steps: 8}
        optimizer: {learning_rate: 4e-3, warmup_steps: 200, train_steps: 930}
        data: gs://bucket/records_512/*     # or --phase_data 2=... on the command line

The model and the objective are the recipe's in every phase, so the position table is as long as
the longest phase from the start: the rows beyond phase 1's length stay at their initial values
until a longer phase trains them. Phase k+1 starts from phase k's last weights with a fresh
optimizer and its own schedule (its steps count from 0), as NVIDIA's phase 2 does.

Layout: phase k of n (k < n) is an ordinary run directory at `<model_dir>/phases/<k>`; the last
phase is `<model_dir>` itself, so fine-tuning, export and conversion find the finished model where
they find any run's. A rerun continues: phases whose last checkpoint is at their last step are
done, the first that is not resumes (or starts from the previous phase's weights).
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Mapping

import tensorflow as tf

from electra_tf.config import ConfigError, OptimizerConfig, Recipe, RunConfig, read_recipe

PHASE_SECTIONS = {"run": RunConfig, "optimizer": OptimizerConfig}
PHASE_DATA_KEYS = ("data", "eval_data")


@dataclasses.dataclass(frozen=True)
class Phase:
    """One phase of a recipe: its number (from 1), its config values as override strings
    ("run.max_seq_length=512", applied before the command line's), and its records (None: the
    run's --data / --eval_data)."""

    number: int
    overrides: tuple[str, ...]
    data: str | None = None
    eval_data: str | None = None

    def label(self, count: int) -> str:
        return f"phase {self.number} of {count}"


def read_phases(recipe: str | Recipe) -> list[Phase] | None:
    """The phases of a recipe (read, or a path or name under configs/), or None for a
    one-phase recipe. ConfigError for a `phases:` that is not a non-empty list of mappings of
    `run:`, `optimizer:`, `data:` and `eval_data:`."""
    found = (recipe if isinstance(recipe, Recipe) else read_recipe(recipe)).phases
    if found is None:
        return None
    source, value = found
    if not isinstance(value, list) or not value:
        raise ConfigError(f"phases: in {source} must be a non-empty list of phases, got "
                          f"{value!r}")
    return [_parse_phase(number, entry, source) for number, entry in enumerate(value, 1)]


def _parse_phase(number: int, entry: Any, source: str) -> Phase:
    where = f"phase {number} in {source}"
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where} must be a mapping (run:, optimizer:, data:, eval_data:), "
                          f"got {entry!r}")
    overrides = []
    for key, values in entry.items():
        if key in PHASE_DATA_KEYS:
            continue
        if key not in PHASE_SECTIONS:
            raise ConfigError(f"{where}: unknown key {key!r} (a phase sets run:, optimizer:, "
                              "data: and eval_data:; the model and the objective are the "
                              "recipe's, the same in every phase)")
        if not isinstance(values, Mapping):
            raise ConfigError(f"{where}: {key}: must be a mapping")
        known = {f.name for f in dataclasses.fields(PHASE_SECTIONS[key])}
        for name, value in values.items():
            if name not in known:
                raise ConfigError(f"{where}: unknown config key '{key}.{name}' (known keys in "
                                  f"'{key}': {', '.join(sorted(known))})")
            overrides.append(f"{key}.{name}={json.dumps(value)}")
    data = {key: entry.get(key) for key in PHASE_DATA_KEYS}
    for key, value in data.items():
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"{where}: {key}: must be a file pattern, got {value!r}")
    return Phase(number, tuple(overrides), **data)


def with_command_line_data(phases: list[Phase], phase_data: Mapping[int, str],
                           phase_eval_data: Mapping[int, str]) -> list[Phase]:
    """The phases with `--phase_data N=...` / `--phase_eval_data N=...` in place of the
    recipe's records. ConfigError for a phase number the recipe does not have."""
    for flag, given in (("--phase_data", phase_data), ("--phase_eval_data", phase_eval_data)):
        unknown = sorted(set(given) - {phase.number for phase in phases})
        if unknown:
            raise ConfigError(f"{flag} names phase {unknown[0]}, but the recipe has phases "
                              f"1 to {len(phases)}")
    return [dataclasses.replace(phase, data=phase_data.get(phase.number, phase.data),
                                eval_data=phase_eval_data.get(phase.number, phase.eval_data))
            for phase in phases]


def check_lengths(phases: list[Phase], lengths: list[int]) -> None:
    """ConfigError unless the phases' sequence lengths never go down (a phase list out of
    order: the longer sequences come last)."""
    for phase, previous, length in zip(phases[1:], lengths, lengths[1:]):
        if length < previous:
            raise ConfigError(f"phase {phase.number} trains at max_seq_length {length}, shorter "
                              f"than phase {phase.number - 1}'s {previous}: phases go from short "
                              "sequences to long ones")


def phase_directory(model_dir: str, number: int, count: int) -> str:
    """Where phase `number` of `count` writes: the last phase in model_dir itself."""
    if number == count:
        return model_dir
    return os.path.join(model_dir, "phases", str(number))


def checkpoint_step(checkpoint_dir: str) -> int:
    """The step of the newest checkpoint in checkpoint_dir (0 when there is none)."""
    latest = tf.train.latest_checkpoint(checkpoint_dir)
    return int(latest.rsplit("-", 1)[1]) if latest else 0


def parse_phase_flag(values: list[str], flag: str) -> dict[int, str]:
    """{phase number: pattern} from repeated `N=PATTERN` flag values."""
    parsed = {}
    for value in values:
        number, sep, pattern = value.partition("=")
        if not sep or not number.strip().isdigit() or not pattern.strip():
            raise ConfigError(f"{flag} {value!r} is not of the form N=PATTERN (e.g. "
                              f"{flag} 2=gs://bucket/records_512/*)")
        parsed[int(number)] = pattern.strip()
    return parsed
