"""Exports of bfloat16 copies (`electra_tf.export.precision.serving_copy`): every exporter's
signatures keep their float32 outputs and core ops, the weights are stored in bfloat16, and the
outputs are the float32 export's within bfloat16 rounding."""

import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.export.precision import serving_copy
from electra_tf.models.classifier import ElectraClassifier
from tests.models.helpers import tiny_model_config
from tests.test_export import BLOCK_NON_TF_IMPORTS, op_report, padded_inputs
from tests.test_export_xla import exporter_of, paired_outputs

# bfloat16 keeps 8 bits of mantissa: each weight and each matmul result is off by up to 2^-9
# relative, and the errors of a dozen matmuls add up. On the tiny random models here the
# outputs differ by at most 0.03 (the tagger's logits, of magnitude up to 4), a seventh of this
# tolerance at that magnitude: room for CPUs whose kernels round in another order. A bfloat16
# model whose matmuls were wrong (a transposed or unrounded weight, a lost bias) is off by the
# outputs' own magnitude. Argmax ids and beam positions are not compared: bfloat16 rounding
# reorders near-tied scores of a random model.
ATOL, RTOL = 0.08, 0.05


def _loaded(name, root, plain_export):
    """{dtype: the loaded SavedModel} of exporter `name`'s model, float32 and bfloat16."""
    return {"float32": tf.saved_model.load(plain_export(name)),
            "bfloat16": tf.saved_model.load(exporter_of(name)(str(root / f"{name}_bfloat16"),
                                                              False, "bfloat16"))}


@pytest.mark.parametrize("name", ["discriminator", "classifier", *(
    pytest.param(name, marks=pytest.mark.slow)
    for name in ("regressor", "tagger", "question_answerer"))])
@pytest.mark.slow
def test_bfloat16_export_matches_the_float32_one(name, tmp_path, plain_export):
    loaded = _loaded(name, tmp_path, plain_export)
    assert {v.dtype for v in loaded["bfloat16"].variables if v.dtype.is_floating} == {
        tf.bfloat16}
    plain, half = (model.signatures["serving_default"] for model in loaded.values())
    # No op the float32 export lacks (tests/test_export.py holds that one to the core allowlist)
    (ops, xla), (plain_ops, _) = op_report(half), op_report(plain)
    assert ops - plain_ops == set() and xla == []
    for key, value, got in paired_outputs(plain, half):
        assert got.dtype == value.dtype, key  # float32 outputs stay float32
        if value.dtype.is_floating:
            np.testing.assert_allclose(got.numpy(), value.numpy(), atol=ATOL, rtol=RTOL,
                                       err_msg=key)
            assert not np.array_equal(got.numpy(), value.numpy()), key  # bfloat16 ran


def test_serving_copy_rounds_the_weights_and_leaves_float32_alone():
    keras.utils.set_random_seed(3)
    model = ElectraClassifier(tiny_model_config(), num_labels=3)
    assert serving_copy(model, "float32") is model
    copy = serving_copy(model, "bfloat16")
    assert type(copy) is ElectraClassifier and copy.dtype_policy.name == "bfloat16"
    assert keras.config.dtype_policy().name == "float32"  # the global policy is restored
    for original, rounded in zip(model.weights, copy.weights):
        assert original.path == rounded.path and rounded.dtype == "bfloat16"
        np.testing.assert_array_equal(
            np.asarray(rounded.numpy(), np.float32),
            tf.cast(tf.cast(original.value, tf.bfloat16), tf.float32).numpy())
    with pytest.raises(ValueError, match="serving dtype 'float16' is not one of float32, "
                                         "bfloat16"):
        serving_copy(model, "float16")


TENSORFLOW_ONLY = BLOCK_NON_TF_IMPORTS + textwrap.dedent("""
    import numpy as np
    import tensorflow as tf

    export_dir, inputs_path, outputs_path = sys.argv[1:4]
    inputs = dict(np.load(inputs_path))
    out = tf.saved_model.load(export_dir).signatures["serving_default"](
        **{name: tf.constant(value) for name, value in inputs.items()})
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    np.savez(outputs_path, loaded=np.array(loaded + ["-"]), logits=out["logits"].numpy())
""")


@pytest.mark.slow
@pytest.mark.parametrize("dtype, transposed_feedforward", [("bfloat16", False),
                                                           ("float32", True)])
def test_serving_copy_export_runs_where_only_tensorflow_is(tmp_path, dtype,
                                                           transposed_feedforward):
    """As a model server would load it: no keras, keras-hub or electra_tf in the process. The
    bfloat16 export and the one with transposed feed-forward kernels (tests/
    test_export_transposed.py), whose extra kernels are plain tf.Variables."""
    export_dir = str(tmp_path / "classifier")
    exporter_of("classifier")(export_dir, False, dtype, transposed_feedforward)
    ids, mask, segments = padded_inputs([9, 4], 9, seed=5)
    inputs = {"input_ids": ids, "input_mask": mask, "segment_ids": segments}
    np.savez(tmp_path / "inputs.npz", **inputs)
    (tmp_path / "serve.py").write_text(TENSORFLOW_ONLY)
    result = subprocess.run(
        [sys.executable, str(tmp_path / "serve.py"), export_dir, str(tmp_path / "inputs.npz"),
         str(tmp_path / "outputs.npz")], capture_output=True, text=True, timeout=120,
        cwd=tmp_path, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=""))
    assert result.returncode == 0, result.stderr[-3000:]
    out = np.load(tmp_path / "outputs.npz")
    assert list(out["loaded"]) == ["-"] and out["logits"].dtype == np.float32
    expected = tf.saved_model.load(export_dir).signatures["serving_default"](
        **{name: tf.constant(value) for name, value in inputs.items()})["logits"]
    np.testing.assert_allclose(out["logits"], expected.numpy(), atol=1e-6, rtol=0)
