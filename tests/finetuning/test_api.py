"""The two-line API: a classifier from a run or converted directory, ELECTRA or MLM baseline."""

import numpy as np
import pytest

from electra_tf.convert_checkpoint import write_electra_tf
from electra_tf.finetuning import build_classifier
from electra_tf.finetuning.source import resolve_source
from electra_tf.models import ElectraPretrainer
from electra_tf.training.checkpointing import CheckpointError
from tests.models.helpers import objective, tiny_model_config


@pytest.mark.parametrize("electra", [True, False])
def test_build_classifier_loads_the_pretrained_encoder(tmp_path, electra):
    pretrainer = ElectraPretrainer(tiny_model_config(), objective(electra_objective=electra))
    for i, variable in enumerate(pretrainer.weights):  # distinct values, not initialisers
        variable.assign(np.full(variable.shape, 0.001 * (i + 1), variable.dtype))
    write_electra_tf(pretrainer, str(tmp_path), None)
    source = resolve_source(str(tmp_path))
    assert source.encoder_scope == ("discriminator" if electra else "generator")

    model = build_classifier(str(tmp_path), num_labels=3)

    expected = {v.path: v.numpy() for v in pretrainer.encoder.weights}
    scope = source.encoder_scope
    loaded = {v.path.replace("discriminator/", f"{scope}/", 1): v.numpy() for v in model.encoder.weights}
    assert set(loaded) == set(expected) and len(loaded) > 20
    for path, value in loaded.items():
        np.testing.assert_array_equal(value, expected[path], err_msg=path)
    head = [v for v in model.weights if v.path.startswith("task_specific/")]
    assert [v.shape for v in head] == [(32, 3), (3,)]


def test_a_directory_without_config_is_refused(tmp_path):
    with pytest.raises(CheckpointError, match="config.yaml"):
        build_classifier(str(tmp_path))


@pytest.mark.slow
def test_finetune_reads_glue_from_tfds(tmp_path, monkeypatch):
    import signal
    import socket

    import tensorflow_datasets as tfds

    from electra_tf.finetuning import finetune
    from tests.finetuning.helpers import TINY_MODEL, write_vocab

    def refuse(*args, **kwargs):
        raise OSError("tests must not touch the network")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    vocab = write_vocab(tmp_path / "vocab.txt")
    before = signal.getsignal(signal.SIGTERM)
    with tfds.testing.mock_data(num_examples=16):
        report = finetune("glue/rte", use_tfds=True, model_dir=str(tmp_path / "run"),
                          vocab_file=vocab, export=False,
                          overrides=TINY_MODEL + ["finetune.max_seq_length=16",
                                                  "finetune.train_batch_size=8",
                                                  "finetune.num_train_epochs=1"])
    assert report["status"] == "finished" and report["task"] == "glue/rte"
    assert signal.getsignal(signal.SIGTERM) is before  # its preemption handler is gone again
    trial = report["trial_results"][0]
    assert trial["train_examples"] == 16 and trial["steps"] == 2
    assert 0.0 <= trial["dev"]["dev"]["last"]["accuracy"] <= 100.0


def test_a_runs_checkpoints_directory_means_the_run(tmp_path):
    write_electra_tf(ElectraPretrainer(tiny_model_config(), objective()), str(tmp_path), None)
    source = resolve_source(str(tmp_path / "checkpoints"))
    assert source == resolve_source(str(tmp_path))
    assert source.directory == str(tmp_path)


@pytest.mark.parametrize("config_json, fragment", [
    ({"registered_name": "keras_hub>ElectraBackbone", "config": {}},
     "is a keras-hub preset: convert it first, python -m electra_tf.convert_checkpoint --from "
     "keras_hub"),
    ({"model_type": "electra"}, "is a Hugging Face model directory: convert it with"),
])
def test_other_formats_are_refused_with_the_command_that_converts_them(tmp_path, config_json,
                                                                       fragment):
    import json

    (tmp_path / "config.json").write_text(json.dumps(config_json))
    with pytest.raises(CheckpointError, match=fragment.replace("(", r"\(")):
        resolve_source(str(tmp_path))


def test_finetune_sets_cpu_chains_before_anything_else(tmp_path, monkeypatch):
    from electra_tf.finetuning import api

    class Stop(Exception):
        pass

    calls = []

    def use_cpu_chains(chains, strategy, tpu, micro_batches):
        calls.append((chains, strategy, tpu, micro_batches))
        raise Stop

    monkeypatch.setattr(api.distribution, "use_cpu_chains", use_cpu_chains)
    monkeypatch.setattr(api, "prepare", lambda *args, **kwargs: pytest.fail("prepared first"))
    with pytest.raises(Stop):
        api.finetune("glue/rte", model_dir=str(tmp_path), cpu_chains=2,
                     overrides=["finetune.train_batch_size=12",
                                "finetune.gradient_accumulation_steps=3"])
    assert calls == [(2, "auto", None, [4])]  # the micro-batch, for picking the chains
