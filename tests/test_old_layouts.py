"""Directories written by older code still load, through the entry points users use, with the
same outputs.

tests/fixtures/old_layout/ holds one directory (or file) of every kind the project writes, made
by tests/fixtures/old_layout/make_fixtures.py with the code of the commit that added them, and
expected.json with what the loaded models output for fixed inputs. Refactors of the package
must keep reading them: this file loads each one the ways a user can (electra_tf.load, the
load_* functions, the models' from_preset, keras.saving.load_model, tf.saved_model.load,
keras-hub, convert_checkpoint, export_savedmodel, fine-tuning from the old run) and compares the
outputs. Each fixture is copied to tmp_path first, so nothing is ever written into the fixtures.

The configs in the fixtures name the vocabulary by an absolute path in the scratch directory
they were made in, which no longer exists: as for a run directory copied to another machine, the
readers find the vocabulary beside the run (data/vocab.txt) or go without it.
"""

import json
import os
import shutil

import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

import electra_tf
import electra_tf.models  # noqa: F401  (registers the classes keras.saving.load_model needs)
from electra_tf import (ElectraClassifier, ElectraEncoder, ElectraPretrainer, load,
                        load_encoder, load_pretrainer, load_task_model)
from electra_tf.finetuning.source import resolve_source
from electra_tf.training.checkpointing import CheckpointError
from tests.run_helpers import run_in_process

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "old_layout")
with open(os.path.join(FIXTURES, "expected.json")) as _f:
    EXPECTED = json.load(_f)
INPUTS = {name: np.array(value, np.int32) for name, value in EXPECTED["inputs"].items()}
IDS = (INPUTS["input_ids"], INPUTS["input_mask"], INPUTS["segment_ids"])
PRETRAIN_STEP, FINETUNE_STEP = 6, 3  # the newest (only) checkpoint of each run


def copied(name, tmp_path):
    """The fixture `name` copied under tmp_path (anything may write there); its path."""
    source, target = os.path.join(FIXTURES, name), os.path.join(str(tmp_path), name)
    if os.path.isdir(source):
        shutil.copytree(source, target)
    else:
        shutil.copyfile(source, target)
    return target


def assert_outputs(actual: dict, expected: dict, what: str, rtol=1e-5, atol=1e-6):
    assert set(actual) <= set(expected), (what, sorted(actual), sorted(expected))
    for key, value in actual.items():
        np.testing.assert_allclose(np.asarray(value, np.float32), np.asarray(expected[key]),
                                   rtol=rtol, atol=atol, err_msg=f"{what}: {key}")


def pretrainer_outputs(model):
    assert isinstance(model, ElectraPretrainer), type(model)
    return {"discriminator_logits": model.discriminator_logits(*IDS),
            "generator_logits": model.generator_logits(*IDS, INPUTS["generator_positions"]),
            "sequence_output": model.encoder(*IDS, training=False)}


def encoder_outputs(encoder):
    assert isinstance(encoder, ElectraEncoder), type(encoder)
    return {"sequence_output": encoder(*IDS, training=False)}


def classifier_outputs(model):
    assert isinstance(model, ElectraClassifier), type(model)
    inputs = {"input_ids": IDS[0], "input_mask": IDS[1], "segment_ids": IDS[2]}
    return {"logits": model(inputs, training=False), "sequence_output": model.encode(inputs)}


def saved_model_outputs(directory):
    serving = tf.saved_model.load(directory).signatures["serving_default"]
    return {name: value for name, value in serving(
        input_ids=tf.constant(IDS[0]), input_mask=tf.constant(IDS[1]),
        segment_ids=tf.constant(IDS[2])).items()}


# ---- pretraining run ----------------------------------------------------------------------------

def test_the_pretraining_run_loads_as_its_pretrainer(tmp_path):
    run = copied("pretraining_run", tmp_path)
    expected = EXPECTED["pretraining_run"]
    checkpoint = os.path.join(run, "checkpoints", f"ckpt-{PRETRAIN_STEP}")
    for how, model in [("load", load(run)), ("load_pretrainer", load_pretrainer(run)),
                       ("from_preset", ElectraPretrainer.from_preset(run)),
                       ("load(checkpoints/)", load(os.path.join(run, "checkpoints"))),
                       ("load(prefix)", load(checkpoint))]:
        assert_outputs(pretrainer_outputs(model), expected, how)


def test_the_pretraining_run_gives_its_encoder_and_a_classifier_over_it(tmp_path):
    run = copied("pretraining_run", tmp_path)
    expected = EXPECTED["pretraining_run"]
    assert_outputs(encoder_outputs(load_encoder(run)), expected, "load_encoder")
    assert_outputs(encoder_outputs(ElectraEncoder.from_preset(run)), expected, "from_preset")
    classifier = ElectraClassifier.from_preset(run, num_labels=2)
    assert_outputs({"sequence_output": classifier_outputs(classifier)["sequence_output"]},
                   expected, "ElectraClassifier.from_preset")
    # The fine-tuning API's way in (finetuning.source), and the vocabulary it finds: the
    # configured path is stale, the copy beside the run (where the demo keeps it) is found.
    source = resolve_source(run)
    assert source.checkpoint == os.path.join(run, "checkpoints", f"ckpt-{PRETRAIN_STEP}")
    assert source.encoder_scope == "discriminator"
    assert source.vocab_file == os.path.join(run, "data", "vocab.txt")
    model = electra_tf.build_classifier(run, num_labels=2)
    assert_outputs({"sequence_output": classifier_outputs(model)["sequence_output"]}, expected,
                   "build_classifier")


def test_the_pretraining_run_resumes_with_its_step_and_optimizer(tmp_path):
    """As `pretrain` resumes it: weights, optimizer slots, dropout seeds and the step.

    Every weight and every optimizer slot is compared with the tensor the checkpoint file
    stores for it, read with tf.train.load_checkpoint (not through the restore code): weights
    under their paths (`weights/<path, "/" as ".S">`), the optimizer's variables under their
    places in its list (`optimizer/_variables/<i>`, the iteration count first, then Adam's m
    of every weight, then its v). That the places are those slots is checked on the file too:
    each stored tensor has its weight's shape, every v is >= 0 and the m's are not."""
    from electra_tf.config import load_config
    from electra_tf.training.checkpointing import RunCheckpoint
    from electra_tf.training.optimizer import create_optimizer

    run = copied("pretraining_run", tmp_path)
    expected = EXPECTED["pretraining_run_resumed"]
    config = load_config(os.path.join(run, "config.yaml"))
    model = ElectraPretrainer(config.model, config.objective)
    model.compile(optimizer=create_optimizer(config.optimizer))
    step = RunCheckpoint(model, os.path.join(run, "checkpoints"),
                         config.run.keep_checkpoint_max).restore_latest()
    assert step == expected["batches_seen"] == PRETRAIN_STEP
    assert int(model.optimizer.iterations.numpy()) == expected["iterations"]

    reader = tf.train.load_checkpoint(os.path.join(run, "checkpoints", f"ckpt-{PRETRAIN_STEP}"))

    def stored(key):
        return reader.get_tensor(f"{key}/.ATTRIBUTES/VARIABLE_VALUE")

    shapes = {}
    for weight in model.trainable_variables:
        value = stored("weights/" + weight.path.replace("/", ".S"))
        np.testing.assert_array_equal(weight.numpy(), value, err_msg=weight.path)
        shapes[weight.path.replace("/", "_")] = value.shape
    assert model.optimizer.variables[0] is model.optimizer.iterations
    assert int(stored("optimizer/_iterations")) == expected["iterations"]
    slots = model.optimizer.variables[1:]
    assert len(slots) == 2 * len(shapes)
    negative = 0
    for index, slot in enumerate(slots, start=1):
        value = stored(f"optimizer/_variables/{index}")
        weight, kind = slot.name.rsplit("_adam_", 1)
        assert value.shape == shapes[weight], slot.name
        if kind == "v":
            assert (value >= 0).all(), slot.name
        else:
            negative += (value < 0).any()
        np.testing.assert_array_equal(slot.numpy(), value, err_msg=slot.name)
    assert negative > len(shapes) // 2  # m's of both signs: the m slots are where m is stored
    assert_outputs({"discriminator_logits": model.discriminator_logits(*IDS)}, expected,
                   "resumed")


def test_the_pretraining_runs_export_serves_the_same_logits(tmp_path):
    run = copied("pretraining_run", tmp_path)
    outputs = saved_model_outputs(os.path.join(run, "export", str(PRETRAIN_STEP)))
    assert set(outputs) == {"logits", "probabilities"}
    assert_outputs(outputs, EXPECTED["pretraining_run_export"], "export/6")
    assert_outputs({"discriminator_logits": outputs["logits"]}, EXPECTED["pretraining_run"],
                   "export/6 vs the checkpoint")


# ---- converted outputs --------------------------------------------------------------------------

def test_the_converted_electra_tf_directory_loads(tmp_path):
    converted = copied("converted_electra_tf", tmp_path)
    expected = EXPECTED["converted_electra_tf"]
    assert_outputs(pretrainer_outputs(load(converted)), expected, "load")
    assert_outputs(pretrainer_outputs(ElectraPretrainer.from_preset(converted)), expected,
                   "from_preset")
    assert_outputs(encoder_outputs(ElectraEncoder.from_preset(converted)), expected,
                   "ElectraEncoder.from_preset")
    assert_outputs(pretrainer_outputs(load(converted)), EXPECTED["pretraining_run"],
                   "the run it was converted from")


def test_the_keras_hub_preset_loads_as_the_encoder(tmp_path):
    preset = copied("converted_keras_hub", tmp_path)
    expected = EXPECTED["converted_keras_hub"]
    encoder = load(preset)
    assert encoder.activation == "gelu_approximate"  # keras-hub's encoder
    assert_outputs(encoder_outputs(encoder), expected, "load")
    assert_outputs(encoder_outputs(ElectraEncoder.from_preset(preset)), expected, "from_preset")
    assert_outputs(encoder_outputs(load_encoder(preset)), expected, "load_encoder")
    pretrainer = ElectraPretrainer.from_preset(preset)  # the encoder under fresh heads
    assert_outputs(encoder_outputs(pretrainer.encoder), expected, "ElectraPretrainer.from_preset")
    classifier = ElectraClassifier.from_preset(preset, num_labels=2)
    assert_outputs({"sequence_output": classifier_outputs(classifier)["sequence_output"]},
                   expected, "ElectraClassifier.from_preset")
    # keras-hub itself reads it: the backbone, and the tokenizer over the run's vocabulary.
    backbone = keras_hub.models.ElectraBackbone.from_preset(preset)
    output = backbone({"token_ids": IDS[0], "padding_mask": IDS[1], "segment_ids": IDS[2]})
    assert_outputs({"sequence_output": output["sequence_output"]}, expected, "ElectraBackbone")
    tokenizer = keras_hub.models.ElectraTokenizer.from_preset(preset)
    with open(os.path.join(FIXTURES, "vocab.txt")) as f:
        assert tokenizer.get_vocabulary() == f.read().split()


def test_the_hf_directories_load(tmp_path):
    from electra_tf.convert.hf import load_hf_pretrainer

    hf = copied("converted_hf", tmp_path)
    pretrainer = load_hf_pretrainer(os.path.join(hf, "discriminator"),
                                    os.path.join(hf, "generator"))
    assert_outputs(pretrainer_outputs(pretrainer), EXPECTED["converted_hf"], "load_hf_pretrainer")


@pytest.mark.slow
def test_convert_checkpoint_reads_the_old_directories(tmp_path):
    run = copied("pretraining_run", tmp_path)
    hf = copied("converted_hf", tmp_path)
    outputs = {to: str(tmp_path / f"out_{to}") for to in ("electra_tf", "keras_hub", "hf")}
    for to, output_dir in outputs.items():
        result = run_in_process(["--from", "electra_tf", "--input", run, "--to", to,
                                 "--output_dir", output_dir],
                                module="electra_tf.convert_checkpoint")
        assert result.returncode == 0, result.stderr[-3000:]
    assert_outputs(pretrainer_outputs(load(outputs["electra_tf"])),
                   EXPECTED["converted_electra_tf"], "--to electra_tf")
    assert_outputs(encoder_outputs(load(outputs["keras_hub"])), EXPECTED["converted_keras_hub"],
                   "--to keras_hub")
    from electra_tf.convert.hf import load_hf_pretrainer

    assert_outputs(pretrainer_outputs(load_hf_pretrainer(
        os.path.join(outputs["hf"], "discriminator"), os.path.join(outputs["hf"], "generator"))),
        EXPECTED["converted_hf"], "--to hf")
    # The vocabulary came from the run's data/vocab.txt (its configured path is stale).
    for directory in (outputs["electra_tf"], outputs["keras_hub"],
                      os.path.join(outputs["hf"], "discriminator")):
        with open(os.path.join(directory, "vocab.txt")) as f, \
                open(os.path.join(FIXTURES, "vocab.txt")) as g:
            assert f.read() == g.read(), directory
    assert os.path.isfile(os.path.join(outputs["keras_hub"], "tokenizer.json"))
    # And back: the old HF directories to electra_tf.
    back = str(tmp_path / "from_hf")
    result = run_in_process(["--from", "hf", "--input", os.path.join(hf, "discriminator"),
                             "--generator", os.path.join(hf, "generator"), "--output_dir", back],
                            module="electra_tf.convert_checkpoint")
    assert result.returncode == 0, result.stderr[-3000:]
    assert_outputs(pretrainer_outputs(load(back)), EXPECTED["converted_hf"], "--from hf")


# ---- fine-tuning runs ---------------------------------------------------------------------------

def classifier_with_stored_weights(run, checkpoint):
    """Today's ElectraClassifier for the fine-tuning `run` (its model config, two labels) with
    every weight set to the tensor `checkpoint` stores under that weight's path, read with
    tf.train.load_checkpoint: the classifier the old run's weights make, put together without
    the loaders; every stored weight, the head's included, is used."""
    config = electra_tf.load_config(os.path.join(run, "config.yaml"),
                                    base=electra_tf.FinetuneConfig())
    model = ElectraClassifier(config.model, num_labels=2)
    reader = tf.train.load_checkpoint(checkpoint)
    stored = {key for key in reader.get_variable_to_shape_map() if key.startswith("weights/")}
    used = set()
    for weight in model.weights:
        key = "weights/" + weight.path.replace("/", ".S") + "/.ATTRIBUTES/VARIABLE_VALUE"
        weight.assign(reader.get_tensor(key))
        used.add(key)
    assert used == stored and any("task_specific" in key for key in used)
    return model


def test_the_fine_tuning_run_loads_as_its_classifier(tmp_path):
    """Every way in gives the outputs pinned in expected.json and, to rounding, those of
    `classifier_with_stored_weights`: a loader that maps a stored weight wrongly or leaves one
    out (the head) gives other logits than the checkpoint's own tensors do."""
    run = copied("finetune_run", tmp_path)
    expected = EXPECTED["finetune_run"]
    checkpoint = os.path.join(run, "checkpoints", f"ckpt-{FINETUNE_STEP}")
    reference = classifier_outputs(classifier_with_stored_weights(run, checkpoint))
    for how, model in [("load", load(run)),
                       ("load_task_model", load_task_model(ElectraClassifier, run)),
                       ("from_preset", ElectraClassifier.from_preset(run)),
                       ("load(prefix)", load(checkpoint))]:
        assert model.num_labels == 2 and not model.regression
        outputs = classifier_outputs(model)
        assert_outputs(outputs, reference, f"{how} vs the stored tensors")
        assert_outputs(outputs, expected, how)
    assert_outputs(encoder_outputs(load_encoder(run)), expected, "load_encoder")
    with pytest.raises(CheckpointError, match="fine-tuning run"):
        load_pretrainer(run)


def test_the_fine_tuning_runs_export_serves_the_same_logits(tmp_path):
    run = copied("finetune_run", tmp_path)
    export_dir = os.path.join(run, EXPECTED["finetune_run_export_dir"])
    assert export_dir == os.path.join(run, "export", str(FINETUNE_STEP))
    loaded = tf.saved_model.load(export_dir)
    assert loaded.task.numpy().decode() == "csv"
    assert [n.decode() for n in loaded.label_names.numpy()] == ["different", "same"]
    outputs = saved_model_outputs(export_dir)
    assert set(outputs) == {"logits", "probabilities"}
    assert_outputs(outputs, EXPECTED["finetune_run_export"], "export/3")
    assert_outputs({"logits": outputs["logits"]}, EXPECTED["finetune_run"],
                   "export/3 vs the checkpoint")


def test_a_fine_tuning_run_of_several_trials_loads_trial_by_trial(tmp_path):
    run = copied("finetune_trials", tmp_path)
    with pytest.raises(CheckpointError, match="2 trials"):
        load(run)
    for k in range(2):
        trial = os.path.join(run, f"trial_{k}")
        assert_outputs(classifier_outputs(load(trial)), EXPECTED["finetune_trials"][f"trial_{k}"],
                       f"trial_{k}")
    # Trial 0 has the seed of the one-trial run: the same model.
    assert_outputs(classifier_outputs(load(os.path.join(run, "trial_0"))),
                   EXPECTED["finetune_run"], "trial_0 vs the one-trial run")


@pytest.mark.slow
def test_export_savedmodel_reads_the_old_runs(tmp_path):
    for name, run_dir, expected in [
            ("finetune_run", copied("finetune_run", tmp_path), "finetune_run_export"),
            ("trial_1", os.path.join(copied("finetune_trials", tmp_path), "trial_1"), None),
            ("pretraining_run", copied("pretraining_run", tmp_path), "pretraining_run_export")]:
        output_dir = str(tmp_path / f"served_{name}")
        result = run_in_process(["--model_dir", run_dir, "--output_dir", output_dir],
                                module="electra_tf.export_savedmodel")
        assert result.returncode == 0, result.stderr[-3000:]
        step = PRETRAIN_STEP if name == "pretraining_run" else FINETUNE_STEP
        outputs = saved_model_outputs(os.path.join(output_dir, str(step)))
        if expected:
            assert_outputs(outputs, EXPECTED[expected], name)
        else:
            assert_outputs({"logits": outputs["logits"]}, EXPECTED["finetune_trials"]["trial_1"],
                           name)


@pytest.mark.slow
def test_fine_tuning_from_the_old_pretraining_run_gives_the_same_classifier(tmp_path):
    """The fine-tuning the fixture's finetune_run came from, redone from the old run: what
    today's code fine-tunes from the old pretraining run, pinned."""
    from tests.fixtures.old_layout.make_fixtures import FINETUNE_OVERRIDES, task_data

    run = copied("pretraining_run", tmp_path)
    model_dir = str(tmp_path / "finetuned")
    report = electra_tf.finetune(task_data(), model_dir=model_dir, init_checkpoint=run,
                                 overrides=FINETUNE_OVERRIDES, export=False)
    assert report["status"] == "finished"
    trial = report["trial_results"][0]
    assert trial["init_checkpoint"] == os.path.join(run, "checkpoints", f"ckpt-{PRETRAIN_STEP}")
    assert trial["steps"] == FINETUNE_STEP
    config = electra_tf.load_config(os.path.join(model_dir, "config.yaml"),
                                    base=electra_tf.FinetuneConfig())
    assert config.finetune.vocab_file == os.path.join(run, "data", "vocab.txt")
    # Three optimizer steps redone on this CPU: another CPU's kernels (with or without AVX-512)
    # sum in another order, and training carries that further than one forward pass. The
    # expected outputs are today's fine-tuning's ("finetune_run_redone"): the stored finetune_run
    # was trained before global clipping took the dense norm of the embedding gradient (its
    # IndexedSlices rows had been squared one by one), which moves these logits by up to 0.06,
    # before dropout drew its masks from a hash of the element index (other masks: up to 0.2
    # here), and before the classifier's last block computed [CLS] alone in training (its
    # masks drawn for that position alone: the logits moved by up to 9e-4).
    assert_outputs(classifier_outputs(load(model_dir)), EXPECTED["finetune_run_redone"],
                   "fine-tuned", rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_finishing_an_old_fine_tuning_run_again_keeps_its_results(tmp_path):
    """The same finetune call again, into the finished run: it reads results.json (status
    finished) and trains nothing."""
    from tests.fixtures.old_layout.make_fixtures import FINETUNE_OVERRIDES, task_data

    pretraining_run, run = copied("pretraining_run", tmp_path), copied("finetune_run", tmp_path)
    with open(os.path.join(run, "results.json")) as f:
        before = json.load(f)
    report = electra_tf.finetune(task_data(), model_dir=run, init_checkpoint=pretraining_run,
                                 overrides=FINETUNE_OVERRIDES)
    assert report["trial_results"] == [before]
    assert_outputs(classifier_outputs(load(run)), EXPECTED["finetune_run"], "after")


# ---- .keras files -------------------------------------------------------------------------------

@pytest.mark.parametrize("name, outputs", [("pretrainer.keras", pretrainer_outputs),
                                           ("classifier.keras", classifier_outputs)])
def test_the_keras_files_load(name, outputs, tmp_path):
    path = copied(name, tmp_path)
    assert_outputs(outputs(keras.saving.load_model(path)), EXPECTED[name], "load_model")
    assert_outputs(outputs(load(path)), EXPECTED[name], "electra_tf.load")
    assert_outputs(encoder_outputs(load_encoder(path)), EXPECTED[name], "load_encoder")
