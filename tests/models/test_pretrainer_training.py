"""Training behaviour: distribution equivalence, learning on structured data, mixed precision."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.models import ElectraPretrainer
from electra_tf.training.optimizer import create_optimizer
from tests.models.helpers import (CLS, SEP, fast_optimizer_config, masked_batch, objective,
                                  random_ids, tiny_model_config)

pytestmark = pytest.mark.slow  # each test trains for many steps


def _dataset(batches):
    dataset = tf.data.Dataset.from_tensors(batches[0])
    for batch in batches[1:]:
        dataset = dataset.concatenate(tf.data.Dataset.from_tensors(batch))
    return dataset


def _global_grad_norm(model, batch):
    with tf.GradientTape() as tape:
        losses = model.compute_losses(batch, model.compute_objective(batch, 0, training=True))
    return float(tf.linalg.global_norm(tape.gradient(losses["loss_share"], model.trainable_variables)))


def test_mirrored_strategy_matches_one_device_on_the_same_global_batch():
    config = tiny_model_config(num_layers=1, hidden_dropout=0.0, attention_dropout=0.0)
    ids, mask = random_ids(8, 24, seed=2)  # rows of different lengths: unequal replica denominators
    batches = [masked_batch(ids, mask, seed=s) for s in range(3)]

    keras.utils.set_random_seed(0)
    one = ElectraPretrainer(config, objective())
    assert _global_grad_norm(one, batches[0]) > 1.0  # so global clipping is exercised
    one.compile(optimizer=create_optimizer(fast_optimizer_config()), jit_compile=False)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        two = ElectraPretrainer(config, objective())
        two.set_weights(one.get_weights())
        two.compile(optimizer=create_optimizer(fast_optimizer_config()), jit_compile=False)
    assert two.distribute_strategy.num_replicas_in_sync == 2

    one_logs = one.fit(_dataset(batches), epochs=1, verbose=0, shuffle=False).history
    two_logs = two.fit(_dataset(batches), epochs=1, verbose=0, shuffle=False).history
    for key in ("loss", "mlm_loss", "disc_loss"):
        np.testing.assert_allclose(two_logs[key], one_logs[key], rtol=1e-5, err_msg=key)
    for a, b in zip(one.trainable_variables, two.trainable_variables):
        np.testing.assert_allclose(b.numpy(), a.numpy(), atol=1e-5, err_msg=a.path)
    assert int(two.optimizer.iterations.numpy()) == 3


def _structured_batches(count, batch=32, length=32, seed=0):
    """Each sequence draws its tokens from one of 10 disjoint 9-token "topics": a masked token is
    predictable from its context, and an off-topic replacement is detectable."""
    rng = np.random.default_rng(seed)
    batches = []
    for i in range(count):
        topic = rng.integers(0, 10, size=(batch, 1))
        ids = (5 + 9 * topic + rng.integers(0, 9, size=(batch, length))).astype(np.int32)
        ids[:, 0], ids[:, -1] = CLS, SEP
        batches.append(masked_batch(ids, np.ones_like(ids), seed=seed * 1000 + i,
                                    max_predictions=5))
    return batches


SEEDS = (0, 1, 2)
DISCRIMINATOR_SEEDS = (0, 1, 2, 3, 4)


def _train_on_structured_corpus(seed, **objective_overrides):
    """Trains the tiny model 400 steps without XLA; returns held-out metrics before and after.

    XLA is not the subject here (test_pretrainer covers compilation): its CPU code, and so the
    trajectory, differs with the CPU's features, and these thresholds must hold on any machine.
    """
    keras.utils.set_random_seed(seed)
    model = ElectraPretrainer(tiny_model_config(), objective(seed=seed, **objective_overrides))
    model.compile(optimizer=create_optimizer(fast_optimizer_config(
        learning_rate=2e-3, warmup_steps=30, train_steps=400)), jit_compile=False)
    held_out = _dataset(_structured_batches(8, seed=99))
    before = model.evaluate(held_out, verbose=0, return_dict=True)
    model.fit(_dataset(_structured_batches(40, seed=seed + 1)).repeat(), steps_per_epoch=400,
              epochs=1, verbose=0, shuffle=False)
    after = model.evaluate(held_out, verbose=0, return_dict=True)
    print(f"seed {seed}", objective_overrides, "\nbefore", before, "\nafter", after)
    return before, after


@pytest.mark.parametrize("seed", SEEDS)
def test_generator_learns_a_structured_corpus(seed):
    """The generator learns each sequence's topic (measured 2.3-2.9 after, on three seeds).

    The discriminator's AUC is not asserted here: it is a race. Once the generator knows the
    topic its samples are on-topic and undetectable (AUC 0.56-0.80 over the same seeds), which
    the test below separates out.
    """
    before, after = _train_on_structured_corpus(seed)
    # Chance: loss log(120) = 4.79, accuracy 1/120. Best possible: log(9) = 2.2, accuracy 1/9.
    assert before["mlm_loss"] > 4.5 and after["mlm_loss"] < 3.5
    assert after["mlm_accuracy"] > 0.07


def test_discriminator_learns_to_detect_off_topic_replacements():
    """With uniform samples (the paper's ablation) a replacement is off-topic 111 times in 120
    and detectable only from its context, except the 30 ids outside every topic (an AUC of about
    0.62 from token identity alone).

    Every seed learns; most learn the context within the 400 steps. A tiny model can sit on a
    plateau, predicting the replacement rate (accuracy 0.888, loss 0.33, AUC about 0.7), and
    whether a seed leaves it in time depends on the CPU's rounding: on an AMD Zen 4 with
    oneDNN seed 2 stayed there (AUC 0.727) while seeds 0, 1, 3 and 4 reached 0.965-0.978, and
    with Eigen's kernels seed 2 left it by step 300 (0.948). Hence three of five.
    """
    results = [_train_on_structured_corpus(seed, uniform_generator=True)
               for seed in DISCRIMINATOR_SEEDS]
    for before, after in results:
        assert before["disc_auc"] < 0.65 and after["disc_auc"] > before["disc_auc"] + 0.05
        assert after["disc_loss"] < 0.75 * before["disc_loss"]
    detected = [after["disc_auc"] > 0.85 and after["disc_loss"] < 0.5 * before["disc_loss"]
                for before, after in results]
    assert sum(detected) >= 3, [after["disc_auc"] for _, after in results]


@pytest.fixture
def dtype_policy():
    yield keras.mixed_precision.set_dtype_policy
    keras.mixed_precision.set_dtype_policy("float32")


def test_mixed_bfloat16_trains(dtype_policy):
    dtype_policy("mixed_bfloat16")
    keras.utils.set_random_seed(0)
    model = ElectraPretrainer(tiny_model_config(), objective())
    assert model.discriminator.transformer_layers[0].compute_dtype == "bfloat16"
    assert all(v.dtype == "float32" for v in model.trainable_variables)
    # Without XLA: its bf16 code differs with the CPU, and compilation is tested elsewhere.
    model.compile(optimizer=create_optimizer(fast_optimizer_config(learning_rate=2e-3)),
                  jit_compile=False)
    batches = _structured_batches(10)
    first = model.evaluate(_dataset(batches), verbose=0, return_dict=True)
    model.fit(_dataset(batches).repeat(), steps_per_epoch=150, epochs=1, verbose=0, shuffle=False)
    last = model.evaluate(_dataset(batches), verbose=0, return_dict=True)
    assert all(np.isfinite(v) for v in last.values())
    assert last["mlm_loss"] < first["mlm_loss"] - 0.5  # measured 1.6 (oneDNN and Eigen alike)
    out = model.compute_objective(batches[0], 0)
    assert out["mlm_logits"].dtype == tf.float32 and out["disc_logits"].dtype == tf.float32
    # The cross-entropy and sampling kernels take the generator's bf16 logits without a cast.
    b = batches[0]
    assert model.generator_logits(b["input_ids"], b["input_mask"], b["segment_ids"],
                                  b["masked_lm_positions"]).dtype == tf.bfloat16


def test_mixed_float16_uses_loss_scaling(dtype_policy):
    dtype_policy("mixed_float16")
    keras.utils.set_random_seed(0)
    model = ElectraPretrainer(tiny_model_config(), objective())
    model.compile(optimizer=create_optimizer(fast_optimizer_config()), jit_compile=False)
    assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    initial_scale = float(model.optimizer.initial_scale)
    losses = [model.train_on_batch(batch, return_dict=True)["loss"]
              for batch in _structured_batches(12)]
    # float16 gradients overflow at the initial scale: those steps are skipped and the scale
    # halved, then the scale holds and every step updates the weights.
    scale = float(model.optimizer.dynamic_scale.numpy())
    applied = int(model.optimizer.inner_optimizer.iterations.numpy())
    assert scale < initial_scale
    assert 0 < applied < 12
    assert all(np.isfinite(losses)) and losses[-1] < losses[0] - 5.0
    assert all(np.all(np.isfinite(v.numpy())) for v in model.trainable_variables)
