"""ElectraClassifier computes its encoder's last block for [CLS] only, in training and in
inference: the same logits and gradients as running the whole last block and reading
position 0."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.models.classifier import ElectraClassifier
from tests.models.helpers import VOCAB, tiny_model_config


@pytest.mark.parametrize("regression", [False, True])
@pytest.mark.parametrize("training", [False, True])
@pytest.mark.slow
def test_classifier_logits_and_gradients_are_those_of_the_whole_last_block(regression,
                                                                           training):
    keras.utils.set_random_seed(3)
    # Dropout 0: training then compares the training graph, not random masks.
    model = ElectraClassifier(tiny_model_config(hidden_dropout=0.0, attention_dropout=0.0),
                              num_labels=3, regression=regression, dropout=0.0)
    inputs = {"input_ids": tf.random.stateless_uniform([4, 9], [5, 0], maxval=VOCAB,
                                                       dtype=tf.int32),
              "input_mask": tf.sequence_mask([9, 6, 3, 1], 9, dtype=tf.int32),
              "segment_ids": tf.zeros([4, 9], tf.int32)}
    model(inputs)

    def whole_last_block():
        sequence = model.encode(inputs, training=training)
        assert sequence.shape == (4, 9, 32)
        outputs = model.head(sequence, training=training)
        return outputs[:, 0] if regression else outputs

    results = []
    for call in (lambda: model(inputs, training=training), whole_last_block):
        with tf.GradientTape() as tape:
            outputs = call()
            loss = tf.reduce_sum(outputs * tf.sin(outputs))
        results.append([outputs] + tape.gradient(loss, model.trainable_variables))
    assert model.encode(inputs, output_rows=1).shape == (4, 1, 32)
    graph = tf.function(lambda: model(inputs, training=training)).get_concrete_function().graph
    feedforward_rows = sorted(op.outputs[0].shape[0] for op in graph.get_operations()
                              if op.type == "MatMul" and op.outputs[0].shape[-1] == 64)
    # the last block: one row per sequence (the others 4 x 9 in training); in inference each
    # half of the batch, 2 x 9, has its own
    assert feedforward_rows[:2] == ([4, 36] if training else [2, 2])
    for cls_only, whole in zip(*results):
        cls_only, whole = (tf.convert_to_tensor(t).numpy() for t in (cls_only, whole))
        # float32 rounding: other row counts may take other kernels, which sum in other orders
        np.testing.assert_allclose(cls_only, whole, rtol=1e-5,
                                   atol=1e-6 * max(1.0, np.abs(whole).max()))
