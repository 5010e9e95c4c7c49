"""Whole-word and span masking: the budget, never a split word or a special token, 85% [MASK],
SpanBERT's span lengths; statistics over 10,000 sequences as the token masking's tests."""

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.config import ConfigError, ObjectiveConfig
from electra_tf.errors import UserError
from electra_tf.pretraining_data.masking import mask_tokens
from electra_tf.pretraining_data.word_masking import continuation_pieces, truncated_geometric

PAD, CLS, SEP, MASK = 0, 101, 102, 103
VOCAB_SIZE, FIRST_CONTINUATION = 1000, 500  # ids 500-999 are "##" pieces
IS_CONTINUATION = np.arange(VOCAB_SIZE) >= FIRST_CONTINUATION
SEQ_LEN, N = 128, 19


def random_batch(rng, batch, seq_len=SEQ_LEN):
    """[CLS] words [SEP] (an inner [SEP] in some rows), padded; a word is a piece 110-499 and
    0-4 continuation pieces; some rows start or restart with a stray continuation piece."""
    ids = np.zeros((batch, seq_len), np.int32)
    mask = np.zeros((batch, seq_len), np.int32)
    for row in range(batch):
        length = rng.integers(4, seq_len + 1)
        tokens = [CLS] + ([int(rng.integers(500, 1000))] if rng.random() < 0.1 else [])
        while len(tokens) < length - 1:
            tokens.append(int(rng.integers(110, 500)))
            tokens += rng.integers(500, 1000, size=rng.choice([0, 0, 0, 1, 1, 2, 4])).tolist()
            if rng.random() < 0.02:
                tokens += [SEP, int(rng.integers(500, 1000))]
        tokens = tokens[:length - 1] + [SEP]
        ids[row, :length], mask[row, :length] = tokens, 1
    return ids, mask


def words_of(ids, mask):
    """Each position's word (-1 for specials and padding), as the module's rule."""
    word = np.full(ids.shape, -1)
    for row in range(ids.shape[0]):
        current, previous_in_word = -1, False
        for t in range(ids.shape[1]):
            if not mask[row, t] or ids[row, t] in (CLS, SEP, MASK):
                previous_in_word = False
                continue
            if not (IS_CONTINUATION[ids[row, t]] and previous_in_word):
                current += 1
            word[row, t], previous_in_word = current, True
    return word


def chosen(out):
    picked = np.zeros(out["input_ids"].shape, bool)
    for row, (positions, weights) in enumerate(zip(out["masked_lm_positions"],
                                                   out["masked_lm_weights"])):
        picked[row, positions[weights > 0]] = True
    return picked


def run(masking, ids, mask, seed=(3, 4), **kwargs):
    out = mask_tokens(ids, mask, tf.constant(seed), mask_prob=0.15, max_predictions=N,
                      mask_token_id=MASK, special_token_ids=(CLS, SEP, MASK), masking=masking,
                      is_continuation=IS_CONTINUATION, **kwargs)
    return {name: value.numpy() for name, value in out.items()}


@pytest.fixture(scope="module")
def batch():
    return random_batch(np.random.default_rng(0), 10_000)


@pytest.mark.parametrize("masking", ["whole_word", "span"])
def test_statistics_over_10k_sequences(batch, masking):
    ids, mask = batch
    out = run(masking, ids, mask)
    picked, word = chosen(out), words_of(ids, mask)
    budget = np.maximum(1, np.minimum(N, np.round(mask.sum(1).astype(np.float32)
                                                   * np.float32(0.15)))).astype(int)
    used = out["masked_lm_weights"].sum(1)
    assert (used == picked.sum(1)).all() and (used <= budget).all()
    assert used.sum() / budget.sum() > 0.98  # the budget is spent, but for a few pieces
    assert not picked[word < 0].any()  # never a special token or padding
    for row in range(2000):  # whole words: every piece of a picked word is picked
        for w in np.unique(word[row][picked[row]]):
            assert picked[row][word[row] == w].all()
    # slots: used first, ascending positions, the original ids; 85% of them become [MASK]
    positions = out["masked_lm_positions"]
    unused_last = np.where(out["masked_lm_weights"] > 0, positions, 10_000 + np.arange(N))
    assert (np.diff(unused_last, axis=1) > 0).all()
    np.testing.assert_array_equal(out["masked_lm_ids"],
                                  np.where(out["masked_lm_weights"] > 0,
                                           np.take_along_axis(ids, positions, 1), 0))
    masked = out["input_ids"] == MASK
    assert not (masked & ~picked & (ids != MASK)).any()
    assert abs((masked & picked).sum() / picked.sum() - 0.85) < 0.01
    assert (out["input_ids"][~picked] == ids[~picked]).all()


def run_lengths(picked, word):
    """Lengths in words of the runs of consecutive picked words."""
    lengths = []
    for row in range(picked.shape[0]):
        words = sorted(set(word[row][picked[row]]))
        run = 1
        for a, b in zip(words, words[1:]):
            if b == a + 1:
                run += 1
            else:
                lengths.append(run)
                run = 1
        if words:
            lengths.append(run)
    return np.array(lengths)


def test_spans_are_runs_of_words_and_whole_words_are_scattered(batch):
    ids, mask = (part[:3000] for part in batch)
    word = words_of(ids, mask)
    spans = run_lengths(chosen(run("span", ids, mask)), word).mean()
    words = run_lengths(chosen(run("whole_word", ids, mask)), word).mean()
    # random words of 15%: runs of ~1.2 words; spans (mean 3.8 words, but a budget of ~10
    # pieces at these lengths cuts the long ones): ~2.2
    assert words < 1.4 and spans > 1.5 * words, (words, spans)


def test_span_lengths_follow_spanberts_truncated_geometric():
    lengths = truncated_geometric([200_000], tf.constant([1, 2]), 0.2, 10).numpy()
    assert lengths.min() == 1 and lengths.max() == 10
    expected = 0.2 * 0.8 ** np.arange(10) / (1 - 0.8 ** 10)
    np.testing.assert_allclose(np.bincount(lengths, minlength=11)[1:] / lengths.size, expected,
                               atol=0.004)
    assert abs(lengths.mean() - 3.8) < 0.03  # SpanBERT's mean span length


def test_token_masking_is_unchanged_by_the_option(batch):
    ids, mask = (part[:64] for part in batch)
    plain = mask_tokens(ids, mask, tf.constant([5, 6]), mask_prob=0.15, max_predictions=N,
                        mask_token_id=MASK, special_token_ids=(CLS, SEP, MASK))
    token = run("token", ids, mask, seed=(5, 6))
    for name, value in plain.items():
        np.testing.assert_array_equal(value.numpy(), token[name])


def test_deterministic_and_inside_tf_data(batch):
    ids, mask = (part[:16] for part in batch)
    first, again = run("span", ids, mask), run("span", ids, mask)
    for name in first:
        np.testing.assert_array_equal(first[name], again[name])
    dataset = tf.data.Dataset.from_tensors((ids, mask)).map(
        lambda i, m: mask_tokens(i, m, tf.constant([3, 4]), mask_prob=0.15, max_predictions=N,
                                 mask_token_id=MASK, special_token_ids=(CLS, SEP, MASK),
                                 masking="whole_word", is_continuation=IS_CONTINUATION))
    element = next(iter(dataset))
    assert element["masked_lm_positions"].shape == (16, N)  # static shapes
    np.testing.assert_array_equal(element["input_ids"], run("whole_word", ids, mask)["input_ids"])


def test_bad_settings_give_one_clear_error():
    with pytest.raises(UserError, match="no '##' continuation pieces"):
        continuation_pieces(["[PAD]", "[CLS]", "the", "▁cat"])
    assert continuation_pieces(["the", "##s"]).tolist() == [False, True]
    with pytest.raises(ConfigError, match="objective.masking must be one of token, whole_word"):
        ObjectiveConfig(masking="words").validate()
    with pytest.raises(ConfigError, match="span_p must be in"):
        ObjectiveConfig(masking="span", span_p=1.5).validate()
    with pytest.raises(ValueError, match="needs is_continuation"):
        mask_tokens(np.array([[CLS, 200, SEP]]), np.ones([1, 3]), tf.constant([1, 2]),
                    mask_prob=0.15, max_predictions=2, mask_token_id=MASK,
                    special_token_ids=(CLS, SEP, MASK), masking="whole_word")
