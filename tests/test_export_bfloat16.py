"""Exports of bfloat16 copies (`electra_tf.export.precision.serving_copy`): every exporter's
signatures keep their float32 outputs and core ops, the weights are stored in bfloat16, and the
outputs are the float32 export's within bfloat16 rounding."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.export.precision import serving_copy
from electra_tf.models.classifier import ElectraClassifier
from tests.models.helpers import tiny_model_config
from tests.test_export import op_report
from tests.test_export_xla import exporter_of, paired_outputs

# bfloat16 keeps 8 bits of mantissa: each weight and each matmul result is off by up to 2^-9
# relative, and the errors of a dozen matmuls add up. On the tiny random models here the
# outputs differ by at most 0.03 (the tagger's logits, of magnitude up to 4), a seventh of this
# tolerance at that magnitude: room for CPUs whose kernels round in another order. A bfloat16
# model whose matmuls were wrong (a transposed or unrounded weight, a lost bias) is off by the
# outputs' own magnitude. Argmax ids and beam positions are not compared: bfloat16 rounding
# reorders near-tied scores of a random model.
ATOL, RTOL = 0.08, 0.05


def _loaded(name, root):
    """{dtype: the loaded SavedModel} of exporter `name`'s model, float32 and bfloat16."""
    export = exporter_of(name)
    return {dtype: tf.saved_model.load(export(str(root / f"{name}_{dtype}"), False, dtype))
            for dtype in ("float32", "bfloat16")}


@pytest.mark.parametrize("name", ["discriminator", "classifier", *(
    pytest.param(name, marks=pytest.mark.slow)
    for name in ("regressor", "tagger", "question_answerer"))])
def test_bfloat16_export_matches_the_float32_one(name, tmp_path):
    loaded = _loaded(name, tmp_path)
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
