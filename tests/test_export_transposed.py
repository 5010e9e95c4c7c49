"""Exports whose transformer blocks hold their feed-forward input kernels transposed
(`serving_copy(..., transposed_feedforward=True)`): the same outputs as the plain export, the
same core ops, a transposed product per block and chain of inference, and the model left as
it was."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.export.precision import serving_copy
from electra_tf.models.classifier import ElectraClassifier
from electra_tf.models.transformer import TransformerLayer
from tests.models.helpers import tiny_model_config
from tests.test_export import op_report
from tests.test_export_bfloat16 import ATOL as BFLOAT16_ATOL, RTOL as BFLOAT16_RTOL
from tests.test_export_xla import exporter_of, paired_outputs

# The product reads the same numbers in another layout: float32 rounding only (the outputs of
# the tiny random models here differ by under 1e-6; oneDNN may sum in another order).
ATOL, RTOL = 1e-5, 1e-5
LAYERS = tiny_model_config().num_layers


def transposed_products_per_export(name):
    """The transposed products an export adds: one per block and chain in each of inference's
    two forms (the two halves of a batch, the two halves of a single sequence), but one in a
    single sequence's last block of a classifier, which computes [CLS] alone."""
    return 4 * LAYERS - (name in ("classifier", "regressor"))


def transposed_products(signature):
    """MatMul ops with transpose_b in a signature's graph and function library."""
    graph_def = signature.graph.as_graph_def()
    nodes = list(graph_def.node) + [node for function in graph_def.library.function
                                    for node in function.node_def]
    return [node for node in nodes if node.op == "MatMul" and node.attr["transpose_b"].b]


@pytest.mark.parametrize("name", ["discriminator", "classifier", *(
    pytest.param(name, marks=pytest.mark.slow)
    for name in ("regressor", "tagger", "question_answerer"))])
@pytest.mark.slow
def test_transposed_export_matches_the_plain_one(name, tmp_path, plain_export):
    directories = plain_export(name), exporter_of(name)(
        str(tmp_path / "transposed"), False, "float32", True)
    plain, transposed = (tf.saved_model.load(directory).signatures["serving_default"]
                         for directory in directories)
    # One [intermediate, H] kernel more per block is stored (besides the feed-forward output
    # kernels of that shape), and used by both chains of inference.
    plain_shapes, transposed_shapes = (
        [tuple(shape) for _, shape in tf.train.list_variables(f"{directory}/variables/variables")]
        for directory in directories)
    config = tiny_model_config()
    assert transposed_shapes.count((config.intermediate_size, config.hidden_size)) == (
        plain_shapes.count((config.intermediate_size, config.hidden_size)) + LAYERS)
    assert len(transposed_products(transposed)) == (len(transposed_products(plain))
                                                    + transposed_products_per_export(name))
    (ops, xla), (plain_ops, _) = op_report(transposed), op_report(plain)
    assert ops - plain_ops == set() and xla == []  # the allowlist of tests/test_export.py
    for key, value, got in paired_outputs(plain, transposed):
        assert got.dtype == value.dtype, key
        if value.dtype.is_floating:
            np.testing.assert_allclose(got.numpy(), value.numpy(), atol=ATOL, rtol=RTOL,
                                       err_msg=key)
        else:
            np.testing.assert_array_equal(got.numpy(), value.numpy(), err_msg=key)


@pytest.mark.slow
def test_transposed_bfloat16_export_matches_the_float32_one(tmp_path, plain_export):
    directories = plain_export("classifier"), exporter_of("classifier")(
        str(tmp_path / "bfloat16"), False, "bfloat16", True)
    plain, half = (tf.saved_model.load(directory).signatures["serving_default"]
                   for directory in directories)
    assert len(transposed_products(half)) == (len(transposed_products(plain))
                                              + transposed_products_per_export("classifier"))
    for key, value, got in paired_outputs(plain, half):
        if value.dtype.is_floating:
            np.testing.assert_allclose(got.numpy(), value.numpy(), atol=BFLOAT16_ATOL,
                                       rtol=BFLOAT16_RTOL, err_msg=key)


def test_serving_copy_transposes_a_copy_and_leaves_the_model_alone():
    keras.utils.set_random_seed(5)
    # Without dropout, so that training's outputs compare too.
    model = ElectraClassifier(tiny_model_config(hidden_dropout=0.0, attention_dropout=0.0),
                              num_labels=3, dropout=0.0)
    copy = serving_copy(model, "float32", transposed_feedforward=True)
    assert copy is not model and type(copy) is ElectraClassifier
    assert len(copy.weights) == len(model.weights)  # the copies are no Keras weights

    def blocks(m):
        return [layer for layer in m._flatten_layers() if isinstance(layer, TransformerLayer)]

    assert len(blocks(copy)) == LAYERS
    assert all(block.transposed_intermediate_kernel is None for block in blocks(model))
    for original, block in zip(blocks(model), blocks(copy)):
        kernel = original._feedforward_intermediate_dense.kernel.numpy()  # [H, intermediate]
        np.testing.assert_array_equal(block.transposed_intermediate_kernel.numpy(), kernel.T)
    ids = np.random.default_rng(0).integers(5, 100, size=(2, 9)).astype(np.int32)
    inputs = {"input_ids": ids, "input_mask": np.ones_like(ids),
              "segment_ids": np.zeros_like(ids)}
    np.testing.assert_allclose(copy(inputs), model(inputs), atol=ATOL, rtol=RTOL)
    # Inference reads the transposed copy (not the original kernel); training does not.
    for block in blocks(copy):
        block.transposed_intermediate_kernel.assign(
            tf.zeros_like(block.transposed_intermediate_kernel))
    assert not np.allclose(copy(inputs), model(inputs), atol=1e-3)
    np.testing.assert_allclose(copy(inputs, training=True), model(inputs, training=True),
                               atol=ATOL, rtol=RTOL)


def test_serving_copy_refuses_a_model_without_transformer_blocks():
    dense = keras.Sequential([keras.Input([4]), keras.layers.Dense(2)])
    with pytest.raises(ValueError, match="no transformer blocks"):
        serving_copy(dense, "float32", transposed_feedforward=True)
