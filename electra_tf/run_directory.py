"""The directories electra_tf writes and reads: what each kind holds, the names of its files,
how a path is recognised as one (`locate`), and how its config, vocabulary, task card, newest
checkpoint and trials are found. The code of every other module names these files through
this one (help texts and docstrings spell them out).

    pretraining run (`run_pretraining`), and the    config.yaml                 the resolved config
      output of `convert_checkpoint --to             checkpoints/ckpt-<step>*    weights by Keras path
      electra_tf` (the same layout)                  vocab.txt                   (converted, if known)
                                                     data/vocab.txt              (the demo's data)
                                                     tensorboard/, export/<step>/
                                                     run.lock (while a run writes it)
    fine-tuning run (`run_finetuning`), one trial    config.yaml, task.json (the task card: what
                                                     a trial needs to rebuild its model),
                                                     checkpoints/, results.json, report.json,
                                                     tensorboard/, export/<step>/, predictions/
    fine-tuning run of several trials                config.yaml, report.json, trial_<k>/ (each
                                                     one trial, without report.json)
    Hugging Face output (`--to hf`)                  discriminator/, generator/: config.json,
                                                     model.safetensors, vocab.txt
    keras-hub preset (`--to keras_hub`,              config.json (an ElectraBackbone's),
      `ElectraBackbone.save_to_preset`)              model.weights.h5, tokenizer.json,
                                                     assets/tokenizer/vocabulary.txt
    a `.keras` file                                  `model.save()` of any electra_tf model

It imports only the standard library, TensorFlow (`tf.io.gfile`, `tf.train.latest_checkpoint`),
PyYAML (config.yaml as plain data) and `electra_tf.errors`: the models, the loaders, the runners
and the converters all sit above it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re

import tensorflow as tf
import yaml

from electra_tf.errors import CheckpointError

# ---- names ------------------------------------------------------------------------------------

CONFIG = "config.yaml"
RUN_LOCK = "run.lock"  # while a run writes the directory: its host and pid (`run_lock`)
CHECKPOINTS = "checkpoints"
CHECKPOINT_NAME = "ckpt"  # tf.train.CheckpointManager's: checkpoints/ckpt-<step>
VOCAB = "vocab.txt"
DEMO_DATA = "data"  # the demo's corpus, vocabulary and records, inside its run directory
TENSORBOARD = "tensorboard"
EXPORT = "export"
TASK_CARD = "task.json"
TRIAL_PREFIX = "trial_"
RESULTS = "results.json"  # a fine-tuning trial's dev metrics; its status ("finished", ...)
REPORT = "report.json"  # a fine-tuning run's: every trial's results and their summary
PREDICTIONS = "predictions"

HF_DISCRIMINATOR, HF_GENERATOR = "discriminator", "generator"
HF_CONFIG = "config.json"
HF_WEIGHTS = "model.safetensors"
HF_WEIGHTS_INDEX = "model.safetensors.index.json"
HF_TORCH_WEIGHTS = "pytorch_model.bin"

KERAS_HUB_CONFIG = "config.json"
KERAS_HUB_WEIGHTS = "model.weights.h5"
KERAS_HUB_VOCAB = os.path.join("assets", "tokenizer", "vocabulary.txt")
KERAS_HUB_TOKENIZER = "tokenizer.json"
KERAS_HUB_CLASS = "ElectraBackbone"
KERAS_SUFFIX = ".keras"

SAVED_MODEL = "saved_model.pb"  # what TensorFlow names these, for the hints of `locate`
TF_CHECKPOINT_STATE = "checkpoint"

# ---- kinds ------------------------------------------------------------------------------------

PRETRAINING, FINETUNING, TRIALS = "pretraining", "fine-tuning", "fine-tuning trials"
KERAS_HUB, KERAS_FILE = "keras-hub", ".keras"

EXPECTED = (f"a run directory of run_pretraining or an output directory of convert_checkpoint "
            f"({CONFIG} + {CHECKPOINTS}/), a fine-tuning run directory ({TASK_CARD} + {CONFIG} + "
            f"{CHECKPOINTS}/), a keras-hub {KERAS_HUB_CLASS} preset ({KERAS_HUB_CONFIG} + "
            f"{KERAS_HUB_WEIGHTS}) or a {KERAS_SUFFIX} file")


# ---- paths ------------------------------------------------------------------------------------

def config_file(directory: str) -> str:
    return os.path.join(directory, CONFIG)


def lock_file(directory: str) -> str:
    return os.path.join(directory, RUN_LOCK)


def checkpoints_dir(directory: str) -> str:
    return os.path.join(directory, CHECKPOINTS)


def step_checkpoint(directory: str, step: int) -> str:
    """The prefix of the checkpoint a run saved at `step`."""
    return os.path.join(checkpoints_dir(directory), f"{CHECKPOINT_NAME}-{step}")


def tensorboard_dir(directory: str) -> str:
    return os.path.join(directory, TENSORBOARD)


def export_dir(directory: str) -> str:
    """Where a run's SavedModels go (`<export_dir>/<step>/`)."""
    return os.path.join(directory, EXPORT)


def demo_data_dir(directory: str) -> str:
    return os.path.join(directory, DEMO_DATA)


def task_card_file(directory: str) -> str:
    return os.path.join(directory, TASK_CARD)


def trial_dir(model_dir: str, k: int, num_trials: int) -> str:
    """Trial k's directory: the run's own with one trial, `trial_<k>/` in it with several."""
    return model_dir if num_trials == 1 else os.path.join(model_dir, f"{TRIAL_PREFIX}{k}")


def hf_output_dirs(output_dir: str) -> tuple[str, str]:
    """(discriminator, generator) directories of a `convert_checkpoint --to hf` output."""
    return os.path.join(output_dir, HF_DISCRIMINATOR), os.path.join(output_dir, HF_GENERATOR)


def checkpoint_run(path: str) -> str | None:
    """The run directory of a checkpoint prefix inside its checkpoints/ (`runs/x/checkpoints/
    ckpt-5` -> `runs/x`); None when `path` is not inside a directory named so."""
    parent = os.path.dirname(path)
    return os.path.dirname(parent) if os.path.basename(parent) == CHECKPOINTS else None


# ---- reading ----------------------------------------------------------------------------------

def _has(directory: str, name: str) -> bool:
    return tf.io.gfile.exists(os.path.join(directory, name))


def read_json(path: str):
    """The JSON value of `path`; None when there is no such file."""
    if not tf.io.gfile.exists(path):
        return None
    with tf.io.gfile.GFile(path) as f:
        return json.load(f)


def read_config(directory: str) -> dict:
    """`directory`'s config.yaml as plain data (unchecked: a pretraining or a fine-tuning
    config, or one a converter wrote)."""
    with tf.io.gfile.GFile(config_file(directory)) as f:
        return yaml.safe_load(f) or {}


def configured_vocab_file(directory: str) -> str:
    """run.vocab_file of `directory`'s config.yaml; "" when unset or unreadable (loading the
    run then reports what is wrong with its config)."""
    try:
        return str((read_config(directory).get("run") or {}).get("vocab_file") or "")
    except (OSError, tf.errors.OpError, yaml.YAMLError, AttributeError):
        return ""


def keras_hub_has_tokenizer(directory: str) -> bool:
    """Whether a keras-hub preset holds its tokenizer (tokenizer.json and the vocabulary)."""
    return all(tf.io.gfile.exists(os.path.join(directory, name))
               for name in (KERAS_HUB_TOKENIZER, KERAS_HUB_VOCAB))


def vocab_file(directory: str, kind: str | None = None) -> str | None:
    """The vocabulary that came with a directory of `kind`, the first present of:
    <directory>/vocab.txt; for a pretraining or fine-tuning run, <directory>/data/vocab.txt (the
    demo's), then a file in the directory named as run.vocab_file of its config.yaml (a run
    moved with its SentencePiece `.model`, say), then run.vocab_file itself (after the files in
    the directory: it may be relative to another working directory); for a keras-hub preset,
    its tokenizer's assets/tokenizer/vocabulary.txt. None when there is none."""
    return next((c for c in _vocab_candidates(directory, kind) if c and tf.io.gfile.exists(c)),
                None)


def _vocab_candidates(directory: str, kind: str | None):
    yield os.path.join(directory, VOCAB)
    if kind in (PRETRAINING, FINETUNING):
        yield os.path.join(demo_data_dir(directory), VOCAB)
        configured = configured_vocab_file(directory)  # read only when the files are not there
        if configured:
            yield os.path.join(directory, os.path.basename(configured))
        yield configured
    elif kind == KERAS_HUB:
        yield os.path.join(directory, KERAS_HUB_VOCAB)


def read_task_card(directory: str) -> dict | None:
    """The task card of a fine-tuning trial's directory; None when it has none."""
    return read_json(task_card_file(directory))


def has_checkpoint(directory: str) -> bool:
    return tf.train.latest_checkpoint(checkpoints_dir(directory)) is not None


def newest_checkpoint(directory: str) -> str:
    """The prefix of the newest checkpoint in `directory`'s checkpoints/."""
    checkpoint = tf.train.latest_checkpoint(checkpoints_dir(directory))
    if checkpoint is None:
        raise CheckpointError(f"{checkpoints_dir(directory)} holds no checkpoint")
    return checkpoint


def _trial_number(name: str) -> int | None:
    match = re.fullmatch(re.escape(TRIAL_PREFIX) + r"(\d+)/?", name)
    return int(match.group(1)) if match else None


def trials(directory: str) -> tuple[str, ...]:
    """The trial directories (trial_<k>/ with a task card) of a fine-tuning run, by k."""
    numbered = sorted((_trial_number(name), name.rstrip("/"))
                      for name in tf.io.gfile.listdir(directory)
                      if _trial_number(name) is not None)
    return tuple(os.path.join(directory, name) for _, name in numbered
                 if _has(os.path.join(directory, name), TASK_CARD))


# ---- writing ----------------------------------------------------------------------------------

def write_json(path: str, value) -> None:
    """Writes `value` as JSON, whole or not at all (a reader never sees half a file)."""
    with tf.io.gfile.GFile(path + ".tmp", "w") as f:
        json.dump(value, f, indent=1)
    tf.io.gfile.rename(path + ".tmp", path, overwrite=True)


def write_config(directory: str, config) -> str:
    """Writes `config` (an `ElectraConfig` or a `FinetuneConfig`) as `directory`'s config.yaml."""
    path = config_file(directory)
    with tf.io.gfile.GFile(path, "w") as f:
        f.write(config.to_yaml())
    return path


def write_task_card(directory: str, card: dict) -> None:
    write_json(task_card_file(directory), card)


# ---- recognising a path -----------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class RunDirectory:
    """What a path holds (see the module docstring for each kind's files).

    kind: PRETRAINING (a pretraining run or a converted electra_tf output), FINETUNING (one
      trial of a fine-tuning run), TRIALS (a fine-tuning run of several), KERAS_HUB or
      KERAS_FILE.
    path: the directory (the file, for KERAS_FILE).
    checkpoint: the checkpoint prefix the path named (one inside the run's checkpoints/), else
      None: the run's newest then (`newest_checkpoint`).
    trials: for TRIALS, the trial directories by k.
    """

    kind: str
    path: str
    checkpoint: str | None = None
    trials: tuple[str, ...] = ()

    @property
    def config_path(self) -> str | None:
        """config.yaml; a keras-hub preset's config.json; None for a .keras file."""
        if self.kind == KERAS_FILE:
            return None
        return os.path.join(self.path, KERAS_HUB_CONFIG) if self.kind == KERAS_HUB else \
            config_file(self.path)

    @property
    def task_card_path(self) -> str:
        return task_card_file(self.path)

    def newest_checkpoint(self) -> str:
        """The checkpoint the path named, else the newest in its checkpoints/."""
        return self.checkpoint or newest_checkpoint(self.path)

    def read_config(self) -> dict:
        return read_config(self.path)

    def task_card(self) -> dict | None:
        return read_task_card(self.path)

    def vocab_file(self) -> str | None:
        return None if self.kind == KERAS_FILE else vocab_file(self.path, self.kind)

    def trial(self, k: int) -> RunDirectory:
        """Trial k of a fine-tuning run; a run of one trial is its own trial 0."""
        if self.kind == FINETUNING and k == 0:
            return self
        if self.kind == FINETUNING:
            raise CheckpointError(f"{self.path} is a fine-tuning run of one trial: it has no "
                                  f"{TRIAL_PREFIX}{k}")
        if self.kind != TRIALS:
            raise CheckpointError(f"{self.path} is not a fine-tuning run ({self.kind}): it has "
                                  "no trials")
        wanted = os.path.join(self.path, f"{TRIAL_PREFIX}{k}")
        if wanted not in self.trials:
            names = ", ".join(os.path.basename(t) for t in self.trials)
            raise CheckpointError(f"{self.path} has no {TRIAL_PREFIX}{k} (its trials: {names})")
        return RunDirectory(FINETUNING, wanted)


def locate(path) -> RunDirectory:
    """Recognises `path`: a pretraining run or converted directory, its checkpoints/ or a
    checkpoint prefix in it, a fine-tuning run (one trial, or several trial_<k>/), a keras-hub
    preset or a .keras file. CheckpointError, naming what was expected, for anything else."""
    path = os.fspath(path)
    if not tf.io.gfile.isdir(path):
        run = checkpoint_run(path)
        if run is not None and tf.io.gfile.exists(path + ".index"):
            return RunDirectory(FINETUNING if _has(run, TASK_CARD) else PRETRAINING, run, path)
        if path.endswith(KERAS_SUFFIX) and tf.io.gfile.exists(path):
            return RunDirectory(KERAS_FILE, path)
        if not tf.io.gfile.exists(path):
            raise CheckpointError(f"{path} does not exist; expected {EXPECTED}")
        raise CheckpointError(f"{path} is a file, not {EXPECTED} (nor a checkpoint prefix "
                              f"inside a {CHECKPOINTS}/ directory)")
    if os.path.basename(os.path.normpath(path)) == CHECKPOINTS:
        run = os.path.dirname(os.path.normpath(path))
        if _has(run, CONFIG):  # the run's checkpoints/: its newest checkpoint
            return locate(run)
    if _has(path, TASK_CARD):
        return RunDirectory(FINETUNING, path)
    found = trials(path)
    if found:
        return RunDirectory(TRIALS, path, trials=found)
    if _has(path, CONFIG):
        return RunDirectory(PRETRAINING, path)
    if _has(path, KERAS_HUB_CONFIG):
        _check_keras_hub_class(path)
        return RunDirectory(KERAS_HUB, path)
    if _has(path, SAVED_MODEL):
        hint = "a SavedModel (an export for serving): load it with tf.saved_model.load"
    elif _has(path, TF_CHECKPOINT_STATE):
        hint = (f"a TensorFlow checkpoint without {CONFIG} (Google's TF1 release?): convert it "
                "with `python -m electra_tf.convert_checkpoint --from google`")
    else:
        hint = f"a directory with neither {CONFIG}, {TASK_CARD} nor {KERAS_HUB_CONFIG}"
    raise CheckpointError(f"{path} is {hint}; expected {EXPECTED}")


def _check_keras_hub_class(directory: str) -> None:
    """Refuses a config.json that is not a keras-hub ElectraBackbone's (a Hugging Face model's,
    another keras-hub model's)."""
    config_path = os.path.join(directory, KERAS_HUB_CONFIG)
    try:
        with tf.io.gfile.GFile(config_path) as f:
            config = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{config_path} is not JSON: {e}") from None
    config = config if isinstance(config, dict) else {}
    if "model_type" in config:
        raise CheckpointError(f"{directory} is a Hugging Face model directory: convert it with "
                              "`python -m electra_tf.convert_checkpoint --from hf`")
    name = str(config.get("registered_name") or config.get("class_name") or "")
    if not name.endswith(KERAS_HUB_CLASS):
        raise CheckpointError(f"{directory} is not a keras-hub {KERAS_HUB_CLASS} preset: its "
                              f"{KERAS_HUB_CONFIG} is for {name or 'an unknown class'!r}")
