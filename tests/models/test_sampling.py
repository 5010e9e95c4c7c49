"""Tests for electra_tf.models.sampling.sample_token_ids (two-level inverse-CDF sampling)."""

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.models.sampling import _inverse_cdf, sample_token_ids
from tests.models.helpers import xla_compiled_functions

LARGEST_BELOW_ONE = np.nextafter(np.float32(1.0), np.float32(0.0))


def _softmax64(logits):
    logits = np.asarray(logits, np.float64)
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _frequencies(logits_row, num_draws, seed):
    vocab = len(logits_row)
    logits = tf.tile(tf.constant(logits_row, tf.float32)[None, :], [num_draws, 1])
    uniform = tf.random.stateless_uniform([num_draws], seed=[seed, 0], dtype=tf.float32)
    ids = sample_token_ids(logits, uniform).numpy()
    assert ids.min() >= 0 and ids.max() < vocab
    return np.bincount(ids, minlength=vocab) / num_draws


def test_frequencies_match_softmax_padded_vocab():
    vocab = 37  # not a perfect square: block size 7, 5 full blocks and a last one of 2 ids
    rng = np.random.default_rng(0)
    logits = rng.normal(size=vocab).astype(np.float32) * 1.5
    freq = _frequencies(logits, 200_000, seed=1)
    assert np.max(np.abs(freq - _softmax64(logits))) < 0.005


def test_frequencies_match_softmax_peaked():
    vocab = 37
    logits = np.zeros(vocab, np.float32)
    logits[23] = 5.0
    logits[36] = 2.0  # the last id, in the short last block
    logits[0] = -3.0
    probs = _softmax64(logits)
    assert probs[23] > 0.75
    freq = _frequencies(logits, 200_000, seed=2)
    assert np.max(np.abs(freq - probs)) < 0.005
    assert abs(freq[23] - probs[23]) < 0.005


@pytest.mark.parametrize("vocab", [1, 2, 3, 5])
def test_tiny_vocabularies_draw_by_the_softmax(vocab):
    """One block only (1 and 2 ids), or a last block of a single id (3 and 5)."""
    logits = np.random.default_rng(vocab).normal(size=vocab).astype(np.float32)
    freq = _frequencies(logits, 20_000, seed=vocab)
    assert np.max(np.abs(freq - _softmax64(logits))) < 0.02
    tiled = tf.tile(tf.constant(logits)[None, :], [50, 1])
    uniform = tf.random.stateless_uniform([50], seed=[vocab, 1])
    np.testing.assert_array_equal(sample_token_ids(tiled, uniform).numpy(),
                                  _inverse_cdf(tiled, uniform).numpy())


def test_frequencies_match_softmax_perfect_square():
    vocab = 49  # exactly 7 blocks of 7: no padding
    logits = np.random.default_rng(3).normal(size=vocab).astype(np.float32)
    freq = _frequencies(logits, 100_000, seed=4)
    assert np.max(np.abs(freq - _softmax64(logits))) < 0.006


def test_large_vocab_in_range_and_deterministic():
    vocab, n = 30522, 64
    logits = tf.random.stateless_normal([n, vocab], seed=[5, 0]) * 3.0
    uniform = tf.random.stateless_uniform([n], seed=[6, 0])
    ids1 = sample_token_ids(logits, uniform).numpy()
    ids2 = sample_token_ids(logits, uniform).numpy()
    assert ids1.dtype == np.int32
    assert ids1.min() >= 0 and ids1.max() < vocab
    np.testing.assert_array_equal(ids1, ids2)
    # Draws are spread over the vocabulary, not stuck at one id or one block.
    assert len(np.unique(ids1)) > n // 2
    # Different uniforms give (mostly) different draws.
    other = sample_token_ids(logits, tf.random.stateless_uniform([n], seed=[7, 0])).numpy()
    assert np.mean(other != ids1) > 0.5


def test_large_vocab_inverse_cdf_matches_numpy():
    """Each draw is the inverse CDF of softmax(logits) at `uniform` (away from rounding ties)."""
    vocab, n = 30522, 32
    logits = (tf.random.stateless_normal([n, vocab], seed=[8, 0]) * 2.0).numpy()
    uniform = np.random.default_rng(9).uniform(0.0, 1.0, size=n).astype(np.float32)
    ids = sample_token_ids(tf.constant(logits), tf.constant(uniform)).numpy()
    cdf = np.cumsum(_softmax64(logits), axis=-1)
    expected = np.array([np.searchsorted(cdf[i], uniform[i], side="right") for i in range(n)])
    # float32 sums over 30k entries are off by ~1e-6: the drawn id's CDF interval must contain
    # the uniform number up to that rounding, and most draws must be exactly the float64 answer.
    rows = np.arange(n)
    lower = np.where(ids > 0, cdf[rows, np.maximum(ids - 1, 0)], 0.0)
    upper = cdf[rows, ids]
    tol = 1e-5
    assert np.all(lower - tol <= uniform) and np.all(uniform <= upper + tol)
    assert np.mean(ids == expected) >= 0.9


def _zero_prob_layout(vocab, zero_ids):
    logits = np.zeros(vocab, np.float32)
    logits[list(zero_ids)] = -1e4
    assert np.all(np.exp(np.float32(-1e4)) == 0.0)
    return logits


@pytest.mark.parametrize("vocab, zero_ids", [
    # V=37: block 7. Zeros at the start of the vocabulary / first block.
    (37, range(0, 3)),
    # The whole first block is zero.
    (37, range(0, 7)),
    # End of a block and start of the next (ids 6 and 7 straddle the first boundary).
    (37, [5, 6, 7, 13, 14]),
    # The end of the vocabulary, right before the padded entries.
    (37, range(33, 37)),
    # The whole last (partial) block: ids 35, 36 plus padding.
    (37, range(35, 37)),
    # Everything but two ids, one at each end.
    (37, range(1, 36)),
    # A perfect square, zeros at both ends of every block.
    (49, [i for i in range(49) if i % 7 in (0, 6)]),
])
def test_zero_probability_ids_never_drawn(vocab, zero_ids):
    logits_row = _zero_prob_layout(vocab, zero_ids)
    extremes = np.array([0.0, LARGEST_BELOW_ONE, 1e-30, 0.5], np.float32)
    grid = np.linspace(0.0, 1.0, 4001, endpoint=False).astype(np.float32)
    randoms = np.random.default_rng(10).uniform(size=4000).astype(np.float32)
    uniform = np.concatenate([extremes, grid, randoms, np.minimum(grid + 1e-7, LARGEST_BELOW_ONE)])
    logits = np.tile(logits_row[None, :], [len(uniform), 1])
    ids = sample_token_ids(tf.constant(logits), tf.constant(uniform)).numpy()
    assert ids.min() >= 0 and ids.max() < vocab
    drawn_zero = np.isin(ids, list(zero_ids))
    assert not drawn_zero.any(), (uniform[drawn_zero], ids[drawn_zero])
    # The allowed ids are uniform: each should be drawn about equally often.
    allowed = np.setdiff1d(np.arange(vocab), list(zero_ids))
    counts = np.bincount(ids, minlength=vocab)[allowed]
    assert counts.min() > 0
    assert np.all(np.abs(counts / len(uniform) - 1.0 / len(allowed)) < 0.02)


def test_extreme_uniforms_pick_first_and_last_nonzero_ids():
    vocab = 37
    logits_row = _zero_prob_layout(vocab, list(range(0, 4)) + list(range(30, 37)))
    logits = np.tile(logits_row[None, :], [2, 1])
    ids = sample_token_ids(tf.constant(logits),
                           tf.constant([0.0, LARGEST_BELOW_ONE], tf.float32)).numpy()
    assert ids.tolist() == [4, 29]


def test_zero_probability_ids_large_vocab_random_layout():
    vocab, n = 30522, 16
    rng = np.random.default_rng(11)
    logits = rng.normal(size=(n, vocab)).astype(np.float32)
    zero = rng.uniform(size=(n, vocab)) < 0.5
    block = 175  # ceil(sqrt(30522))
    zero[:, :block] = True          # whole first block
    zero[:, -40:] = True            # end of the vocabulary
    zero[:, block * 10 - 3: block * 10 + 3] = True  # straddling a block boundary
    logits[zero] -= 1e4
    for u in (0.0, LARGEST_BELOW_ONE):
        ids = sample_token_ids(tf.constant(logits), tf.fill([n], np.float32(u))).numpy()
        assert not zero[np.arange(n), ids].any(), (u, ids)
    uniform = rng.uniform(size=n).astype(np.float32)
    ids = sample_token_ids(tf.constant(logits), tf.constant(uniform)).numpy()
    assert not zero[np.arange(n), ids].any()


def test_batch_shape_preserved_and_int32():
    b, n, vocab = 3, 5, 37
    logits = tf.random.stateless_normal([b, n, vocab], seed=[12, 0])
    uniform = tf.random.stateless_uniform([b, n], seed=[13, 0])
    ids = sample_token_ids(logits, uniform)
    assert ids.dtype == tf.int32
    assert ids.shape == (b, n)
    # Each [b, n] draw only depends on its own row: matches sampling the flattened rows.
    flat = sample_token_ids(tf.reshape(logits, [b * n, vocab]), tf.reshape(uniform, [-1]))
    np.testing.assert_array_equal(ids.numpy().reshape(-1), flat.numpy())
    # A one-hot-ish row always draws its peak.
    peaked = tf.one_hot(tf.constant([[4, 9], [36, 0]]), vocab) * 1e4
    drawn = sample_token_ids(peaked, tf.constant([[0.3, 0.99], [0.0, 0.5]]))
    assert drawn.numpy().tolist() == [[4, 9], [36, 0]]


@pytest.mark.slow
def test_xla_matches_eager():
    """The compiled kernel against the same search run eagerly by TensorFlow's own kernels."""
    b, n, vocab = 4, 20, 30522
    logits = tf.random.stateless_normal([b, n, vocab], seed=[14, 0]) * 2.0
    uniform = tf.random.stateless_uniform([b, n], seed=[15, 0])
    eager = _inverse_cdf(logits, uniform)
    compiled = sample_token_ids(logits, uniform)
    assert compiled.dtype == tf.int32
    assert compiled.shape == (b, n)
    compiled, eager = compiled.numpy().ravel(), eager.numpy().ravel()
    # XLA computes exp and the block sums with its own code for the host CPU, so a draw whose
    # uniform number sits within rounding of a CDF boundary may land on the neighbouring id.
    # Any disagreement must be such a tie: both ids' float64 CDF intervals reach the uniform.
    differ = np.flatnonzero(compiled != eager)
    assert len(differ) <= 2, f"{len(differ)} of {b * n} draws differ"
    cdf = np.cumsum(_softmax64(logits.numpy().reshape(b * n, vocab)), axis=-1)
    u = uniform.numpy().ravel()
    for i in differ:
        for drawn in (compiled[i], eager[i]):
            lower = cdf[i, drawn - 1] if drawn > 0 else 0.0
            assert lower - 1e-5 <= u[i] <= cdf[i, drawn] + 1e-5, (i, drawn)


@pytest.mark.slow
def test_xla_zero_probability_and_small_vocab():
    vocab = 37
    logits_row = _zero_prob_layout(vocab, [0, 1, 6, 7, 35, 36])
    uniform = np.concatenate([[0.0, LARGEST_BELOW_ONE],
                              np.random.default_rng(16).uniform(size=998)]).astype(np.float32)
    logits = np.tile(logits_row[None, :], [len(uniform), 1])
    compiled = sample_token_ids(tf.constant(logits), tf.constant(uniform)).numpy()
    eager = _inverse_cdf(tf.constant(logits), tf.constant(uniform)).numpy()
    np.testing.assert_array_equal(compiled, eager)
    assert not np.isin(compiled, [0, 1, 6, 7, 35, 36]).any()


def _ulp_neighbourhood(values, steps):
    """float32 values within `steps` ulps of each of `values`, clipped to [0, 1)."""
    out = [np.asarray(values, np.float32)]
    up = down = out[0]
    for _ in range(steps):
        up = np.nextafter(up, np.float32(2.0))
        down = np.nextafter(down, np.float32(-1.0))
        out += [up, down]
    return np.clip(np.concatenate(out), 0.0, LARGEST_BELOW_ONE).astype(np.float32)


@pytest.mark.parametrize("vocab", [37, 400, 1000])
def test_zero_probability_ids_never_drawn_at_block_boundaries(vocab):
    """Uniforms a few ulps around every block boundary, where float32 rounding of the block sums
    and of the in-block cumsum disagree, with zero-probability ids at both ends of every block."""
    block = int(np.ceil(np.sqrt(vocab)))
    rng = np.random.default_rng(vocab)
    rows = 24
    logits = (rng.normal(size=(rows, vocab)) * 2.0).astype(np.float32)
    pos = np.arange(vocab) % block
    zero = (pos < 2) | (pos >= block - 2) | (np.arange(vocab) >= vocab - 2)
    logits[:, zero] -= 1e4
    probs = np.exp(logits - logits.max(axis=-1, keepdims=True)).astype(np.float32)
    padded = np.pad(probs, [[0, 0], [0, block * int(np.ceil(vocab / block)) - vocab]])
    block_cdf = np.cumsum(padded.reshape(rows, -1, block).sum(-1), axis=-1)
    fractions = (block_cdf / block_cdf[:, -1:]).astype(np.float32)  # [rows, blocks]
    all_logits, all_uniform = [], []
    for r in range(rows):
        u = _ulp_neighbourhood(np.concatenate([[0.0], fractions[r]]), steps=6)
        all_uniform.append(u)
        all_logits.append(np.repeat(logits[r:r + 1], len(u), axis=0))
    all_logits, all_uniform = np.concatenate(all_logits), np.concatenate(all_uniform)
    for fn in (_inverse_cdf, sample_token_ids):  # TensorFlow's kernels, then XLA's
        ids = fn(tf.constant(all_logits), tf.constant(all_uniform)).numpy()
        assert ids.min() >= 0 and ids.max() < vocab
        bad = zero[ids]
        assert not bad.any(), (all_uniform[bad][:5], ids[bad][:5])


def test_temperature_divides_the_logits():
    logits = tf.random.stateless_normal([200, 101], seed=[17, 0]) * 3.0
    uniform = tf.random.stateless_uniform([200], seed=[18, 0])
    for temperature in (0.5, 2.0):  # powers of two: dividing first is exact
        np.testing.assert_array_equal(sample_token_ids(logits, uniform, temperature).numpy(),
                                      sample_token_ids(logits / temperature, uniform).numpy())


def test_excluded_ids_are_not_drawn():
    vocab, n = 37, 20_000
    logits = np.zeros([n, vocab], np.float32)
    excluded = np.arange(n) % vocab
    logits[np.arange(n), excluded] = 8.0  # the excluded id would be drawn 99% of the time
    uniform = tf.random.stateless_uniform([n], seed=[19, 0])
    ids = sample_token_ids(tf.constant(logits), uniform, excluded_ids=tf.constant(excluded)).numpy()
    assert not np.any(ids == excluded)
    # The rest stay uniform: each of the other 36 ids about 1/36 of the draws.
    others = (ids - excluded) % vocab
    assert np.abs(np.bincount(others, minlength=vocab)[1:] / n - 1 / 36).max() < 0.006


def test_bfloat16_logits_draw_as_their_float32_values():
    logits = tf.cast(tf.random.stateless_normal([300, 1000], seed=[20, 0]) * 3.0, tf.bfloat16)
    uniform = tf.random.stateless_uniform([300], seed=[21, 0])
    np.testing.assert_array_equal(
        sample_token_ids(logits, uniform, 2.0).numpy(),
        sample_token_ids(tf.cast(logits, tf.float32), uniform, 2.0).numpy())


def test_one_compiled_kernel():
    logits, uniform = tf.zeros([4, 50]), tf.zeros([4])
    assert xla_compiled_functions(lambda l, u: sample_token_ids(l, u), logits, uniform) == {"_draw"}
    assert xla_compiled_functions(
        lambda l, u: sample_token_ids(l, u, excluded_ids=tf.zeros([4], tf.int32)),
        logits, uniform) == {"_draw_excluding"}
