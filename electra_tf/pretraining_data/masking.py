"""Dynamic masking for ELECTRA pretraining, applied per batch in the tf.data pipeline.

Follows the original `pretrain_helpers.mask` (reference notes section 1.2): per sequence, choose
max(1, min(N, round(num_tokens * mask_prob))) positions uniformly among the candidates (real
tokens that are not special), then turn each chosen position into [MASK] with probability
`mask_token_rate` (0.85) and leave it unchanged otherwise. There is no random-token replacement.

Deliberate fix: positions are sampled WITHOUT replacement (random keys + top-k). The original
samples with replacement and averages the token ids of colliding samples (google-research/electra
issue #41), which makes the effective unique mask rate about 14% instead of the nominal 15%; here
it is the nominal 15%, and no slot repeats a position.

`masking="whole_word"` and `"span"` choose whole words or SpanBERT's spans of words instead of
single pieces, under the same budget (`word_masking.py`); what follows the choice (the slots,
the 85% [MASK]) is the same.

All randomness comes from `tf.random.stateless_*` ops, so the output is a pure function of `seed`
(per execution mode: on CPU, XLA-compiled and uncompiled runs draw different streams).
"""

import tensorflow as tf

from electra_tf.config import MASKINGS
from electra_tf.pretraining_data import word_masking

# keras_hub.layers.MaskedLMMaskGenerator is not used: it selects tokens independently with a
# Bernoulli rate (not the exact per-sequence count rule above) and defaults to BERT's 80/10/10.


def max_predictions_per_seq(mask_prob: float, max_seq_length: int) -> int:
    """N = int((mask_prob + 0.005) * max_seq_length): 128, 0.15 -> 19; 512, 0.15 -> 79; 512, 0.25 -> 130."""
    return int((mask_prob + 0.005) * max_seq_length)


def mask_tokens(input_ids, input_mask, seed, *, mask_prob, max_predictions, mask_token_id,
                special_token_ids, mask_token_rate=0.85, masking="token", is_continuation=None,
                span_p=0.2, span_max_words=10) -> dict[str, tf.Tensor]:
    """Masks a batch of sequences.

    Args:
      input_ids: int32 or int64 [batch, seq_len], the original (unmasked) token ids.
      input_mask: int [batch, seq_len], 1 for real tokens and 0 for padding.
      seed: int32 or int64 [2], a stateless RNG seed.
      mask_prob: fraction of the real tokens (including [CLS] and [SEP]) to choose.
      max_predictions: N, the number of prediction slots (see `max_predictions_per_seq`).
      mask_token_id: id written at the chosen positions that get masked.
      special_token_ids: ids never chosen (pass [CLS], [SEP] and [MASK]); padding is never chosen.
      mask_token_rate: probability that a chosen position becomes [MASK]; otherwise it is kept.
      masking: "token" (the original's), "whole_word" or "span" (see `word_masking`).
      is_continuation: bool [vocab_size], True for pieces that continue a word ("##..."); for
        "whole_word" and "span".
      span_p, span_max_words: the truncated geometric distribution of span lengths in words.

    Returns:
      A dict with `input_ids` ([batch, seq_len], input dtype, with [MASK]s),
      `masked_lm_positions` (int32 [batch, N]), `masked_lm_ids` (int32 [batch, N], the original
      ids at those positions) and `masked_lm_weights` (float32 [batch, N]). Used slots come first,
      in ascending position order, with weight 1.0; unused slots hold position 0, id 0, weight 0.0.
    """
    if masking not in MASKINGS:
        raise ValueError(f"masking must be one of {MASKINGS}, got {masking!r}")
    input_ids = tf.convert_to_tensor(input_ids)
    real = tf.cast(input_mask, tf.bool)
    specials = tf.constant(list(special_token_ids), dtype=input_ids.dtype)
    is_special = tf.reduce_any(tf.equal(input_ids[:, :, None], specials), axis=-1)
    candidates = tf.logical_and(real, tf.logical_not(is_special))
    seq_len = tf.shape(input_ids)[1]
    key_seed, replace_seed = tf.unstack(tf.random.experimental.stateless_split(seed, num=2))

    # Count rule of the original (float32 product, round half to even), clipped to the candidates.
    num_tokens = tf.reduce_sum(tf.cast(real, tf.float32), axis=1)
    count = tf.cast(tf.round(num_tokens * mask_prob), tf.int32)
    count = tf.maximum(1, tf.minimum(max_predictions, count))
    count = tf.minimum(count, tf.reduce_sum(tf.cast(candidates, tf.int32), axis=1))
    if masking == "token":
        # Uniform sampling without replacement: candidates get keys in [0, 1), everything else
        # -1. The first `count` of the top-N keys are a uniform sample of `count` candidates.
        keys = tf.where(candidates, tf.random.stateless_uniform(tf.shape(input_ids), key_seed),
                        -1.0)
    else:
        chosen = _choose_words(input_ids, candidates, count, key_seed, masking, is_continuation,
                               span_p, span_max_words)
        count = tf.reduce_sum(tf.cast(chosen, tf.int32), axis=1)  # words are never split
        keys = tf.where(chosen, 1.0, -1.0)
    weights = tf.sequence_mask(count, max_predictions)  # [batch, N] bool, used slots first

    # The N extra columns (-2) keep top_k valid when seq_len < N.
    keys = tf.pad(keys, [[0, 0], [0, max_predictions]], constant_values=-2.0)
    _, top = tf.math.top_k(keys, k=max_predictions, sorted=True)
    # Sort the used slots by position; unused ones sort last and are then zeroed.
    top = tf.sort(tf.where(weights, top, seq_len + max_predictions), axis=1)
    positions = tf.where(weights, top, 0)

    original = tf.gather(input_ids, positions, batch_dims=1)
    masked_lm_ids = tf.where(weights, tf.cast(original, tf.int32), 0)

    # Each used slot independently becomes [MASK] with probability mask_token_rate.
    u = tf.random.stateless_uniform(tf.shape(weights), replace_seed)
    replace = tf.logical_and(weights, u < mask_token_rate)
    hits = tf.one_hot(positions, seq_len, dtype=tf.int32) * tf.cast(replace, tf.int32)[:, :, None]
    to_mask = tf.reduce_max(hits, axis=1) > 0  # [batch, seq_len]
    new_ids = tf.where(to_mask, tf.cast(mask_token_id, input_ids.dtype), input_ids)

    return {
        "input_ids": new_ids,
        "masked_lm_positions": positions,
        "masked_lm_ids": masked_lm_ids,
        "masked_lm_weights": tf.cast(weights, tf.float32),
    }


def _choose_words(input_ids, candidates, budget, seed, masking, is_continuation, span_p,
                  span_max_words):
    """The pieces of the chosen words: bool [batch, seq_len], at most `budget` [batch] each."""
    if is_continuation is None:
        raise ValueError(f"masking {masking!r} needs is_continuation: which vocabulary ids "
                         "continue a word")
    word, num_words = word_masking.word_index(input_ids, candidates,
                                              tf.convert_to_tensor(is_continuation, tf.bool))
    if masking == "whole_word":
        return word_masking.choose_whole_words(word, num_words, budget, seed)
    return word_masking.choose_spans(word, num_words, budget, seed, p=span_p,
                                     max_words=span_max_words,
                                     max_proposals=input_ids.shape[1] or 512)
