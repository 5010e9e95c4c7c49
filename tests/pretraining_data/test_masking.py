"""Tests for electra_tf.pretraining_data.masking (dynamic masking of the tf.data pipeline)."""

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.pretraining_data.masking import mask_tokens, max_predictions_per_seq

PAD, CLS, SEP, MASK = 0, 101, 102, 103
SPECIALS = (CLS, SEP, MASK)
SEQ_LEN = 128
N = 19  # max_predictions_per_seq(0.15, 128)


def _mask(ids, input_mask, seed, **kwargs):
    kwargs.setdefault("mask_prob", 0.15)
    kwargs.setdefault("max_predictions", N)
    out = mask_tokens(ids, input_mask, tf.constant(seed, tf.int32), mask_token_id=MASK,
                      special_token_ids=SPECIALS, **kwargs)
    return {k: v.numpy() for k, v in out.items()}


def _expected_count(input_mask, candidates, mask_prob=0.15, n=N):
    """The count rule, computed independently with numpy (float32 product, half-to-even)."""
    num_tokens = input_mask.sum(axis=1).astype(np.float32)
    rule = np.round(num_tokens * np.float32(mask_prob)).astype(np.int64)
    return np.minimum(np.maximum(1, np.minimum(n, rule)), candidates.sum(axis=1))


def _random_batch(rng, batch, seq_len=SEQ_LEN):
    """[CLS] ids... [SEP] then padding; half the rows get an inner [SEP], some a literal [MASK]."""
    lengths = rng.integers(3, seq_len + 1, size=batch)
    ids = rng.integers(104, 500, size=(batch, seq_len))
    ids[rng.random((batch, seq_len)) < 0.01] = MASK  # literal [MASK] tokens in the text
    pos = np.arange(seq_len)[None, :]
    ids[:, 0] = CLS
    ids[np.arange(batch), lengths - 1] = SEP
    inner = rng.random(batch) < 0.5
    inner_at = rng.integers(1, np.maximum(2, lengths - 1))
    ids[inner, inner_at[inner]] = SEP
    input_mask = (pos < lengths[:, None]).astype(np.int32)
    ids = np.where(input_mask == 1, ids, PAD).astype(np.int32)
    return ids, input_mask


@pytest.mark.parametrize("prob,length,expected", [(0.15, 128, 19), (0.15, 512, 79), (0.25, 512, 130)])
def test_max_predictions_per_seq(prob, length, expected):
    assert max_predictions_per_seq(prob, length) == expected


def test_statistics_over_10k_sequences():
    rng = np.random.default_rng(0)
    counts, expected, chosen_total, masked_total = [], [], 0, 0
    observed_bins, expected_bins = np.zeros(8), np.zeros(8)
    for b in range(4):
        ids, input_mask = _random_batch(rng, 2500)
        out = _mask(ids, input_mask, [7, b])
        pos, w = out["masked_lm_positions"], out["masked_lm_weights"]
        used = w == 1.0
        assert set(np.unique(w)) <= {0.0, 1.0}
        # Used slots come first, and unused slots are zeroed.
        count = used.sum(axis=1)
        assert np.array_equal(used, np.arange(N)[None, :] < count[:, None])
        assert np.all(pos[~used] == 0) and np.all(out["masked_lm_ids"][~used] == 0)
        candidates = (input_mask == 1) & ~np.isin(ids, SPECIALS)
        counts.append(count)
        expected.append(_expected_count(input_mask, candidates))

        rows = np.nonzero(used)[0]
        cols = pos[used]
        # Only candidates are chosen: never special ids, never padding.
        assert np.all(candidates[rows, cols])
        # No duplicate positions among the used slots of a row.
        for r in range(len(ids)):
            p = pos[r, : count[r]]
            assert len(np.unique(p)) == len(p)
        # masked_lm_ids are the original ids at the positions.
        assert np.array_equal(out["masked_lm_ids"][used], ids[rows, cols])
        # Chosen positions are either [MASK] or unchanged; all other positions are unchanged.
        chosen = np.zeros_like(candidates)
        chosen[rows, cols] = True
        new_ids = out["input_ids"]
        assert new_ids.dtype == ids.dtype
        assert np.array_equal(new_ids[~chosen], ids[~chosen])
        assert np.all((new_ids[chosen] == MASK) | (new_ids[chosen] == ids[chosen]))
        chosen_total += chosen.sum()
        masked_total += (new_ids[chosen] == MASK).sum()  # candidates are never MASK already

        # Uniformity: per 16-position bin, observed picks vs the expected count/candidates share.
        share = count / np.maximum(1, candidates.sum(axis=1))
        observed_bins += np.bincount(cols // 16, minlength=8)
        expected_bins += np.bincount(np.nonzero(candidates)[1] // 16,
                                     weights=np.repeat(share, candidates.sum(axis=1)), minlength=8)

    counts, expected = np.concatenate(counts), np.concatenate(expected)
    assert np.array_equal(counts, expected)  # the count rule holds exactly, per sequence
    assert abs(counts.sum() / expected.sum() - 1.0) < 0.005
    assert abs(masked_total / chosen_total - 0.85) < 0.01
    assert np.all(np.abs(observed_bins / expected_bins - 1.0) < 0.05), observed_bins / expected_bins


def test_determinism():
    ids, input_mask = _random_batch(np.random.default_rng(1), 64)
    a = _mask(ids, input_mask, [3, 4])
    b = _mask(ids, input_mask, [3, 4])
    c = _mask(ids, input_mask, [3, 5])
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
    assert not np.array_equal(a["masked_lm_positions"], c["masked_lm_positions"])
    assert not np.array_equal(a["input_ids"], c["input_ids"])


def test_int64_ids_and_seed():
    ids, input_mask = _random_batch(np.random.default_rng(2), 8)
    out = mask_tokens(tf.constant(ids, tf.int64), tf.constant(input_mask, tf.int64),
                      tf.constant([1, 2], tf.int64), mask_prob=0.15, max_predictions=N,
                      mask_token_id=MASK, special_token_ids=SPECIALS)
    assert out["input_ids"].dtype == tf.int64
    assert out["masked_lm_positions"].dtype == tf.int32
    assert out["masked_lm_ids"].dtype == tf.int32
    assert out["masked_lm_weights"].dtype == tf.float32
    assert np.array_equal(out["masked_lm_weights"].numpy().sum(axis=1),
                          _expected_count(input_mask, (input_mask == 1) & ~np.isin(ids, SPECIALS)))


def test_edge_cases():
    ids = np.zeros((4, 16), np.int32)
    input_mask = np.zeros((4, 16), np.int32)
    ids[0, :2] = [CLS, SEP]  # zero candidates
    input_mask[0, :2] = 1
    ids[1, :3] = [CLS, 200, SEP]  # one candidate: round(3 * 0.15) = 0 -> at least 1
    input_mask[1, :3] = 1
    ids[2, :4] = [CLS, MASK, SEP, MASK]  # only special ids: zero candidates
    input_mask[2, :4] = 1
    ids[3, :] = [CLS, 300, SEP] + [400] * 13  # ordinary ids under input_mask 0 are padding
    input_mask[3, :3] = 1
    for seed in range(20):
        out = _mask(ids, input_mask, [seed, 0])
        w, pos = out["masked_lm_weights"], out["masked_lm_positions"]
        assert not np.any(np.isnan(w))
        np.testing.assert_array_equal(w.sum(axis=1), [0.0, 1.0, 0.0, 1.0])
        np.testing.assert_array_equal(pos[[0, 2]], 0)
        np.testing.assert_array_equal(out["input_ids"][[0, 2]], ids[[0, 2]])
        assert pos[1, 0] == 1 and out["masked_lm_ids"][1, 0] == 200
        assert pos[3, 0] == 1 and out["masked_lm_ids"][3, 0] == 300
        np.testing.assert_array_equal(out["input_ids"][3, 3:], 400)
        assert out["input_ids"][1, 1] in (MASK, 200)
    # seq_len shorter than max_predictions still works.
    out = _mask(ids[:, :4], input_mask[:, :4], [1, 1])
    np.testing.assert_array_equal(out["masked_lm_weights"].sum(axis=1), [0.0, 1.0, 0.0, 1.0])
    assert out["masked_lm_positions"].shape == (4, N)


def _check_static(spec_or_tensors, batch):
    shapes = {k: tuple(v.shape) for k, v in spec_or_tensors.items()}
    assert shapes == {"input_ids": (batch, SEQ_LEN), "masked_lm_positions": (batch, N),
                      "masked_lm_ids": (batch, N), "masked_lm_weights": (batch, N)}


def test_inside_tf_data_map():
    ids, input_mask = _random_batch(np.random.default_rng(3), 8)
    ds = tf.data.Dataset.from_tensor_slices((ids, input_mask)).batch(4, drop_remainder=True)
    ds = ds.enumerate().map(
        lambda i, x: mask_tokens(x[0], x[1], tf.stack([tf.constant(9, tf.int64), i]),
                                 mask_prob=0.15, max_predictions=N, mask_token_id=MASK,
                                 special_token_ids=SPECIALS))
    _check_static(ds.element_spec, 4)
    for i, batch in enumerate(ds):
        eager = mask_tokens(ids[4 * i: 4 * i + 4], input_mask[4 * i: 4 * i + 4],
                            tf.constant([9, i], tf.int64), mask_prob=0.15, max_predictions=N,
                            mask_token_id=MASK, special_token_ids=SPECIALS)
        for key in eager:
            np.testing.assert_array_equal(batch[key].numpy(), eager[key].numpy())


def test_inside_jit_compiled_function():
    ids, input_mask = _random_batch(np.random.default_rng(4), 8)

    @tf.function(jit_compile=True)
    def fn(ids, input_mask, seed):
        return mask_tokens(ids, input_mask, seed, mask_prob=0.15, max_predictions=N,
                           mask_token_id=MASK, special_token_ids=SPECIALS)

    specs = (tf.TensorSpec([8, SEQ_LEN], tf.int32), tf.TensorSpec([8, SEQ_LEN], tf.int32),
             tf.TensorSpec([2], tf.int32))
    _check_static(fn.get_concrete_function(*specs).structured_outputs, 8)
    out = {k: v.numpy() for k, v in fn(ids, input_mask, tf.constant([5, 6])).items()}
    _check_static(out, 8)
    candidates = (input_mask == 1) & ~np.isin(ids, SPECIALS)
    used = out["masked_lm_weights"] == 1.0
    assert np.array_equal(used.sum(axis=1), _expected_count(input_mask, candidates))
    rows, cols = np.nonzero(used)[0], out["masked_lm_positions"][used]
    assert np.all(candidates[rows, cols])
    assert np.array_equal(out["masked_lm_ids"][used], ids[rows, cols])
    chosen = np.zeros_like(candidates)
    chosen[rows, cols] = True
    assert np.array_equal(out["input_ids"][~chosen], ids[~chosen])
    assert np.all((out["input_ids"][chosen] == MASK) | (out["input_ids"][chosen] == ids[chosen]))
