"""LiteRT export (electra_tf.export.litert, python -m electra_tf.export_litert): every model kind
converts and `ai-edge-litert`'s interpreter gives what the Keras model gives on the same padded
inputs (float32 to 1e-5; float16 and dynamic int8 within stated shares of the logits' range),
in a process without TensorFlow too; bad requests are refused with nothing written."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from electra_tf.export.litert import QUANTIZATIONS, export_litert
from electra_tf.export.savedmodel import ExportError
from electra_tf.models import (ElectraClassifier, ElectraPretrainer, ElectraQuestionAnswerer,
                               ElectraTagger)
from tests.models.helpers import objective, tiny_model_config
from tests.models.test_serialization import randomise
from tests.run_helpers import REPO, _own_flags, run_in_process

LENGTH = 16


def inputs(batch=3, seed=0):
    """int32 ids, mask (the rows' last tokens padded), segments [batch, LENGTH]."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, 120, (batch, LENGTH)).astype(np.int32)
    mask = np.ones_like(ids)
    for row in range(batch):
        mask[row, LENGTH - 3 * row:] = 0
    ids[mask == 0] = 0
    segments = np.zeros_like(ids)
    segments[:, LENGTH // 2:] = mask[:, LENGTH // 2:]
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segments}


def run_litert(path, features):
    from ai_edge_litert.interpreter import Interpreter

    return Interpreter(model_path=str(path)).get_signature_runner()(**features)


def keras_outputs(kind, model, features):
    """What the Keras model computes, named as the LiteRT file names its outputs."""
    if kind == "pretrainer":
        logits = np.asarray(model.discriminator_logits(*features.values()))
        return {"logits": logits, "probabilities": 1 / (1 + np.exp(-logits))}
    if kind == "encoder":
        return {k: np.asarray(v) for k, v in model.embed(*features.values()).items()}
    outputs = model(features, training=False)
    if isinstance(outputs, dict):
        return {k: np.asarray(v) for k, v in outputs.items()}
    logits = np.asarray(outputs)
    exp = np.exp(logits - logits.max(-1, keepdims=True))
    return {"logits": logits, "probabilities": exp / exp.sum(-1, keepdims=True)}


def make(kind):
    config = tiny_model_config()
    model = {"classifier": lambda: ElectraClassifier(config, num_labels=3),
             "tagger": lambda: ElectraTagger(config, num_tags=4),
             "question answerer": lambda: ElectraQuestionAnswerer(config, beam_size=3),
             "pretrainer": lambda: ElectraPretrainer(config, objective()),
             "encoder": lambda: ElectraClassifier(config, num_labels=2)}[kind]()
    randomise(model, seed=1)
    return model.encoder if kind == "encoder" else model


@pytest.mark.parametrize("kind", ["classifier", "tagger", "question answerer", "pretrainer",
                                  "encoder"])
@pytest.mark.slow
def test_every_kind_converts_and_answers_as_the_keras_model(kind, tmp_path):
    model = make(kind)
    written = export_litert(model, str(tmp_path / "m.tflite"), max_seq_length=LENGTH)
    assert written["kind"] == kind and os.path.getsize(written["path"]) == written["bytes"]
    features = inputs()
    got, expected = run_litert(written["path"], features), keras_outputs(kind, model, features)
    assert sorted(got) == sorted(expected)
    for name, value in expected.items():
        if np.issubdtype(value.dtype, np.integer):
            np.testing.assert_array_equal(got[name], value, err_msg=name)
        else:
            np.testing.assert_allclose(got[name], value, rtol=0, atol=1e-5, err_msg=name)
    assert not list(tmp_path.glob("*.partial"))


@pytest.mark.parametrize("quantize, share", [("float16", 0.01), ("int8_dynamic", 0.05)])
@pytest.mark.slow
def test_quantized_files_are_smaller_and_close(quantize, share, tmp_path):
    """`share`: the largest difference allowed, as a share of the logits' spread (float16
    keeps about three digits of each weight, int8 two)."""
    model = ElectraClassifier(tiny_model_config(vocab_size=2000, hidden_size=64,
                                                intermediate_size=256), num_labels=3)
    randomise(model, seed=2)
    full = export_litert(model, str(tmp_path / "f32.tflite"), max_seq_length=LENGTH)
    small = export_litert(model, str(tmp_path / "q.tflite"), max_seq_length=LENGTH,
                          quantize=quantize)
    assert small["bytes"] < (0.6 if quantize == "float16" else 0.4) * full["bytes"]
    features = inputs(batch=8, seed=3)
    expected = run_litert(full["path"], features)["logits"]
    got = run_litert(small["path"], features)["logits"]
    spread = expected.max() - expected.min()
    assert np.abs(got - expected).max() <= share * spread
    assert np.abs(got - expected).max() > 0  # quantized indeed


NO_TENSORFLOW = """
import json, sys
sys.modules["tensorflow"] = None  # any import of TensorFlow fails
import numpy as np
from ai_edge_litert.interpreter import Interpreter
features = {k: np.array(v, np.int32) for k, v in json.loads(sys.argv[2]).items()}
out = Interpreter(model_path=sys.argv[1]).get_signature_runner()(**features)
print(json.dumps(out["logits"].tolist()))
"""


@pytest.mark.slow
def test_a_process_without_tensorflow_serves_the_file(tmp_path):
    model = make("classifier")
    path = export_litert(model, str(tmp_path / "m.tflite"), max_seq_length=LENGTH)["path"]
    features = inputs()
    result = subprocess.run(
        [sys.executable, "-c", NO_TENSORFLOW, path,
         json.dumps({k: v.tolist() for k, v in features.items()})],
        capture_output=True, text=True, cwd=str(tmp_path), timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    np.testing.assert_allclose(json.loads(result.stdout.splitlines()[-1]),
                               keras_outputs("classifier", model, features)["logits"],
                               rtol=0, atol=1e-5)


def test_bad_requests_are_refused_and_nothing_is_written(tmp_path, monkeypatch):
    model = make("classifier")
    path = tmp_path / "m.tflite"
    with pytest.raises(ExportError, match="quantize must be one of none, float16, int8_dynamic"):
        export_litert(model, str(path), quantize="int4")
    with pytest.raises(ExportError, match=r"max_seq_length must be in \[2, 64\]"):
        export_litert(model, str(path), max_seq_length=65)
    with pytest.raises(ExportError, match="has no LiteRT export"):
        export_litert(object(), str(path))

    import tensorflow as tf

    class Refusing:
        optimizations, target_spec = [], None

        def convert(self):
            raise RuntimeError("'tf.Foo' op is neither a custom op nor a flex op\nmore")

    monkeypatch.setattr(tf.lite.TFLiteConverter, "from_saved_model",
                        staticmethod(lambda directory: Refusing()))
    with pytest.raises(ExportError, match="cannot convert this classifier .*neither a custom "
                                          "op.*export_savedmodel"):
        export_litert(model, str(path), max_seq_length=LENGTH)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_the_command_exports_a_fine_tuning_run_at_its_length(tmp_path):
    from tests.test_loading import fine_tuning_run

    fine_tuning_run(tmp_path / "trial", "classification")  # max_seq_length 16
    args = ["--model_dir", tmp_path / "trial", "--quantize", "int8_dynamic"]
    result = run_in_process(args, module="electra_tf.export_litert", cwd=REPO)
    assert result.returncode == 0, result.stderr[-3000:]
    path = tmp_path / "trial" / "model.int8_dynamic.tflite"
    assert f"wrote {path}: the classifier, int8_dynamic, length 16," in result.stdout
    assert run_litert(path, inputs())["logits"].shape == (3, 3)
    again = run_in_process(args, module="electra_tf.export_litert", cwd=REPO)
    assert again.returncode == 1 and "exists: pass --overwrite" in again.stderr


def test_the_command_offers_the_quantizations_the_export_takes():
    with _own_flags("electra_tf.export_litert") as command:  # its list, kept free of TensorFlow
        assert command.QUANTIZATIONS == QUANTIZATIONS
