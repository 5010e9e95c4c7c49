"""`import electra_tf`: every public name resolves, the import changes nothing outside the package,
`tune_cpu` is the opt-in, `pretrain` runs."""

import json
import os
import re
import signal
import subprocess
import sys

import keras
import pytest
import tensorflow as tf

import electra_tf
from electra_tf import xla_cpu
from electra_tf.cpu_features import cpu_flags
from tests.run_helpers import REPO, cli_args, write_records, write_vocab


def test_every_public_name_resolves():
    assert electra_tf.__all__ and len(set(electra_tf.__all__)) == len(electra_tf.__all__)
    for name in electra_tf.__all__:
        assert getattr(electra_tf, name) is not None, name
    assert set(electra_tf.__all__) <= set(dir(electra_tf))
    assert issubclass(electra_tf.UserError, ValueError)


def test_unknown_name_is_an_attribute_error():
    try:
        electra_tf.no_such_thing  # noqa: B018
    except AttributeError as e:
        assert "no_such_thing" in str(e)
    else:
        raise AssertionError("expected AttributeError")


@pytest.mark.slow
def test_importing_the_package_and_every_module_changes_nothing_outside_it():
    # A fresh interpreter is the point (this one has TensorFlow loaded and tuned, conftest.py),
    # with none of the variables the commands set for TensorFlow.
    environ = {key: value for key, value in os.environ.items()
               if key not in ("TF_ENABLE_ONEDNN_OPTS", "XLA_FLAGS")}
    result = subprocess.run(
        [sys.executable, os.path.join(REPO, "tests", "import_side_effects_probe.py")],
        capture_output=True, text=True, cwd=REPO, timeout=300, env=environ)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["package_import"] == {"started": [], "environ": []}
    assert report["siblings_loaded"] == []
    assert report["modules"] > 100 and report["changed"] == []


def test_tune_cpu_sets_what_the_commands_run_with_and_the_users_values_win():
    environ = {}
    changed = electra_tf.tune_cpu(environ, modules={})
    assert changed == environ and environ["TF_ENABLE_ONEDNN_OPTS"] == "1"
    assert xla_cpu.WITHOUT_YNNPACK in environ["XLA_FLAGS"].split()
    assert (xla_cpu.WIDE in environ["XLA_FLAGS"]) == ("avx512f" in cpu_flags())
    assert electra_tf.tune_cpu(environ, modules={}) == {}  # once is enough
    mine = {"TF_ENABLE_ONEDNN_OPTS": "0", "XLA_FLAGS": f"{xla_cpu.OPTION}=256"}
    environ = dict(mine)
    assert electra_tf.tune_cpu(environ, modules={}) == {
        "XLA_FLAGS": f"{xla_cpu.OPTION}=256 {xla_cpu.WITHOUT_YNNPACK}",
        "TF_CPP_MIN_LOG_LEVEL": "3"}
    assert electra_tf.tune_cpu({"TF_CPP_MIN_LOG_LEVEL": "0"}, modules={})[
        "TF_ENABLE_ONEDNN_OPTS"] == "1"  # the user's log level stays, the rest is set
    assert "TF_CPP_MIN_LOG_LEVEL" not in electra_tf.tune_cpu({}, modules={}, quiet=False)
    with pytest.warns(RuntimeWarning, match="after TensorFlow was imported"):
        electra_tf.tune_cpu({}, modules={"tensorflow": tf})


QUIET_PYTHON_USER = """
import electra_tf
electra_tf.tune_cpu()
import tensorflow as tf
from electra_tf.models import ElectraPretrainer
from tests.models.helpers import objective, tiny_model_config
ElectraPretrainer(tiny_model_config(), objective())  # oneDNN's int64 note, XLA's start-up
print(tf.reduce_sum(tf.range(3)).numpy())
"""


@pytest.mark.slow
def test_tune_cpu_keeps_tensorflows_cpp_lines_out_unless_asked_for_them():
    from tests.run_helpers import REPO

    outputs = {}
    for level in (None, "0"):
        env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
        if level is not None:
            env["TF_CPP_MIN_LOG_LEVEL"] = level
        result = subprocess.run([sys.executable, "-c", QUIET_PYTHON_USER], capture_output=True,
                                text=True, cwd=REPO, env=env, timeout=300)
        assert result.returncode == 0 and result.stdout.strip() == "3", result.stderr[-2000:]
        outputs[level] = result.stderr
    assert outputs[None] == ""
    # the lines were there to keep out (which ones depends on the CPU): C++ log lines
    assert re.search(r"^[IWE]0000 ", outputs["0"], re.MULTILINE), outputs["0"]


def test_every_error_a_user_can_cause_is_a_user_error():
    from electra_tf.config import ConfigError
    from electra_tf.convert.hf import ConversionError
    from electra_tf.task_data.classification_data import TaskDataError
    from electra_tf.pretraining_data.corpus import CorpusError
    from electra_tf.pretraining_data.pipeline import DataError
    from electra_tf.pretraining_data.builder import DatasetBuildError
    from electra_tf.pretraining_data.run_vocabulary import VocabularyMismatch
    from electra_tf.task_data.squad import SquadDataError
    from electra_tf.text.tokenization import VocabularyError
    from electra_tf.export.savedmodel import ExportError
    from electra_tf.finetuning.common import FinetuneError
    from electra_tf.training.checkpointing import CheckpointError
    from electra_tf.training.distribution import StrategyError
    from electra_tf.training.pretrain import RunError

    for error in (ConfigError, ConversionError, TaskDataError, CorpusError, DataError,
                  DatasetBuildError, VocabularyMismatch, SquadDataError, VocabularyError,
                  ExportError, FinetuneError, CheckpointError, StrategyError, RunError):
        assert issubclass(error, electra_tf.UserError), error


def _tiny_pretraining(tmp_path):
    """(records, vocab.txt, overrides) of a tiny pretraining run in tmp_path."""
    data = write_records(tmp_path / "records")
    vocab = write_vocab(tmp_path / "vocab.txt")
    args = cli_args(data, vocab, tmp_path / "run", 4)
    return data, vocab, [args[i + 1] for i, a in enumerate(args) if a == "--override"]


@pytest.mark.slow
def test_pretrain_from_python(tmp_path):
    data, vocab, overrides = _tiny_pretraining(tmp_path)
    before = signal.getsignal(signal.SIGTERM)
    result = electra_tf.pretrain(config="pretrain/demo", data=data, vocab_file=vocab,
                                 model_dir=str(tmp_path / "run"), train_steps=4,
                                 overrides=overrides, export=False, mixed_precision="bf16")
    assert result.status == "finished" and result.step == 4
    # The model keeps bf16; the caller's global policy is left as it was.
    assert result.model.dtype_policy.name == "mixed_bfloat16"
    assert keras.mixed_precision.dtype_policy().name == "float32"
    assert signal.getsignal(signal.SIGTERM) is before  # its preemption handler is gone again
    assert result.checkpoint.endswith("ckpt-4") and result.export_dir is None
    assert result.config.model.vocab_size == 120 and result.config.run.max_seq_length == 32
    assert {"loss", "disc_auc"} <= set(result.last_metrics)
    assert isinstance(result.model, electra_tf.ElectraPretrainer)
    assert os.path.exists(os.path.join(result.model_dir, "config.yaml"))
    # Called again, it continues from the checkpoint instead of starting over.
    again = electra_tf.pretrain(config="pretrain/demo", data=data, vocab_file=vocab,
                                model_dir=str(tmp_path / "run"), train_steps=6,
                                overrides=overrides, export=False)
    assert again.step == 6 and tf.train.latest_checkpoint(str(tmp_path / "run" / "checkpoints"))


@pytest.mark.slow
def test_pretrain_stops_at_a_step_with_the_schedule_of_the_whole_run(tmp_path):
    data, vocab, overrides = _tiny_pretraining(tmp_path)
    overrides += ["optimizer.warmup_steps=0", "optimizer.learning_rate=1e-3"]
    common = dict(config="pretrain/demo", data=data, vocab_file=vocab,
                  model_dir=str(tmp_path / "run"), train_steps=8, overrides=overrides,
                  export=False)
    part = electra_tf.pretrain(stop_at_step=4, **common)
    assert part.status == "finished" and part.step == 4 and part.checkpoint.endswith("ckpt-4")
    assert part.config.optimizer.train_steps == 8
    # Halfway through a linear decay over 8 steps, not at the end of one over 4.
    assert float(part.model.optimizer.learning_rate) == pytest.approx(5e-4, rel=1e-3)
    rest = electra_tf.pretrain(**common)  # continues to the end of the schedule
    assert rest.step == 8 and rest.checkpoint.endswith("ckpt-8")
    with pytest.raises(electra_tf.UserError, match="stop_at_step"):
        electra_tf.pretrain(stop_at_step=0, **common)


def test_pretrain_refuses_bad_input_with_a_user_error(tmp_path):
    (tmp_path / "a_file").write_text("x")
    try:
        electra_tf.pretrain(data=str(tmp_path / "nothing*"), model_dir=str(tmp_path / "a_file"))
    except electra_tf.UserError as e:
        assert "a_file" in str(e)
    else:
        raise AssertionError("expected a UserError")
