"""`finetune_tasks`, the one fine-tuning orchestrator: its steps in order, and `run_finetuning`
as nothing but its flags handed to it. The trials themselves are stubbed (their training is
tested in test_training.py and test_run_finetuning.py)."""

import json

import keras
import pytest

from electra_tf.errors import RunError
from electra_tf.finetuning import api
from electra_tf.finetuning.common import TaskOptions
from electra_tf.finetuning.job import FinetuneJob
from electra_tf.training.device_flags import DeviceOptions
from tests.finetuning.helpers import TINY_MODEL, pair_task, write_vocab
from tests.run_helpers import run_in_process

SMALL = TINY_MODEL + ["finetune.max_seq_length=16", "finetune.train_batch_size=8"]


@pytest.fixture
def steps(monkeypatch):
    """Every step finetune_tasks takes, in order, with the trials stubbed to a report."""
    taken = []
    monkeypatch.setattr(api.distribution, "split_cpu", lambda n: taken.append(("split_cpu", n)))
    monkeypatch.setattr(api.distribution, "use_cpu_chains", lambda chains, strategy, tpu,
                        micro_batches: taken.append(("chains", chains, micro_batches)))
    real_prepare = api.prepare

    def prepare(task, **kwargs):
        taken.append(("prepare", getattr(task, "name", task)))
        return real_prepare(task, **kwargs)

    monkeypatch.setattr(api, "prepare", prepare)
    real_make_strategy = api.distribution.make_strategy
    monkeypatch.setattr(api.distribution, "make_strategy", lambda name, tpu: (
        taken.append(("strategy", name)), real_make_strategy(name, tpu))[1])

    def run_trials(task, config, model_dir, **options):
        taken.append(("trials", model_dir, keras.mixed_precision.dtype_policy().name,
                      options["jit_compile"], config.finetune.vocab_file is not None))
        status = "preempted" if "stop" in model_dir else "finished"
        return {"status": status, "task": task.name}

    monkeypatch.setattr(api.runner, "run_trials", run_trials)
    return taken


def test_machine_then_every_task_then_strategy_and_policy_then_trials(steps, tmp_path):
    vocab = write_vocab(tmp_path / "vocab.txt")
    tasks = [pair_task(n_train=16, n_dev=8), pair_task(n_train=16, n_dev=8)]
    object.__setattr__(tasks[1], "name", "csv2")
    reported = []
    before = keras.mixed_precision.dtype_policy().name
    reports = api.finetune_tasks(
        tasks, model_dir=str(tmp_path / "runs"), vocab_file=vocab, overrides=SMALL,
        mixed_precision="bf16", cpu_devices=0, cpu_chains=1,
        on_report=lambda report, directory: reported.append(directory))
    assert [step[0] for step in steps] == [
        "split_cpu", "chains", "prepare", "prepare", "strategy", "trials", "trials"]
    assert steps[1] == ("chains", 1, [8, 8])  # every task's micro-batch, before any data
    trial_dirs = [step[1] for step in steps if step[0] == "trials"]
    assert trial_dirs == reported == [str(tmp_path / "runs" / t.directory_name) for t in tasks]
    # in bf16 while training, XLA off on a CPU, the vocabulary handed on
    assert all(step[2:] == ("mixed_bfloat16", False, True) for step in steps if step[0] == "trials")
    assert keras.mixed_precision.dtype_policy().name == before  # the caller's policy is back
    assert [r["status"] for r in reports] == ["finished", "finished"]


def test_one_task_trains_in_model_dir_and_a_preempted_task_ends_the_list(steps, tmp_path):
    vocab = write_vocab(tmp_path / "vocab.txt")
    report = api.finetune(pair_task(n_train=16, n_dev=8), model_dir=str(tmp_path / "one"),
                          vocab_file=vocab, overrides=SMALL)
    assert report["status"] == "finished" and steps[-1][1] == str(tmp_path / "one")
    tasks = [pair_task(n_train=16, n_dev=8) for _ in range(3)]
    for task, name in zip(tasks, ("stop_here", "b", "c")):
        object.__setattr__(task, "name", name)
    reports = api.finetune_tasks(tasks, model_dir=str(tmp_path / "many"), vocab_file=vocab,
                                 overrides=SMALL)
    assert [r["status"] for r in reports] == ["preempted"]


@pytest.mark.parametrize("options, message", [
    ({"model_dir": ""}, "--model_dir is required"),
    ({"model_dir": "x", "num_trials": 0}, "--num_trials must be at least 1"),
])
def test_what_cannot_start_is_refused_before_anything(steps, options, message):
    with pytest.raises(RunError, match=message):
        api.finetune_tasks(["glue/rte"], **options)
    assert steps == []


def test_the_command_hands_every_flag_to_finetune_tasks_as_one_job(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(api, "finetune_tasks", lambda job, **options: calls.append(
        (job, options)) or [])
    result = run_in_process([
        "--task", "glue/rte,csv", "--model_dir", str(tmp_path), "--init_checkpoint", "runs/x",
        "--config", "finetune/small", "--override", "finetune.seed=3", "--vocab_file", "v.txt",
        "--num_trials", "2", "--strategy", "one_device", "--mixed_precision", "bf16",
        "--nojit_compile", "--noexport", "--with_tokenizer", "--do_predict",
        "--data_dir", "glue", "--tfds", "--tfds_data_dir", "t", "--train_file", "a",
        "--dev_file", "b", "--test_file", "c", "--predict_file", "d", "--text_a_column", "x",
        "--text_b_column", "y", "--label_column", "z", "--labels", "p,q", "--regression",
        "--label_range", "0,5", "--tag_column", "1"], module="electra_tf.run_finetuning")
    assert result.returncode == 0, result.stderr[-2000:]
    [(job, options)] = calls
    assert list(options) == ["on_report"] and callable(options["on_report"])
    assert isinstance(job, FinetuneJob)
    assert job.tasks == ("glue/rte", "csv") and job.model_dir == str(tmp_path)
    assert (job.init_checkpoint, job.num_trials, job.export, job.with_tokenizer,
            job.do_predict) == ("runs/x", 2, False, True, True)
    assert job.recipe.name == "finetune/small"
    assert job.recipe.overrides == ("finetune.seed=3", "finetune.vocab_file=v.txt")
    assert job.devices == DeviceOptions(strategy="one_device", tpu=None, mixed_precision="bf16",
                                        jit_compile=False, cpu_devices=0, cpu_chains=0)
    assert job.task_options == TaskOptions(
        data_dir="glue", use_tfds=True, tfds_data_dir="t", train_file="a", dev_file="b",
        test_file="c", predict_file="d", text_a_column="x", text_b_column="y",
        label_column="z", labels=["p", "q"], regression=True, label_range=(0.0, 5.0),
        tag_column=1, with_test=True)


def test_the_recipe_is_read_once_for_every_task(steps, tmp_path, monkeypatch):
    """One read of each file of the recipe (its includes too), however many tasks share it
    and however many times their configs are built from it."""
    from electra_tf import config as config_lib

    reads = []
    real_read = config_lib._read_file
    monkeypatch.setattr(config_lib, "_read_file", lambda path, including: (
        reads.append(path), real_read(path, including))[1])
    vocab = write_vocab(tmp_path / "vocab.txt")
    tasks = [pair_task(n_train=16, n_dev=8), pair_task(n_train=16, n_dev=8)]
    object.__setattr__(tasks[1], "name", "csv2")
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("include: finetune/default\nfinetune: {seed: 4}\n")
    api.finetune_tasks(tasks, model_dir=str(tmp_path / "runs"), vocab_file=vocab,
                       overrides=SMALL, config=str(recipe))
    assert reads == [str(recipe), "finetune/default"]
    assert steps[1] == ("chains", 0, [8, 8])


def test_a_negative_learning_rate_is_refused_before_any_trial(steps, tmp_path):
    from electra_tf.config import ConfigError

    vocab = write_vocab(tmp_path / "vocab.txt")
    with pytest.raises(ConfigError, match="optimizer.learning_rate must be positive, got -0.001"):
        api.finetune_tasks([pair_task(n_train=16, n_dev=8)], model_dir=str(tmp_path / "run"),
                           vocab_file=vocab, overrides=[*SMALL, "optimizer.learning_rate=-1e-3"])
    assert "trials" not in [step[0] for step in steps] and not (tmp_path / "run").exists()
