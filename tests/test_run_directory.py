"""electra_tf.run_directory: each kind of directory the project writes is recognised as such,
its files are found, and what is none of them is refused naming what was expected."""

import ast
import dataclasses
import json
import os
import sys

import pytest
import tensorflow as tf
import yaml

from electra_tf import run_directory as rd
from electra_tf.config import ElectraConfig, FinetuneConfig
from electra_tf.errors import CheckpointError, UserError
from electra_tf.training.checkpointing import CheckpointError as TrainingCheckpointError


def save_checkpoints(directory, steps=(3, 5)):
    """Real checkpoints (a one-variable tf.train.Checkpoint) at `steps` under directory/checkpoints."""
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(1.0)),
                                         rd.checkpoints_dir(str(directory)), max_to_keep=None)
    return [manager.save(checkpoint_number=step) for step in steps]


def pretraining_run(directory, vocab_file=""):
    """config.yaml (naming vocab_file as run.vocab_file) and checkpoints/ckpt-3, ckpt-5."""
    os.makedirs(directory, exist_ok=True)
    config = ElectraConfig()
    rd.write_config(str(directory), dataclasses.replace(
        config, run=dataclasses.replace(config.run, vocab_file=vocab_file)))
    save_checkpoints(directory)
    return str(directory)


def fine_tuning_trial(directory, card=None):
    os.makedirs(directory, exist_ok=True)
    rd.write_config(str(directory), FinetuneConfig())
    rd.write_task_card(str(directory), card or {"task": "csv", "kind": "classification",
                                                "labels": ["a", "b"]})
    save_checkpoints(directory, steps=(2,))
    return str(directory)


def fine_tuning_run(model_dir, num_trials):
    """A run directory as runner.run_trials leaves it: its config.yaml and one directory a trial."""
    os.makedirs(model_dir, exist_ok=True)
    rd.write_config(str(model_dir), FinetuneConfig())
    for k in range(num_trials):
        fine_tuning_trial(rd.trial_dir(str(model_dir), k, num_trials), {"task": f"trial {k}"})
    return str(model_dir)


def keras_hub_preset(directory, class_name="ElectraBackbone", with_vocab=False):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, rd.KERAS_HUB_CONFIG), "w") as f:
        json.dump({"class_name": class_name, "registered_name": f"keras_hub>{class_name}"}, f)
    open(os.path.join(directory, rd.KERAS_HUB_WEIGHTS), "wb").close()
    if with_vocab:
        vocab = os.path.join(directory, rd.KERAS_HUB_VOCAB)
        os.makedirs(os.path.dirname(vocab))
        open(vocab, "w").write("[PAD]\n")
    return str(directory)


# ---- locate, each kind ------------------------------------------------------------------------

def test_a_pretraining_run_its_checkpoints_and_a_checkpoint_in_it(tmp_path):
    run = pretraining_run(tmp_path / "run")
    located = rd.locate(run)
    assert located == rd.RunDirectory(rd.PRETRAINING, run)
    assert located.config_path == os.path.join(run, "config.yaml")
    assert located.newest_checkpoint() == os.path.join(run, "checkpoints", "ckpt-5")
    assert located.read_config()["model"] == ElectraConfig().to_dict()["model"]
    assert located.task_card() is None and located.trials == ()
    # Its checkpoints/ is the run (at its newest checkpoint); a prefix in it, that checkpoint.
    assert rd.locate(os.path.join(run, "checkpoints")) == located
    older = rd.locate(rd.step_checkpoint(run, 3))
    assert older == rd.RunDirectory(rd.PRETRAINING, run, os.path.join(run, "checkpoints", "ckpt-3"))
    assert older.newest_checkpoint() == os.path.join(run, "checkpoints", "ckpt-3")
    assert rd.locate(tmp_path / "run").path == run  # os.PathLike


def test_a_converted_electra_tf_output_is_a_pretraining_run_with_its_vocabulary(tmp_path):
    from electra_tf.convert_checkpoint import write_electra_tf
    from electra_tf.models import ElectraPretrainer
    from tests.models.helpers import tiny_model_config
    from tests.run_helpers import write_vocab

    vocab = write_vocab(tmp_path / "vocab.txt")
    output = str(tmp_path / "converted")
    write_electra_tf(ElectraPretrainer(tiny_model_config()), output, vocab)
    located = rd.locate(output)
    assert located.kind == rd.PRETRAINING
    assert located.newest_checkpoint() == rd.step_checkpoint(output, 0)
    # write_electra_tf names the copy beside it (convert_checkpoint's main copies it there).
    assert located.read_config()["run"]["vocab_file"] == os.path.join(output, rd.VOCAB)
    assert located.vocab_file() is None
    write_vocab(os.path.join(output, rd.VOCAB))
    assert located.vocab_file() == os.path.join(output, rd.VOCAB)


def test_a_fine_tuning_trial_and_its_checkpoint(tmp_path):
    trial = fine_tuning_trial(tmp_path / "rte")
    located = rd.locate(trial)
    assert located == rd.RunDirectory(rd.FINETUNING, trial)
    assert located.task_card()["labels"] == ["a", "b"]
    assert located.task_card_path == os.path.join(trial, "task.json")
    assert located.newest_checkpoint() == rd.step_checkpoint(trial, 2)
    assert "finetune" in located.read_config()
    assert rd.locate(rd.step_checkpoint(trial, 2)) == rd.RunDirectory(
        rd.FINETUNING, trial, rd.step_checkpoint(trial, 2))
    assert rd.locate(rd.checkpoints_dir(trial)) == located


def test_a_keras_hub_preset_and_a_keras_file(tmp_path):
    preset = keras_hub_preset(tmp_path / "preset", with_vocab=True)
    located = rd.locate(preset)
    assert located == rd.RunDirectory(rd.KERAS_HUB, preset)
    assert located.config_path == os.path.join(preset, "config.json")
    assert located.vocab_file() == os.path.join(preset, "assets", "tokenizer", "vocabulary.txt")
    path = tmp_path / "model.keras"
    path.write_bytes(b"zip")
    assert rd.locate(str(path)) == rd.RunDirectory(rd.KERAS_FILE, str(path))
    assert rd.locate(str(path)).config_path is None and rd.locate(str(path)).vocab_file() is None


# ---- trials -----------------------------------------------------------------------------------

def test_one_trial_is_the_run_itself_several_are_trial_k(tmp_path):
    assert rd.trial_dir("runs/rte", 0, 1) == "runs/rte"
    assert rd.trial_dir("runs/rte", 2, 3) == os.path.join("runs/rte", "trial_2")

    single = rd.locate(fine_tuning_run(tmp_path / "single", 1))
    assert single.kind == rd.FINETUNING and single.trial(0) is single
    with pytest.raises(CheckpointError, match="one trial: it has no trial_1"):
        single.trial(1)

    run = fine_tuning_run(tmp_path / "several", 12)
    located = rd.locate(run)
    assert located.kind == rd.TRIALS and located.config_path == os.path.join(run, "config.yaml")
    # By k, not by name: trial_10 comes after trial_2.
    assert located.trials == tuple(os.path.join(run, f"trial_{k}") for k in range(12))
    chosen = located.trial(10)
    assert chosen == rd.RunDirectory(rd.FINETUNING, os.path.join(run, "trial_10"))
    assert chosen.task_card() == {"task": "trial 10"}
    assert rd.locate(os.path.join(run, "trial_10")) == chosen
    with pytest.raises(CheckpointError, match="has no trial_12 \\(its trials: trial_0, trial_1,"):
        located.trial(12)
    with pytest.raises(CheckpointError, match="not a fine-tuning run \\(pretraining\\)"):
        rd.locate(pretraining_run(tmp_path / "run")).trial(0)


def test_only_trial_directories_with_a_task_card_count(tmp_path):
    run = fine_tuning_run(tmp_path / "run", 2)
    os.makedirs(os.path.join(run, "trial_7"))  # a trial that never started
    os.makedirs(os.path.join(run, "trial_old"))
    rd.write_task_card(os.path.join(run, "trial_old"), {})  # not trial_<k>
    assert rd.trials(run) == (os.path.join(run, "trial_0"), os.path.join(run, "trial_1"))


# ---- vocabulary -------------------------------------------------------------------------------

def test_the_vocabulary_in_the_directory_comes_before_the_configured_one(tmp_path):
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("[PAD]\n")
    run = pretraining_run(tmp_path / "run", vocab_file=str(elsewhere))
    assert rd.locate(run).vocab_file() == str(elsewhere)
    os.makedirs(rd.demo_data_dir(run))
    (tmp_path / "run" / "data" / "vocab.txt").write_text("[PAD]\n")  # the demo's
    assert rd.locate(run).vocab_file() == os.path.join(run, "data", "vocab.txt")
    (tmp_path / "run" / "vocab.txt").write_text("[PAD]\n")  # a converted output's copy
    assert rd.locate(run).vocab_file() == os.path.join(run, "vocab.txt")


def test_a_run_moved_with_its_sentencepiece_model_finds_it_beside_its_config(tmp_path):
    run = pretraining_run(tmp_path / "run", vocab_file="/elsewhere/data/spm.model")
    assert rd.vocab_file(run, rd.PRETRAINING) is None
    (tmp_path / "run" / "spm.model").write_bytes(b"model")
    assert rd.vocab_file(run, rd.PRETRAINING) == os.path.join(run, "spm.model")


def test_a_missing_or_unreadable_configured_vocabulary_is_none(tmp_path):
    run = pretraining_run(tmp_path / "run", vocab_file=str(tmp_path / "gone.txt"))
    assert rd.vocab_file(run, rd.PRETRAINING) is None
    (tmp_path / "run" / "config.yaml").write_text("run: [not, a, mapping\n")
    assert rd.configured_vocab_file(run) == "" and rd.vocab_file(run, rd.PRETRAINING) is None
    assert rd.configured_vocab_file(str(tmp_path / "nowhere")) == ""
    # Only a pretraining or fine-tuning run's config is read; any directory's vocab.txt counts.
    assert rd.vocab_file(str(tmp_path), None) is None
    (tmp_path / "vocab.txt").write_text("[PAD]\n")
    assert rd.vocab_file(str(tmp_path), None) == os.path.join(tmp_path, "vocab.txt")


# ---- writing ----------------------------------------------------------------------------------

def test_writers_and_readers_agree(tmp_path):
    directory = str(tmp_path)
    path = rd.write_config(directory, FinetuneConfig())
    assert path == os.path.join(directory, "config.yaml")
    assert yaml.safe_load(open(path)) == rd.read_config(directory)
    rd.write_json(os.path.join(directory, "results.json"), {"status": "finished"})
    assert rd.read_json(os.path.join(directory, "results.json")) == {"status": "finished"}
    assert rd.read_json(os.path.join(directory, "missing.json")) is None
    assert sorted(os.listdir(directory)) == ["config.yaml", "results.json"]  # no .tmp left
    assert not rd.has_checkpoint(directory)
    save_checkpoints(directory, steps=(4,))
    assert rd.has_checkpoint(directory)
    assert rd.hf_output_dirs("out") == (os.path.join("out", "discriminator"),
                                        os.path.join("out", "generator"))
    assert rd.export_dir("run") == os.path.join("run", "export")
    assert rd.tensorboard_dir("run") == os.path.join("run", "tensorboard")
    assert rd.checkpoint_run(os.path.join("runs", "x", "checkpoints", "ckpt-5")) == \
        os.path.join("runs", "x")
    assert rd.checkpoint_run(os.path.join("runs", "x", "ckpt-5")) is None


# ---- what is none of them ---------------------------------------------------------------------

EXPECTED = "expected a run directory of run_pretraining .*config.yaml \\+ checkpoints/"


def test_what_is_no_kind_is_refused_naming_what_was_expected(tmp_path):
    with pytest.raises(CheckpointError, match=f"with neither config.yaml, task.json nor "
                                              f"config.json; {EXPECTED}"):
        rd.locate(str(tmp_path))
    with pytest.raises(CheckpointError, match=f"does not exist; {EXPECTED}"):
        rd.locate(str(tmp_path / "missing"))
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(CheckpointError, match="is a file, not .*nor a checkpoint prefix inside"):
        rd.locate(str(tmp_path / "notes.txt"))
    # A prefix under checkpoints/ that was never written, and a .keras name that is not there.
    run = pretraining_run(tmp_path / "run")
    with pytest.raises(CheckpointError, match="ckpt-9 does not exist"):
        rd.locate(rd.step_checkpoint(run, 9))
    with pytest.raises(CheckpointError, match="does not exist"):
        rd.locate(str(tmp_path / "model.keras"))
    # A directory named checkpoints outside a run is just a directory.
    bare = tmp_path / "bare" / "checkpoints"
    bare.mkdir(parents=True)
    with pytest.raises(CheckpointError, match="with neither"):
        rd.locate(str(bare))


@pytest.mark.parametrize("files, fragment", [
    ({"config.json": {"model_type": "electra"}}, "Hugging Face model directory.*--from hf"),
    ({"config.json": {"class_name": "BertBackbone"}}, "not a keras-hub ElectraBackbone preset: "
                                                      "its config.json is for 'BertBackbone'"),
    ({"config.json": []}, "is for 'an unknown class'"),
    ({"config.json": "{not json"}, "config.json is not JSON"),
    ({"checkpoint": 'model_checkpoint_path: "model.ckpt-1"'}, "Google's TF1 release.*--from google"),
    ({"saved_model.pb": ""}, "a SavedModel .*tf.saved_model.load"),
])
def test_other_models_directories_are_refused_with_a_hint(tmp_path, files, fragment):
    for name, content in files.items():
        text = content if isinstance(content, str) else json.dumps(content)
        (tmp_path / name).write_text(text)
    with pytest.raises(CheckpointError, match=fragment):
        rd.locate(str(tmp_path))


def test_an_empty_run_has_no_newest_checkpoint(tmp_path):
    (tmp_path / "checkpoints").mkdir()
    rd.write_config(str(tmp_path), ElectraConfig())
    with pytest.raises(CheckpointError, match="checkpoints holds no checkpoint"):
        rd.locate(str(tmp_path)).newest_checkpoint()


def test_its_errors_are_user_errors_and_the_checkpoint_error_of_training():
    assert CheckpointError is TrainingCheckpointError and issubclass(CheckpointError, UserError)


# ---- layering ---------------------------------------------------------------------------------

ALLOWED_IMPORTS = {"tensorflow", "yaml", "electra_tf.errors", "electra_tf.config", "__future__"}


def test_it_imports_nothing_of_the_package_above_it():
    """models/ must be able to import it: only the standard library, TensorFlow, PyYAML and
    electra_tf.errors / electra_tf.config, and every import at the top."""
    tree = ast.parse(open(rd.__file__).read())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module)
        else:
            continue
        assert node in tree.body, f"an import inside a function: line {node.lineno}"
    outside = {name for name in imported if name.split(".")[0] not in sys.stdlib_module_names}
    assert outside <= ALLOWED_IMPORTS, outside - ALLOWED_IMPORTS
