"""Pretraining in phases: the recipe's phase list, its refusals, a 32 -> 64 run end to end, and
the same run killed in each phase, which resumes to the uninterrupted run's weights."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.config import ConfigError, load_config
from electra_tf.training import phases
from tests.run_helpers import (REPO, one_layer_yaml, run_cli, run_in_process, write_records,
                                write_vocab)

# Phase 1 at length 32, phase 2 at 64 with its own batch, accumulation and schedule; the
# position table is 64 long from the start. A one-layer encoder: each phase of each run is a
# fresh trace of its train step, most of the tests' time.
RECIPE = """
include: pretrain/demo
model: {max_position_embeddings: 64, %s}
run: {train_batch_size: 8, log_every_steps: 5, save_checkpoints_steps: 10, eval_every_steps: 0}
phases:
  - run: {max_seq_length: 32}
    optimizer: {learning_rate: 1e-3, warmup_steps: 5, train_steps: %%d}
  - run: {max_seq_length: 64, train_batch_size: 4, gradient_accumulation_steps: 2}
    optimizer: {learning_rate: 5e-4, warmup_steps: 2, train_steps: %%d}
""" % one_layer_yaml()


# One step of each phase: phase 1's at the full learning rate, phase 2's the first of its warmup,
# at learning rate 0.
HANDOFF_RECIPE = """
include: pretrain/demo
model: {max_position_embeddings: 64, %s}
run: {train_batch_size: 8, log_every_steps: 1, save_checkpoints_steps: 10, eval_every_steps: 0}
phases:
  - run: {max_seq_length: 32}
    optimizer: {learning_rate: 1e-3, warmup_steps: 0, train_steps: 1}
  - run: {max_seq_length: 64}
    optimizer: {learning_rate: 1e-3, warmup_steps: 10, train_steps: 1}
""" % one_layer_yaml()


def _write_recipe(path, text):
    path.write_text(text)
    return str(path)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("phase_data")
    return {"short": write_records(root / "records32", seq_len=32),
            "long": write_records(root / "records64", seq_len=64, seed=1),
            "vocab": write_vocab(root / "vocab.txt")}


def _args(recipe, data, model_dir, *extra, long_records=None):
    return ["--config", recipe, "--data", data["short"],
            "--phase_data", f"2={long_records or data['long']}",
            "--vocab_file", data["vocab"], "--model_dir", str(model_dir), "--noexport", *extra]


def _weights(checkpoint_dir):
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(checkpoint_dir)))
    names = [n for n in reader.get_variable_to_shape_map() if n.startswith(("weights/", "batches"))]
    return {n: reader.get_tensor(n) for n in names}


def test_shipped_two_phase_recipes_translate_nvidias_settings():
    for name, accumulation_2 in (("pretrain/electra_base_two_phase", 144),
                                 ("pretrain/electra_large_two_phase", 288)):
        plan = phases.read_phases(name)
        assert [p.number for p in plan] == [1, 2]
        first, second = (load_config(name, overrides=list(p.overrides)) for p in plan)
        assert (first.run.max_seq_length, first.run.train_batch_size,
                first.run.gradient_accumulation_steps) == (128, 176 * 8 * 48, 48)
        assert (second.run.max_seq_length, second.run.train_batch_size,
                second.run.gradient_accumulation_steps) == (512, 24 * 8 * 144, accumulation_2)
        assert (first.optimizer.learning_rate, first.optimizer.warmup_steps,
                first.optimizer.train_steps) == (6e-3, 2000, 10000)
        assert (second.optimizer.learning_rate, second.optimizer.warmup_steps,
                second.optimizer.train_steps) == (4e-3, 200, 933)
        for config in (first, second):
            assert (config.optimizer.name, config.optimizer.beta_1, config.optimizer.beta_2,
                    config.optimizer.lr_decay_power) == ("lamb", 0.878, 0.974, 0.5)
            assert config.model.max_position_embeddings == 512
    # Read as one config (the study, fine-tuning), a phased recipe is its base sections.
    assert load_config("pretrain/electra_base_two_phase").run.max_seq_length == 512
    assert phases.read_phases("pretrain/electra_base") is None


@pytest.mark.parametrize("text, message", [
    ("phases: []", "must be a non-empty list of phases"),
    ("phases: {run: {max_seq_length: 32}}", "must be a non-empty list of phases"),
    ("phases: [{model: {num_layers: 2}}]", "phase 1 in .*: unknown key 'model'"),
    ("phases: [{run: {max_seq_length: 32}}, {run: {sequence_length: 64}}]",
     "phase 2 in .*: unknown config key 'run.sequence_length'"),
    ("phases: [{run: 32}]", "run: must be a mapping"),
    ("phases: [{data: [a, b]}]", "data: must be a file pattern"),
])
def test_malformed_phase_lists_are_refused(tmp_path, text, message):
    recipe = _write_recipe(tmp_path / "recipe.yaml", "include: pretrain/demo\n" + text)
    with pytest.raises(ConfigError, match=message):
        phases.read_phases(recipe)


def test_a_recipe_including_a_phased_one_inherits_its_phases(tmp_path):
    recipe = _write_recipe(tmp_path / "mine.yaml", "include: pretrain/electra_base_two_phase\n"
                                                   "model: {num_layers: 6}\n")
    assert len(phases.read_phases(recipe)) == 2
    assert load_config(recipe).model.num_layers == 6


@pytest.mark.parametrize("case", ["shorter", "records", "train_steps", "phase_number",
                                  "no_data", "not_phased"])
def test_phased_runs_that_cannot_work_are_refused_before_anything_is_written(
        data, tmp_path, case):
    recipe = _write_recipe(tmp_path / "recipe.yaml", RECIPE % (10, 10))
    model_dir = tmp_path / "run"
    args, message = {
        "shorter": (_args(_write_recipe(tmp_path / "shorter.yaml", RECIPE.replace(
            "max_seq_length: 64", "max_seq_length: 16") % (10, 10)), data, model_dir),
                    "phase 2 trains at max_seq_length 16, shorter than phase 1's 32"),
        "records": (_args(recipe, data, model_dir,
                          long_records=_records_with_metadata(tmp_path)),
                    "were built with max_seq_length 32, but this run uses 64"),
        "train_steps": (_args(recipe, data, model_dir, "--train_steps", "5"),
                        "takes its steps from each phase's optimizer.train_steps"),
        "phase_number": (_args(recipe, data, model_dir, "--phase_data", f"3={data['long']}"),
                         "--phase_data names phase 3, but the recipe has phases 1 to 2"),
        "no_data": (["--config", recipe, "--model_dir", str(model_dir)],
                    "pretrains in 2 phases: it needs --data"),
        "not_phased": (["--config", "pretrain/demo", "--data", data["short"], "--phase_data",
                        f"2={data['long']}", "--model_dir", str(model_dir)],
                       "pretrain/demo has no phases"),
    }[case]
    result = run_in_process(args)
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr[-2000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0], result.stderr[-2000:]
    assert not model_dir.exists()


@pytest.mark.slow
def test_phase_2_starts_from_phase_1s_last_weights(data, tmp_path):
    """Phase 2's one step runs at learning rate 0 (the first step of its warmup), so its
    checkpoint holds the weights it started from: every one equal, bit for bit, to phase 1's
    last checkpoint (read from the files), and the two give the same discriminator logits.
    Phase 1's step at the full learning rate moved its weights from their initial values, so a
    phase 2 that started from fresh weights holds other ones."""
    from electra_tf import load

    recipe = _write_recipe(tmp_path / "recipe.yaml", HANDOFF_RECIPE)
    run = tmp_path / "run"
    result = run_in_process(_args(recipe, data, run))
    assert result.returncode == 0, result.stderr[-3000:]
    phase_1 = run / "phases" / "1"
    assert tf.train.latest_checkpoint(str(phase_1 / "checkpoints")).endswith("ckpt-1")
    assert tf.train.latest_checkpoint(str(run / "checkpoints")).endswith("ckpt-1")
    first, second = _weights(phase_1 / "checkpoints"), _weights(run / "checkpoints")
    assert set(first) == set(second)
    for name in first:
        if name.startswith("weights/"):
            np.testing.assert_array_equal(second[name], first[name], err_msg=name)
    ids = np.array([[2] + list(range(5, 40)) + [3] + [0] * 27], np.int32)
    inputs = (ids, (ids > 0).astype(np.int32), np.zeros_like(ids))
    np.testing.assert_allclose(load(str(run)).discriminator_logits(*inputs),
                               load(str(phase_1)).discriminator_logits(*inputs),
                               rtol=1e-6, atol=1e-6)


def _records_with_metadata(tmp_path):
    """Phase 2's records as built at length 32: the shards at 32 with the metadata.json that
    build_pretraining_dataset writes."""
    directory = tmp_path / "built32"
    write_records(directory, seq_len=32)
    (directory / "metadata.json").write_text(json.dumps({"max_seq_length": 32}))
    return str(directory / "*.tfrecord*")


def _wait_for_checkpoint(process, directory, deadline):
    # The state file is written after a checkpoint's files: wait for it to name one.
    while tf.train.latest_checkpoint(str(directory)) is None:
        assert process.poll() is None and time.time() < deadline, f"no checkpoint in {directory}"
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)


@pytest.mark.slow
def test_two_phases_train_in_turn_and_a_run_killed_in_each_phase_resumes_to_the_same_weights(
        data, tmp_path):
    recipe = _write_recipe(tmp_path / "recipe.yaml", RECIPE % (20, 24))
    run = tmp_path / "straight"
    result = run_cli(_args(recipe, data, run, "--deterministic"))
    assert result.returncode == 0, result.stderr[-3000:]
    phase_1 = run / "phases" / "1"
    assert tf.train.latest_checkpoint(str(phase_1 / "checkpoints")).endswith("ckpt-20")
    assert tf.train.latest_checkpoint(str(run / "checkpoints")).endswith("ckpt-24")
    assert "max_seq_length: 32" in (phase_1 / "config.yaml").read_text()
    final_config = (run / "config.yaml").read_text()
    assert "max_seq_length: 64" in final_config and "gradient_accumulation_steps: 2" in final_config
    assert "learning_rate: 0.0005" in final_config and "train_steps: 24" in final_config
    assert "phase 1 of 2 (OneDeviceStrategy" in result.stderr
    assert "phase 2 of 2 (OneDeviceStrategy, no XLA) from step 0 to 24" in result.stderr
    assert f"initialised weights from {phase_1 / 'checkpoints'}" in result.stderr
    assert (run / "curves.png").exists() and (phase_1 / "curves.png").exists()
    assert "finished phase 2 of 2, the last, at step 24" in result.stdout
    # Phase 2 started from phase 1's weights, and trained the positions phase 1 never saw.
    first, second = _weights(phase_1 / "checkpoints"), _weights(run / "checkpoints")
    position = next(n for n in first if "position_embeddings" in n)
    assert first[position].shape[0] == 64
    moved = np.abs(second[position] - first[position]).max(axis=1)
    assert moved[32:].min() > 1e-4, moved[32:]
    assert set(first) == set(second)
    again = run_in_process(_args(recipe, data, run))
    assert again.returncode == 0, again.stderr[-3000:]
    assert "phase 1 of 2 is done" in again.stderr and "already at step 24" in again.stderr

    # The same run killed in phase 1, then in phase 2, then rerun: the uninterrupted weights.
    killed = tmp_path / "killed"
    args = _args(recipe, data, killed, "--deterministic")
    command = [sys.executable, "-m", "electra_tf.run_pretraining", *args]
    environment = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    for wait_in in (killed / "phases" / "1" / "checkpoints", killed / "checkpoints"):
        process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, env=environment)
        _wait_for_checkpoint(process, wait_in, time.time() + 240)
        if wait_in.parent.name == "1":  # killed in phase 1: phase 2 had not started
            assert tf.train.latest_checkpoint(str(killed / "checkpoints")) is None
    assert not tf.train.latest_checkpoint(str(killed / "checkpoints")).endswith("ckpt-24")

    resumed = run_cli(args)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "phase 1 of 2 is done" in resumed.stderr and "resuming from" in resumed.stderr
    for directory in ("phases/1/checkpoints", "checkpoints"):
        expected, actual = (_weights(run / directory), _weights(killed / directory))
        assert set(expected) == set(actual)
        for name in expected:
            np.testing.assert_allclose(actual[name], expected[name], atol=1e-6,
                                       err_msg=f"{directory}: {name}")
    assert int(actual["batches_seen/.ATTRIBUTES/VARIABLE_VALUE"]) == 24
