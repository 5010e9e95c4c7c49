"""Invariants of the replaced-token-detection objective that peers never test."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.models import ElectraPretrainer
from electra_tf.training.optimizer import create_optimizer
from tests.models.helpers import (VOCAB, fast_optimizer_config, masked_batch, objective,
                                  random_ids, tiny_model_config)


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(0)
    return ElectraPretrainer(tiny_model_config(), objective())


@pytest.fixture(scope="module")
def batch():
    ids, mask = random_ids(4, 24, seed=1)
    return masked_batch(ids, mask)


def test_training_runs_the_discriminator_heads_gelu_as_xla_kernels(model, batch):
    """The RTD head's GELU in training is `gelu_with_analytic_gradient`'s kernel (so the
    objective passes `training` on to the head), not TensorFlow's erfc chain."""
    head = model.discriminator_head.name

    def head_op_types(training):
        graph = tf.function(lambda: model.compute_objective(batch, 0, training)
                            ).get_concrete_function().graph
        return {op.type for op in graph.get_operations() if op.name.startswith(head)}

    assert "Erfc" in head_op_types(False)
    assert "Erfc" not in head_op_types(True) and "IdentityN" in head_op_types(True)


def _ids(variables):
    return {id(v) for v in variables}


def test_shared_embeddings_are_the_same_variable_objects(model):
    shared = model.embeddings
    assert model.generator.embeddings is shared and model.discriminator.embeddings is shared
    assert model.generator_head.token_embedding is shared.word_embeddings
    variables = model.trainable_variables
    assert len(variables) == len(_ids(variables)), "a variable is listed twice"
    paths = [v.path for v in variables]
    for name in ("word_embeddings", "position_embeddings", "token_type_embeddings", "layer_norm/gamma"):
        assert sum(p.startswith("embeddings/") and name in p for p in paths) == 1, name
    assert not any(p.startswith(("generator/embeddings/", "discriminator/embeddings/")) for p in paths)
    # Each network keeps its own projection and transformer layers.
    assert model.generator.embeddings_project is not model.discriminator.embeddings_project
    assert model.generator.hidden_size == 16 and model.discriminator.hidden_size == 32


def test_untied_generator_embeddings_are_separate():
    untied = ElectraPretrainer(tiny_model_config(untied_generator_embeddings=True), objective())
    assert untied.generator.embeddings is not untied.embeddings
    assert untied.generator.embeddings.embedding_size == untied.generator.hidden_size == 16
    assert untied.generator.embeddings_project is None
    assert untied.generator_head.token_embedding is untied.generator.embeddings.word_embeddings


def _losses_and_grads(model, batch):
    with tf.GradientTape(persistent=True) as tape:
        outputs = model.compute_objective(batch, step=0, training=False)
        losses = model.compute_losses(batch, outputs)
    variables = model.trainable_variables
    return (tape.gradient(losses["disc_share"], variables),
            tape.gradient(losses["mlm_share"], variables), variables)


def test_no_gradient_crosses_between_the_two_losses(model, batch):
    disc_grads, mlm_grads, variables = _losses_and_grads(model, batch)
    shared = _ids(model.embeddings.trainable_variables)
    generator_only = (_ids(model.generator.trainable_variables)
                      | _ids(model.generator_head.trainable_variables)) - shared
    discriminator_only = (_ids(model.discriminator.trainable_variables)
                          | _ids(model.discriminator_head.trainable_variables)) - shared
    assert generator_only and discriminator_only
    for var, disc_grad, mlm_grad in zip(variables, disc_grads, mlm_grads):
        if id(var) in generator_only:
            assert disc_grad is None or not np.any(disc_grad), f"RTD loss reaches {var.path}"
            assert mlm_grad is not None
        if id(var) in discriminator_only:
            assert mlm_grad is None or not np.any(mlm_grad), f"MLM loss reaches {var.path}"
            assert disc_grad is not None
    # Both losses do reach the shared word embeddings.
    word = model.embeddings.word_embeddings.embeddings
    index = [i for i, v in enumerate(variables) if v is word][0]
    assert np.any(tf.convert_to_tensor(disc_grads[index]).numpy())
    assert np.any(tf.convert_to_tensor(mlm_grads[index]).numpy())


def _gradient_of(grads, variables, variable):
    index = [i for i, v in enumerate(variables) if v is variable][0]
    return None if grads[index] is None else tf.convert_to_tensor(grads[index]).numpy()


def test_gdes_keeps_the_rtd_gradient_off_the_shared_word_table(batch):
    keras.utils.set_random_seed(0)
    model = ElectraPretrainer(tiny_model_config(embedding_sharing="gdes"), objective())
    residual = model.discriminator.embeddings.residual_word_embeddings.embeddings
    assert residual.path == "discriminator_embeddings/residual_word_embeddings/embeddings"
    assert not np.any(residual.numpy())  # starts at zero: at first the discriminator is tied
    assert model.generator.embeddings is model.embeddings
    disc_grads, mlm_grads, variables = _losses_and_grads(model, batch)
    shared_word = model.embeddings.word_embeddings.embeddings
    disc_on_shared = _gradient_of(disc_grads, variables, shared_word)
    assert disc_on_shared is None or not np.any(disc_on_shared), "RTD loss reaches the shared table"
    assert np.any(_gradient_of(mlm_grads, variables, shared_word))
    assert np.any(_gradient_of(disc_grads, variables, residual))
    mlm_on_residual = _gradient_of(mlm_grads, variables, residual)
    assert mlm_on_residual is None or not np.any(mlm_on_residual)
    # the rest of the embedding block (positions, token types, LayerNorm) stays tied
    layer_norm = model.embeddings.layer_norm.gamma
    assert np.any(_gradient_of(disc_grads, variables, layer_norm))


def test_gdes_discriminator_reads_shared_plus_residual(batch):
    keras.utils.set_random_seed(0)
    tied = ElectraPretrainer(tiny_model_config(), objective())
    keras.utils.set_random_seed(0)
    gdes = ElectraPretrainer(tiny_model_config(embedding_sharing="gdes"), objective())
    for ours, theirs in zip(tied.weights, [w for w in gdes.weights if "residual" not in w.path]):
        theirs.assign(ours)
    ids, mask = tf.constant(batch["input_ids"]), tf.constant(batch["input_mask"])
    segments = tf.zeros_like(ids)
    np.testing.assert_allclose(gdes.discriminator(ids, mask, segments),
                               tied.discriminator(ids, mask, segments), atol=1e-6)
    residual = gdes.discriminator.embeddings.residual_word_embeddings.embeddings
    residual.assign(np.random.default_rng(0).normal(0, 0.1, residual.shape))
    np.testing.assert_allclose(gdes.discriminator.embeddings.effective_word_table(),
                               tied.embeddings.word_embeddings.embeddings.numpy() + residual.numpy())
    assert not np.allclose(gdes.discriminator(ids, mask, segments),
                           tied.discriminator(ids, mask, segments), atol=1e-3)


def test_gdes_settings_that_cannot_work_are_refused():
    from electra_tf.config import ConfigError

    with pytest.raises(ConfigError, match="cannot go with model.untied_generator_embeddings"):
        tiny_model_config(embedding_sharing="gdes", untied_generator_embeddings=True).validate()
    with pytest.raises(ConfigError, match="model.embedding_sharing must be one of tied"):
        tiny_model_config(embedding_sharing="shared").validate()
    with pytest.raises(ValueError, match="needs a generator network"):
        ElectraPretrainer(tiny_model_config(embedding_sharing="gdes"),
                          objective(uniform_generator=True))


def _with_forced_samples(model, batch, make_samples, monkeypatch):
    monkeypatch.setattr(model, "_sample", lambda logits, originals, step: make_samples(originals))
    return model.compute_objective(batch, step=0, training=False)


def _chosen_and_originals(batch, length):
    chosen = np.zeros((len(batch["input_ids"]), length), bool)
    originals = np.array(batch["input_ids"])
    for row, (positions, ids, weights) in enumerate(zip(
            batch["masked_lm_positions"], batch["masked_lm_ids"], batch["masked_lm_weights"])):
        for pos, token, weight in zip(positions, ids, weights):
            if weight > 0:
                chosen[row, pos] = True
                originals[row, pos] = token
    return chosen, originals


def test_sample_equal_to_original_is_labelled_original(model, batch, monkeypatch):
    out = _with_forced_samples(model, batch, lambda originals: originals, monkeypatch)
    _, originals = _chosen_and_originals(batch, 24)
    np.testing.assert_array_equal(out["corrupted_ids"].numpy(), originals)  # [MASK]s undone
    assert not np.any(out["disc_labels"].numpy())


def test_different_sample_is_labelled_replaced_at_every_chosen_position(model, batch, monkeypatch):
    out = _with_forced_samples(model, batch, lambda originals: (originals + 1) % VOCAB, monkeypatch)
    chosen, originals = _chosen_and_originals(batch, 24)
    labels = out["disc_labels"].numpy()
    np.testing.assert_array_equal(labels, chosen.astype(np.float32))
    corrupted = out["corrupted_ids"].numpy()
    np.testing.assert_array_equal(corrupted[chosen], (originals[chosen] + 1) % VOCAB)
    np.testing.assert_array_equal(corrupted[~chosen], originals[~chosen])
    # Position 0 of unused slots ([CLS]) is never corrupted.
    assert not np.any(labels[:, 0])


def test_disallow_correct_never_samples_the_original(batch):
    strict = ElectraPretrainer(tiny_model_config(), objective(disallow_correct=True))
    out = strict.compute_objective(batch, step=3, training=False)
    weights = batch["masked_lm_weights"] > 0
    assert not np.any(out["sampled_correct"].numpy()[weights])
    chosen, _ = _chosen_and_originals(batch, 24)
    np.testing.assert_array_equal(out["disc_labels"].numpy(), chosen.astype(np.float32))


def test_low_temperature_samples_the_argmax(batch):
    keras.utils.set_random_seed(3)  # weights independent of the tests that ran before
    cold = ElectraPretrainer(tiny_model_config(), objective(temperature=1e-4))
    out = cold.compute_objective(batch, step=0, training=False)
    logits = out["mlm_logits"].numpy()
    top_two = np.sort(logits, axis=-1)[..., -2:]
    # Slots whose top two logits are 1e-2 apart: the runner-up has odds exp(-100) at T=1e-4, so
    # the draw is the argmax whatever the rounding; near-ties could go either way.
    clear = (batch["masked_lm_weights"] > 0) & (top_two[..., 1] - top_two[..., 0] > 1e-2)
    assert clear.sum() >= 0.5 * (batch["masked_lm_weights"] > 0).sum()
    argmax = np.argmax(logits, axis=-1)
    np.testing.assert_array_equal(out["sampled_ids"].numpy()[clear], argmax[clear])


def test_sampling_is_keyed_by_seed_and_step(model, batch):
    first = model.compute_objective(batch, step=5, training=False)["sampled_ids"].numpy()
    again = model.compute_objective(batch, step=5, training=False)["sampled_ids"].numpy()
    other = model.compute_objective(batch, step=6, training=False)["sampled_ids"].numpy()
    np.testing.assert_array_equal(first, again)
    assert np.any(first != other)


def test_losses_are_batch_global_means(model, batch):
    out = model.compute_objective(batch, step=0, training=False)
    losses = model.compute_losses(batch, out)
    # Reference sums in float64: float32 sums of ~100 terms in another order differ by up to
    # ~6e-6 relative; a wrong numerator or denominator moves the mean by far more.
    w = batch["masked_lm_weights"].astype(np.float64)
    expected_mlm = np.sum(out["mlm_xent"].numpy() * w) / (np.sum(w) + 1e-6)
    mask = batch["input_mask"].astype(np.float64)
    expected_disc = np.sum(out["disc_xent"].numpy() * mask) / (np.sum(mask) + 1e-6)
    np.testing.assert_allclose(losses["mlm_loss"], expected_mlm, rtol=2e-5)
    np.testing.assert_allclose(losses["disc_loss"], expected_disc, rtol=2e-5)
    np.testing.assert_allclose(losses["loss"], expected_mlm + 50.0 * expected_disc, rtol=2e-5)
    # With one replica, the differentiable shares are the whole means.
    np.testing.assert_allclose(losses["loss_share"], losses["loss"], rtol=1e-6)


def test_padding_contributes_nothing(model, batch):
    reference = model.compute_losses(batch, model.compute_objective(batch, 0, training=False))
    garbage = dict(batch)
    pad = batch["input_mask"] == 0
    assert pad.any()
    garbage["input_ids"] = np.where(pad, 77, batch["input_ids"])
    garbage["segment_ids"] = np.where(pad, 1, batch["segment_ids"])
    changed = model.compute_losses(garbage, model.compute_objective(garbage, 0, training=False))
    for key in ("mlm_loss", "disc_loss", "loss"):
        np.testing.assert_allclose(changed[key], reference[key], rtol=1e-6, atol=1e-7)


@pytest.mark.slow
def test_uniform_generator_builds_no_generator_and_samples_uniformly(batch):
    """As the original: no generator network or head, so no MLM loss (it would be the constant
    log V, with no gradient); samples are uniform over the vocabulary."""
    uniform = ElectraPretrainer(tiny_model_config(), objective(uniform_generator=True))
    assert uniform.generator is None and uniform.generator_head is None
    assert uniform.encoder is uniform.discriminator
    assert not any(v.path.startswith("generator") for v in uniform.variables)
    losses = uniform.compute_losses(batch, uniform.compute_objective(batch, 0, training=False))
    assert "mlm_loss" not in losses
    np.testing.assert_allclose(losses["loss"], 50.0 * losses["disc_loss"], rtol=1e-6)
    # Steps 1-3 alone run no network at all; 200 steps of samples cover the vocabulary evenly.
    used_slots = batch["masked_lm_weights"] > 0
    samples = np.stack([uniform.generate_and_corrupt(batch, step)["sampled_ids"].numpy()
                        for step in range(200)])[:, used_slots].ravel()
    counts = np.bincount(samples, minlength=VOCAB)
    expected = len(samples) / VOCAB  # about 22
    assert counts.min() > 0.3 * expected and counts.max() < 2.0 * expected


@pytest.mark.slow
def test_uniform_generator_trains_its_discriminator(batch):
    keras.utils.set_random_seed(2)
    uniform = ElectraPretrainer(tiny_model_config(), objective(uniform_generator=True))
    uniform.compile(optimizer=create_optimizer(fast_optimizer_config(learning_rate=3e-3)),
                    jit_compile=False)
    logs = [uniform.train_on_batch(batch, return_dict=True) for _ in range(40)]
    assert set(logs[-1]) == {"loss", "sampled_accuracy", "disc_loss", "disc_accuracy",
                             "disc_precision", "disc_recall", "disc_auc"}
    # Replacements are uniform and the batch is fixed: the discriminator learns the originals.
    # Measured on seeds 2-4: 0.69-0.71 at the first step, 0.03-0.12 at the 40th.
    last_steps = np.mean([log["disc_loss"] for log in logs[-5:]])
    assert last_steps < 0.5 * logs[0]["disc_loss"]


@pytest.mark.slow
def test_mlm_only_objective_is_one_full_size_network(batch):
    bert = ElectraPretrainer(tiny_model_config(), objective(electra_objective=False))
    assert bert.discriminator is None and bert.encoder is bert.generator
    assert bert.generator.hidden_size == 32
    bert.compile(optimizer=create_optimizer(fast_optimizer_config()), jit_compile=False)
    logs = bert.train_on_batch(batch, return_dict=True)
    assert set(logs) == {"loss", "mlm_loss", "mlm_accuracy"}
    np.testing.assert_allclose(logs["loss"], logs["mlm_loss"], rtol=1e-6)


@pytest.mark.slow
def test_train_step_compiles_with_xla_and_reports_every_metric(batch):
    keras.utils.set_random_seed(1)
    xla = ElectraPretrainer(tiny_model_config(), objective())
    xla.compile(optimizer=create_optimizer(fast_optimizer_config()), jit_compile=True)
    before = [v.numpy().copy() for v in xla.trainable_variables]
    logs = xla.train_on_batch(batch, return_dict=True)
    logs = xla.train_on_batch(batch, return_dict=True)
    assert xla.jit_compile is True
    assert set(logs) == {"loss", "mlm_loss", "mlm_accuracy", "sampled_accuracy", "disc_loss",
                         "disc_accuracy", "disc_precision", "disc_recall", "disc_auc"}
    assert all(np.isfinite(v) for v in logs.values())
    assert int(xla.optimizer.iterations.numpy()) == 2
    assert any(np.any(b != v.numpy()) for b, v in zip(before, xla.trainable_variables))


@pytest.mark.slow
def test_reproducible_from_a_seed(batch):
    def run():
        keras.utils.set_random_seed(7)
        m = ElectraPretrainer(tiny_model_config(), objective(seed=3))
        m.compile(optimizer=create_optimizer(fast_optimizer_config()), jit_compile=False)
        for _ in range(3):
            m.train_on_batch(batch)
        return [v.numpy() for v in m.trainable_variables]

    for a, b in zip(run(), run()):
        np.testing.assert_array_equal(a, b)
