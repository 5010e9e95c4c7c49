"""Gradient accumulation: k micro-batches make the update of the whole batch, for every
pretraining objective, on one device and under a MirroredStrategy (dropout off: it is not the
subject, and its masks are drawn per call).

The optimizer in these tests is AdamW with epsilon 1e-2 instead of 1e-6. Summing 4 x 8 rows
instead of 32 rounds differently (the gradients agree to about 1e-6 of their largest element,
as the first test checks), and Adam divides a gradient element near zero by about epsilon: at
1e-6 a rounding-level difference in such an element can move its weight by a whole step, and
rounding differs between CPUs. (At 1e-6 these tests passed too on a 2-core AMD EPYC.) At 1e-2
the weights show whether the updates are the same on any machine. The schedule has no warmup,
so the first update moves the weights too, and weights are compared to a fraction of how far
they moved: an absolute tolerance can be larger than the updates themselves."""

import dataclasses
import functools

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.models import build_pretrainer
from electra_tf.models.accumulation import accumulated_gradients, split_micro_batches
from electra_tf.models import pretrainer as pretrainer_module
from electra_tf.models.pretrainer import NOISE_KEY
from electra_tf.training.optimizer import create_optimizer
from tests.models.helpers import (fast_optimizer_config, masked_batch, objective, random_ids,
                                  tiny_model_config)

UPDATES, BATCH, LENGTH = 3, 32, 24


def _batches():
    """Batches whose four micro-batches of eight rows hold rows of 5, 9, 15 and 23 tokens, so
    every micro-batch (and replica) has its own token counts: a mean per micro-batch would weigh
    a short row's tokens several times a long row's, and a wrong denominator moves the gradient
    by percents, not by rounding."""
    lengths = np.repeat([5, 9, 15, 23], BATCH // 4)
    return [masked_batch(*random_ids(BATCH, LENGTH, seed=10 + update, lengths=lengths),
                         seed=update) for update in range(UPDATES)]


def _dataset(batches):
    return tf.data.Dataset.from_tensor_slices(
        {key: np.stack([b[key] for b in batches]) for key in batches[0]})


def _pretrainer(objective_config, weights=None, accumulation=1, strategy=None, jit_compile=False,
                chains=1, **optimizer):
    optimizer = {"epsilon": 1e-2, "warmup_steps": 0, **optimizer}
    config = tiny_model_config(num_layers=1, hidden_dropout=0.0, attention_dropout=0.0)
    with (strategy or tf.distribute.get_strategy()).scope():
        model = build_pretrainer(config, objective_config)
        if weights is not None:
            model.set_weights(weights)
        model.gradient_accumulation_steps = accumulation
        model.parallel_chains = chains
        model.compile(optimizer=create_optimizer(fast_optimizer_config(**optimizer)),
                      jit_compile=jit_compile)
    return model


def _weights(model):
    return [v.numpy() for v in model.trainable_variables]


def _assert_moved_alike(whole, other, initial):
    """`other`'s weights are `whole`'s to 1e-2 of how far `whole`'s moved from `initial` (all
    variables' differences as one vector): a tolerance relative to what the updates did, where an
    absolute one can exceed the updates themselves. Models or lists of their trainable
    variables' values."""
    whole, other = (_weights(m) if isinstance(m, keras.Model) else m for m in (whole, other))
    moved = np.sqrt(sum(np.sum((a - i) ** 2) for a, i in zip(whole, initial)))
    apart = np.sqrt(sum(np.sum((b - a) ** 2) for a, b in zip(whole, other)))
    assert moved > 0 and apart <= 1e-2 * moved, (apart, moved)


@dataclasses.dataclass(frozen=True)
class WholeRun:
    """A fit of the whole batches (`_batches`, no accumulation, one chain, one device): what
    the runs of every test here are compared with."""

    initial: list  # the weights before (get_weights)
    final: list  # the trainable variables' values after
    logs: dict  # fit's history
    first_moments: dict  # Adam's first moment after the first update, by variable name


@functools.lru_cache(maxsize=None)
def _whole_run(name) -> WholeRun:
    """The whole-batch fit of objective `name`, once per module (several tests compare with
    it): seed 0, then the model, as each test did for itself."""
    keras.utils.set_random_seed(0)
    whole = _pretrainer(OBJECTIVES[name])
    initial, moments = whole.get_weights(), {}
    keep_first = keras.callbacks.LambdaCallback(on_train_batch_end=lambda batch, logs: (
        moments.setdefault("first", _first_moments(whole))))
    logs = whole.fit(_dataset(_batches()), epochs=1, verbose=0, shuffle=False,
                     callbacks=[keep_first]).history
    return WholeRun(initial, _weights(whole), logs, moments["first"])


def _assert_trains_alike(whole, other, dataset):
    """Fits both models (with the same initial weights) for one epoch of `dataset()`: the same
    updates (optimizer steps) and weights, and the same logs, losses and metrics."""
    initial = whole.get_weights()
    whole_logs = whole.fit(dataset(), epochs=1, verbose=0, shuffle=False).history
    other_logs = other.fit(dataset(), epochs=1, verbose=0, shuffle=False).history
    assert int(other.optimizer.iterations.numpy()) == UPDATES  # updates, not micro-batches
    _assert_moved_alike(whole, other, initial)
    for key, values in whole_logs.items():  # losses and token metrics alike
        np.testing.assert_allclose(other_logs[key], values, rtol=1e-5, atol=1e-6, err_msg=key)


def _assert_trains_as_the_whole_batch(name, other):
    """Fits `other` (built with `_whole_run(name).initial`) for one epoch of the batches: the
    whole run's updates (optimizer steps) and weights, and its logs, losses and metrics."""
    whole = _whole_run(name)
    other_logs = other.fit(_dataset(_batches()), epochs=1, verbose=0, shuffle=False).history
    assert int(other.optimizer.iterations.numpy()) == UPDATES  # updates, not micro-batches
    _assert_moved_alike(whole.final, other, whole.initial)
    for key, values in whole.logs.items():  # losses and token metrics alike
        np.testing.assert_allclose(other_logs[key], values, rtol=1e-5, atol=1e-6, err_msg=key)


OBJECTIVES = {
    "electra": objective(),
    "electra_uniform": objective(uniform_generator=True),
    "electra_15": objective(variant="electra_15"),
    "mlm_baseline": objective(electra_objective=False),
    "all_tokens_mlm": objective(variant="all_tokens_mlm"),
}


@pytest.mark.slow
def test_the_accumulated_gradient_is_the_whole_batchs():
    keras.utils.set_random_seed(0)
    model = _pretrainer(OBJECTIVES["electra"])
    batch = {key: tf.constant(value) for key, value in _batches()[0].items()}
    batch[NOISE_KEY] = model.sampling_noise(batch, 5)
    denominators = model.loss_denominators(batch)

    def loss_fn(micro_batch):
        losses = model.compute_losses(micro_batch, model.compute_objective(
            micro_batch, 5, training=True), denominators)
        return losses["loss_share"], {key: losses[key] for key in ("mlm_sum", "disc_sum")}

    variables = model.trainable_variables
    whole, whole_sums = accumulated_gradients(loss_fn, batch, 1, variables)
    # 4 micro-batches; 2 chains of 16 side by side; 2 micro-batches of 2 chains of 8
    for micro_batches, chains in ((4, 1), (1, 2), (2, 2)):
        parts, part_sums = accumulated_gradients(loss_fn, batch, micro_batches, variables,
                                                 chains)
        for key in whole_sums:  # the same samples, so the same losses
            np.testing.assert_allclose(part_sums[key], whole_sums[key], rtol=1e-6, err_msg=key)
        for variable, a, b in zip(variables, whole, parts):
            a, b = tf.convert_to_tensor(a).numpy(), tf.convert_to_tensor(b).numpy()
            np.testing.assert_allclose(b, a, rtol=0, atol=1e-5 * np.abs(a).max() + 1e-12,
                                       err_msg=f"{variable.path}, {micro_batches} x {chains}")


def _first_moments(model):
    """{name: Adam's first moment m} of `model`'s optimizer."""
    return {v.name: v.numpy() for v in model.optimizer.variables if v.name.endswith("_adam_m")}


@pytest.mark.slow
def test_accumulated_updates_move_the_first_moment_and_weights_as_the_whole_batch():
    """Through `fit`, so through the `train_step` that forms the loss denominators, with no
    warmup (as in every test here) so that every update moves the weights. After one update
    Adam's first moment is (1 - beta_1) g, the gradient itself: each variable's agrees with the
    whole batch's to 1e-3 of its norm (rounding leaves about 1e-6; the mean of per-micro-batch
    means was off by up to 0.5), above a floor of 1e-6 of the largest element for gradients that
    are zero but for rounding (the key biases'). After three updates the weights have moved as
    the whole batch's to 1e-2 of how far they moved (that mean: 0.15)."""
    whole = _whole_run("electra")
    accumulated = _pretrainer(OBJECTIVES["electra"], whole.initial, accumulation=4)
    moments = {}
    keep_first = keras.callbacks.LambdaCallback(on_train_batch_end=lambda batch, logs: (
        moments.setdefault("first", _first_moments(accumulated))))
    accumulated.fit(_dataset(_batches()), epochs=1, verbose=0, shuffle=False,
                    callbacks=[keep_first])
    assert len(whole.first_moments) == len(accumulated.trainable_variables)
    floor = 1e-6 * max(np.abs(m).max() for m in whole.first_moments.values())
    for key, m in whole.first_moments.items():
        difference = np.linalg.norm(moments["first"][key] - m)
        assert difference <= 1e-3 * np.linalg.norm(m) + floor, key
    _assert_moved_alike(whole.final, accumulated, whole.initial)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(OBJECTIVES))
def test_four_micro_batches_of_eight_update_as_one_batch_of_32(name):
    accumulated = _pretrainer(OBJECTIVES[name], _whole_run(name).initial, accumulation=4)
    _assert_trains_as_the_whole_batch(name, accumulated)


@pytest.mark.slow
@pytest.mark.parametrize("accumulation", [1, 2])
def test_two_chains_update_as_one_batch(accumulation):
    """`parallel_chains`: the batch (or each micro-batch) as two chains side by side in one
    step, the same updates and logs as the batch at once."""
    chained = _pretrainer(OBJECTIVES["electra"], _whole_run("electra").initial,
                          accumulation=accumulation, chains=2)
    _assert_trains_as_the_whole_batch("electra", chained)


@pytest.mark.slow
def test_two_chains_run_each_block_twice_in_one_step():
    """Two chains have ops of their own: the step's graph has twice the attention softmaxes of
    the one-chain step."""
    keras.utils.set_random_seed(0)
    model = _pretrainer(OBJECTIVES["electra_uniform"])
    batch = {key: tf.constant(value) for key, value in _batches()[0].items()}
    softmaxes = {}
    for chains in (1, 2):
        model.parallel_chains = chains
        graph = tf.function(model.train_step).get_concrete_function(batch).graph
        softmaxes[chains] = sum(op.type == "Softmax" for op in graph.get_operations())
    assert softmaxes[2] == 2 * softmaxes[1] > 0


@pytest.mark.slow
def test_the_mirrored_strategy_accumulates_over_replicas_and_micro_batches():
    one = _whole_run("electra")
    two = _pretrainer(OBJECTIVES["electra"], one.initial, accumulation=2,
                      strategy=tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))
    two_logs = two.fit(_dataset(_batches()), epochs=1, verbose=0,
                       shuffle=False).history  # 2 x 2 x 8 rows
    _assert_moved_alike(one.final, two, one.initial)
    for key in ("loss", "mlm_loss", "disc_loss", "disc_auc"):
        np.testing.assert_allclose(two_logs[key], one.logs[key], rtol=1e-5, err_msg=key)


@pytest.mark.slow
def test_the_accumulation_loop_compiles_with_xla():
    """On one device (XLA under a MirroredStrategy of logical CPUs cannot place variables);
    both runs are compiled, so they share the CPU's XLA code."""
    batches = _batches()
    keras.utils.set_random_seed(0)
    whole = _pretrainer(OBJECTIVES["electra"], jit_compile=True)
    accumulated = _pretrainer(OBJECTIVES["electra"], whole.get_weights(), accumulation=4,
                              jit_compile=True)
    initial = whole.get_weights()
    whole_logs = whole.fit(_dataset(batches), epochs=1, verbose=0, shuffle=False).history
    accumulated_logs = accumulated.fit(_dataset(batches), epochs=1, verbose=0,
                                       shuffle=False).history
    np.testing.assert_allclose(accumulated_logs["loss"], whole_logs["loss"], rtol=1e-5)
    _assert_moved_alike(whole, accumulated, initial)


@pytest.mark.slow
def test_gradients_are_clipped_after_accumulation():
    batches = _batches()
    keras.utils.set_random_seed(0)
    # a clip norm far below the gradient's: clipping the micro-batches' gradients one by one
    # would move the weights differently
    whole = _pretrainer(OBJECTIVES["electra"], clip_norm=1e-3)
    accumulated = _pretrainer(OBJECTIVES["electra"], whole.get_weights(), accumulation=4,
                              clip_norm=1e-3)
    whole.fit(_dataset(batches[:1]), epochs=1, verbose=0, shuffle=False)
    accumulated.fit(_dataset(batches[:1]), epochs=1, verbose=0, shuffle=False)
    for a, b in zip(whole.optimizer.variables, accumulated.optimizer.variables):
        np.testing.assert_allclose(b.numpy(), a.numpy(), atol=1e-7, rtol=1e-5)


def test_a_batch_the_micro_batch_count_does_not_divide_is_refused():
    with pytest.raises(ValueError, match=r"3 micro-batches need a per-replica batch \(or "
                                         r"micro-batch\) that 3 divides; got 8 rows"):
        split_micro_batches({"input_ids": tf.zeros([8, 4])}, 3)
    with pytest.raises(ValueError, match="3 parallel chains need"):
        accumulated_gradients(lambda piece: (tf.reduce_sum(piece["x"]), {}),
                              {"x": tf.zeros([8, 4])}, 1, [], chains=3)


def test_accumulated_gradients_sum_the_micro_batches_and_keep_missing_gradients_none():
    used, unused = tf.Variable([1.0, 2.0]), tf.Variable(3.0)
    batch = {"x": tf.reshape(tf.range(12, dtype=tf.float32), [6, 2])}

    def loss_fn(piece):
        return tf.reduce_sum(piece["x"] * used), {"rows": tf.cast(tf.shape(piece["x"])[0],
                                                                   tf.float32)}

    gradients, sums = tf.function(
        lambda: accumulated_gradients(loss_fn, batch, 3, [used, unused]))()
    np.testing.assert_allclose(gradients[0].numpy(), batch["x"].numpy().sum(axis=0))
    assert gradients[1] is None and float(sums["rows"]) == 6.0


def _task_model(kind, weights=None, accumulation=1, chains=1):
    from electra_tf.models.classifier import ElectraClassifier
    from electra_tf.models.question_answerer import ElectraQuestionAnswerer

    config = tiny_model_config(hidden_dropout=0.0, attention_dropout=0.0)
    model = (ElectraClassifier(config, num_labels=3, dropout=0.0, loss_reduction="mean")
             if kind == "classifier" else ElectraQuestionAnswerer(config))
    if weights is not None:
        model.set_weights(weights)
    model.gradient_accumulation_steps = accumulation
    model.parallel_chains = chains
    model.compile(optimizer=create_optimizer(fast_optimizer_config(epsilon=1e-2,
                                                                   warmup_steps=0)),
                  jit_compile=False)
    return model


def _task_batches(kind):
    rng = np.random.default_rng(4)
    batches = []
    for update in range(UPDATES):
        ids, mask = random_ids(16, LENGTH, seed=20 + update)
        inputs = {"input_ids": ids, "input_mask": mask, "segment_ids": np.zeros_like(ids)}
        if kind == "classifier":
            labels = rng.integers(0, 3, size=16).astype(np.int32)
        else:
            start = rng.integers(1, 8, size=16).astype(np.int32)
            labels = {"start_positions": start, "end_positions": start + 2,
                      "is_impossible": (rng.random(16) < 0.3).astype(np.float32)}
        weights = np.ones(16, np.float32)
        weights[-3:] = 0.0  # padding examples of a last batch: the counts differ per micro-batch
        batches.append((inputs, labels, weights))
    return tf.data.Dataset.from_tensor_slices(tuple(
        tf.nest.map_structure(lambda *parts: np.stack(parts), *batches)))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["classifier", "question_answerer"])
@pytest.mark.parametrize("accumulation, chains", [(4, 1), (1, 2)])
def test_fine_tuning_accumulates_as_the_whole_batch(kind, accumulation, chains):
    keras.utils.set_random_seed(0)
    whole = _task_model(kind)
    accumulated = _task_model(kind, whole.get_weights(), accumulation=accumulation,
                              chains=chains)
    _assert_trains_alike(whole, accumulated, lambda: _task_batches(kind))


@pytest.mark.slow
def test_a_growing_batch_updates_as_each_batch_at_once(monkeypatch):
    """`micro_batch_rows` 8: batches of 8, 16 and 32 rows (a growing batch) run as 1, 2 and 4
    micro-batches, read from each batch's rows, and make the updates of each batch at once."""
    lengths = {8: [5, 23], 16: [5, 9, 15, 23], 32: [5, 9, 15, 23]}
    batches = [masked_batch(*random_ids(rows, LENGTH, seed=20 + rows,
                                        lengths=np.repeat(lengths[rows], rows // len(lengths[rows]))),
                            seed=rows) for rows in (8, 16, 32)]

    def dataset():
        pieces = [tf.data.Dataset.from_tensors(batch) for batch in batches]
        return pieces[0].concatenate(pieces[1]).concatenate(pieces[2])

    counts = []  # the micro-batch count each traced train step is given

    def recording(loss_fn, batch, num_micro_batches, *args):
        counts.append(num_micro_batches)
        return accumulated_gradients(loss_fn, batch, num_micro_batches, *args)
    monkeypatch.setattr(pretrainer_module, "accumulated_gradients", recording)

    keras.utils.set_random_seed(0)
    whole = _pretrainer(OBJECTIVES["electra"])
    growing = _pretrainer(OBJECTIVES["electra"], whole.get_weights())
    growing.micro_batch_rows = 8
    _assert_trains_alike(whole, growing, dataset)
    # the whole batch at once: 1; the growing batch: rows / 8, a tensor read from each batch
    assert len(counts) >= 2 and counts[0] == 1 and all(tf.is_tensor(count) for count in counts[1:])
    assert int(growing.micro_batches_of(tf.constant(24))) == 3
