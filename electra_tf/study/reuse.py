"""`--random_from DIR`: the no-pretraining trials of another study, reused.

Studies that vary only the pretraining (its learning rate, steps, generator) fine-tune the same
randomly initialised encoder on the same subsets with the same seeds, so their "random" trials
are the same computation. A study given another study's directory copies those trials into its
own results.jsonl instead of running them again, when everything that decides them is the same:
the data directory, the fine-tuning settings, and the encoder's sizes (the pretraining recipe
and its `model.*` overrides, less those that only shape pretraining: the generator's and
`model.embedding_sharing`, since fine-tuning builds the discriminator alone and a GDES run's is
a plain ELECTRA, and dropout, which fine-tuning sets afresh). Anything else is refused with the setting that differs.

`--pretraining_from DIR`: the other study's pretraining runs, reused. Studies that vary only
the fine-tuning (its optimizer, step floor, top-layer re-initialisation) fine-tune the same
encoders: a study given another's directory reads the encoders at its checkpoints from there
instead of pretraining again, when the data directory, the pretraining recipe and overrides,
the schedule and the sequence length are the same and the other study has every checkpoint
and objective asked for.
"""

from __future__ import annotations

import json
import os

from electra_tf.study import plan, results
from electra_tf.study.plan import STUDY_FILE, StudyError

# Settings that decide what a random-initialisation trial computes, besides the model sizes.
SAME_FOR_RANDOM = ("data_dir", "pretrain_config", "finetune_config", "finetune_overrides",
                   "min_finetune_steps", "finetune_max_seq_length")
# Settings that decide the weights of a pretraining run at a step.
SAME_FOR_PRETRAINING = ("data_dir", "pretrain_config", "overrides", "schedule_steps",
                        "max_seq_length")


# `model.*` keys that shape pretraining only, not the encoder fine-tuning builds: how it shares
# weights with the generator, and dropout (fine-tuning puts the model's 0.1 back,
# `config.with_fine_tuning_dropout`, so a pretraining without dropout fine-tunes with it).
PRETRAINING_ONLY_MODEL_KEYS = ("model.embedding_sharing", "model.hidden_dropout",
                               "model.attention_dropout")


def model_overrides(overrides) -> list[str]:
    """The overrides among "section.key=value" strings that size the fine-tuned encoder: the
    `model.*` ones but the generator's and the embedding sharing (fine-tuning builds neither a
    generator nor a shared table), sorted by key (a key given twice keeps its order)."""
    return sorted((o for o in overrides
                   if o.strip().startswith("model.") and "generator" not in _override_key(o)
                   and _override_key(o) not in PRETRAINING_ONLY_MODEL_KEYS),
                  key=_override_key)


def _override_key(override: str) -> str:
    return override.split("=", 1)[0].strip()


def read_settings(study_dir: str, flag: str = "--random_from") -> dict:
    path = os.path.join(study_dir, STUDY_FILE)
    if not os.path.exists(path):
        raise StudyError(f"{flag} {study_dir}: no {STUDY_FILE} there (not a study "
                         "directory)")
    with open(path, encoding="utf-8") as f:
        return json.load(f).get("settings", {})


def check_compatible(other: dict, settings: dict, other_dir: str) -> None:
    """Raises StudyError naming the first setting in which the other study's random trials
    would differ from this one's."""
    for key in SAME_FOR_RANDOM:
        if other.get(key) != settings.get(key):
            raise StudyError(f"--random_from {other_dir}: its {key} is {other.get(key)!r}, this "
                             f"study's {settings.get(key)!r}; its random-initialisation trials "
                             "would not be this study's")
    mine, theirs = (model_overrides(settings.get("overrides", ())),
                    model_overrides(other.get("overrides", ())))
    if mine != theirs:
        raise StudyError(f"--random_from {other_dir}: its model overrides are {theirs}, this "
                         f"study's {mine}: the encoders differ in size")


def check_pretraining_compatible(other: dict, settings: dict, other_dir: str) -> None:
    """Raises StudyError naming the first setting in which the other study's pretraining
    differs from the one this study would run, or the checkpoint or objective it lacks."""
    for key in SAME_FOR_PRETRAINING:
        if other.get(key) != settings.get(key):
            raise StudyError(f"--pretraining_from {other_dir}: its {key} is {other.get(key)!r}, "
                             f"this study's {settings.get(key)!r}; its encoders would not be "
                             "this study's")
    for key, noun in (("checkpoints", "checkpoints"), ("objectives", "objectives")):
        missing = [value for value in settings.get(key, ()) if value not in other.get(key, ())]
        if missing:
            raise StudyError(f"--pretraining_from {other_dir}: it has no {noun} "
                             f"{', '.join(map(str, missing))} (its {noun}: "
                             f"{', '.join(map(str, other.get(key, ())))})")


def reuse_random_trials(output_dir: str, other_dir: str, settings: dict) -> int:
    """Appends to output_dir's results.jsonl the other study's random-initialisation trials
    that it lacks (each marked "reused_from", its directory relative to output_dir). Returns
    how many were copied."""
    if os.path.abspath(other_dir) == os.path.abspath(output_dir):
        return 0
    check_compatible(read_settings(other_dir), settings, other_dir)
    done = results.read_results(output_dir)
    copied = 0
    for record in results.read_records(other_dir):
        if record.get("encoder") != plan.RANDOM:
            continue
        key = plan.trial_key(record["encoder"], record["n"], record["lr"], record["seed"])
        if key in done:
            continue
        record = dict(record, reused_from=os.path.abspath(other_dir))
        if record.get("directory"):
            record["directory"] = os.path.relpath(os.path.join(other_dir, record["directory"]),
                                                  output_dir)
        results.append_result(output_dir, record)
        done[key] = record
        copied += 1
    return copied
