"""Layer-wise learning-rate decay exactly as the original's `_get_layer_lrs` computes it."""

import keras
import numpy as np
import pytest

from electra_tf.config import ModelConfig, OptimizerConfig
from electra_tf.models.classifier import ElectraClassifier
from electra_tf.training.optimizer import (AdamWeightDecay, WarmupLinearDecay, create_optimizer,
                                           layer_depth, layerwise_lr_multipliers)

TWELVE_LAYER_PATHS = (["embeddings/word_embeddings/embeddings", "embeddings/layer_norm/gamma",
                       "discriminator/embeddings_project/kernel"]
                      + [f"discriminator/layer_{i}/feedforward_output_dense/kernel" for i in range(12)]
                      + ["task_specific/output/kernel", "task_specific/output/bias"])


def test_multipliers_of_a_12_layer_model_match_the_reference_table():
    multipliers = layerwise_lr_multipliers(TWELVE_LAYER_PATHS, num_layers=12, decay=0.8)
    assert multipliers["task_specific/output/kernel"] == 1.0
    assert multipliers["task_specific/output/bias"] == 1.0
    assert multipliers["discriminator/layer_11/feedforward_output_dense/kernel"] == pytest.approx(0.64)
    for i in range(12):
        assert multipliers[f"discriminator/layer_{i}/feedforward_output_dense/kernel"] == \
            pytest.approx(0.8 ** (13 - i))
    assert multipliers["discriminator/layer_0/feedforward_output_dense/kernel"] == pytest.approx(0.0550, abs=1e-4)
    for path in TWELVE_LAYER_PATHS[:3]:  # the embedding LayerNorm and the projection too
        assert multipliers[path] == pytest.approx(0.8 ** 14)
    large = layerwise_lr_multipliers(TWELVE_LAYER_PATHS, num_layers=12, decay=0.9)
    assert large["embeddings/word_embeddings/embeddings"] == pytest.approx(0.9 ** 14)


def test_fixed_off_by_one_gives_the_top_layer_one_factor():
    fixed = layerwise_lr_multipliers(TWELVE_LAYER_PATHS, 12, 0.8, fix_off_by_one=True)
    assert fixed["task_specific/output/kernel"] == 1.0
    assert fixed["discriminator/layer_11/feedforward_output_dense/kernel"] == pytest.approx(0.8)
    assert fixed["discriminator/layer_0/feedforward_output_dense/kernel"] == pytest.approx(0.8 ** 12)
    assert fixed["embeddings/word_embeddings/embeddings"] == pytest.approx(0.8 ** 13)


def test_depths_and_unmapped_variables():
    assert layer_depth("embeddings/position_embeddings/embeddings", 4) == 0
    assert layer_depth("discriminator/embeddings_project/bias", 4) == 0
    assert layer_depth("discriminator/layer_3/self_attention_layer/query/kernel", 4) == 4
    assert layer_depth("task_specific/answer_class/dense/kernel", 4) == 6
    with pytest.raises(ValueError, match="no layer depth for variable 'pooler/kernel'"):
        layer_depth("pooler/kernel", 4)
    with pytest.raises(ValueError, match="num_layers"):
        AdamWeightDecay(1e-3, layerwise_lr_decay=0.8)


def reference_update(params, grads_per_step, lrs, multipliers, decayed, wd, clip_norm,
                     b1=0.9, b2=0.999, eps=1e-6):
    """NumPy (float64) version of the original's fine-tuning update: global clip, then per
    variable `p -= lr * multiplier * (m / (sqrt(v) + eps) + wd * p)`, no bias correction."""
    params = [p.astype(np.float64) for p in params]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    for grads, lr in zip(grads_per_step, lrs):
        grads = [g.astype(np.float64) for g in grads]
        norm = np.sqrt(sum(np.sum(g * g) for g in grads))
        grads = [g * clip_norm / max(norm, clip_norm) for g in grads]
        for i, g in enumerate(grads):
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            update = m[i] / (np.sqrt(v[i]) + eps)
            if decayed[i]:
                update = update + wd * params[i]
            params[i] = params[i] - lr * multipliers[i] * update
    return params


@pytest.mark.parametrize("fix_off_by_one", [False, True])
@pytest.mark.slow
def test_three_steps_match_numpy_reference(fix_off_by_one):
    model_config = ModelConfig(vocab_size=50, embedding_size=8, hidden_size=16, num_layers=3,
                               num_heads=2, intermediate_size=32, max_position_embeddings=16)
    keras.utils.set_random_seed(0)
    model = ElectraClassifier(model_config, num_labels=3)
    variables = model.trainable_variables
    initial = [v.numpy().copy() for v in variables]
    top = 4 if fix_off_by_one else 5  # exponent = top - depth; the head sits at depth top

    def expected_multiplier(path):
        if path.startswith("task_specific/"):
            return 1.0
        if path.startswith("embeddings/") or "/embeddings_project/" in path:
            return 0.7 ** top
        layer = int(path.split("/layer_")[1].split("/")[0])
        return 0.7 ** (top - layer - 1)

    multipliers = [expected_multiplier(v.path) for v in variables]
    decayed = [not any(k in v.path for k in ("layer_norm", "bias")) for v in variables]
    assert sum(decayed) > 10 and len(set(multipliers)) == 5
    rng = np.random.default_rng(3)
    # Large gradients, so the global clip at 1.0 acts on every step.
    steps = [[rng.normal(size=v.shape).astype("float32") for v in variables] for _ in range(3)]
    schedule = WarmupLinearDecay(0.01, decay_steps=10, warmup_steps=2)
    optimizer = create_optimizer(
        OptimizerConfig(learning_rate=0.01, train_steps=10, warmup_steps=2, weight_decay=0.3,
                        layerwise_lr_decay=0.7, layerwise_lr_decay_fix_off_by_one=fix_off_by_one),
        num_layers=3)
    assert optimizer.learning_rate is not None
    for grads in steps:
        optimizer.apply([keras.ops.convert_to_tensor(g) for g in grads], variables)
    lrs = [float(schedule(t)) for t in range(3)]
    assert lrs[0] == 0.0 and lrs[1] > 0
    expected = reference_update(initial, steps, lrs, multipliers, decayed, 0.3, clip_norm=1.0)
    for variable, value in zip(variables, expected):
        np.testing.assert_allclose(variable.numpy(), value, rtol=0, atol=1e-6, err_msg=variable.path)
    # The layer-wise factors matter: without them the embeddings move clearly differently.
    flat = reference_update(initial, steps, lrs, [1.0] * len(variables), decayed, 0.3, 1.0)
    assert np.max(np.abs(variables[0].numpy() - flat[0])) > 1e-4


def test_serialization_keeps_layerwise_settings():
    optimizer = AdamWeightDecay(1e-3, layerwise_lr_decay=0.9, num_layers=24,
                                layerwise_lr_decay_fix_off_by_one=True)
    restored = AdamWeightDecay.from_config(optimizer.get_config())
    assert (restored.layerwise_lr_decay, restored.num_layers,
            restored.layerwise_lr_decay_fix_off_by_one) == (0.9, 24, True)
