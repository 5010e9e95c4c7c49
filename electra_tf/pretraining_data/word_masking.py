"""Choosing whole words or spans of words to mask, under the original's per-sequence budget.

A word is a run of WordPiece pieces: a piece starts a new word unless it is a continuation
("##...") following a piece of the same word. Special tokens and padding belong to no word.
`budget` pieces may be chosen per sequence (the count rule of `masking.mask_tokens`); words are
never split, so a sequence may end a few pieces under its budget.

- whole words (`choose_whole_words`, BERT's whole-word masking): the words in a random order,
  each taken when its pieces still fit in the budget, else skipped, as BERT's
  `create_masked_lm_predictions` does;
- spans (`choose_spans`, SpanBERT): repeatedly a span length in words from a geometric
  distribution truncated at `max_words` (SpanBERT's p = 0.2 and 10: mean 3.8 words) and a start
  word uniformly at random; the span's words not chosen yet are taken when they fit in the
  budget. `max_proposals` spans are tried per sequence (static shapes).

Both work on a batch at once with static shapes and stateless randomness (a pure function of
the seed), in the tf.data pipeline like the token masking.
"""

from __future__ import annotations

import math

import numpy as np
import tensorflow as tf

from electra_tf.errors import UserError
from electra_tf.text import vocab_files

CONTINUATION_PREFIX = "##"  # WordPiece's mark of a piece inside a word


def continuation_pieces(vocabulary: list[str], source: str = "the vocabulary", *,
                        sentencepiece: bool = False) -> np.ndarray:
    """bool [len(vocabulary)]: True for the pieces that continue a word: WordPiece's "##ing";
    with `sentencepiece`, every piece that does not begin with "▁" (SentencePiece marks the
    pieces that start a word; special pieces are never masked, so their value does not
    matter). Raises UserError for a WordPiece vocabulary without any: words cannot be told apart
    in it."""
    if sentencepiece:
        word_start = vocab_files.SENTENCEPIECE_WORD_START
        return np.array([not piece.startswith(word_start) for piece in vocabulary], bool)
    table = np.array([token.startswith(CONTINUATION_PREFIX) for token in vocabulary], bool)
    if not table.any():
        raise UserError(f"{source} has no '{CONTINUATION_PREFIX}' continuation pieces, so "
                        "whole words cannot be found for objective.masking whole_word or span: "
                        "use a WordPiece vocabulary, or objective.masking token")
    return table


def continuation_pieces_of(vocab_file: str) -> np.ndarray:
    """`continuation_pieces` of a vocab.txt or a SentencePiece model (`vocab_files`)."""
    return continuation_pieces(vocab_files.load_tokens(vocab_file), vocab_file,
                               sentencepiece=vocab_files.is_sentencepiece(vocab_file))


def word_index(input_ids, candidates, is_continuation):
    """The word of each piece: int32 [batch, seq_len], -1 off the candidates (special tokens,
    padding); and the number of words [batch]. `is_continuation`: bool [vocab_size]."""
    continuation = tf.gather(is_continuation, tf.cast(input_ids, tf.int32))
    after_candidate = tf.pad(candidates[:, :-1], [[0, 0], [1, 0]])
    starts = candidates & ~(continuation & after_candidate)
    word = tf.cumsum(tf.cast(starts, tf.int32), axis=1) - 1
    return tf.where(candidates, word, -1), tf.reduce_sum(tf.cast(starts, tf.int32), axis=1)


def truncated_geometric(shape, seed, p: float, max_value: int) -> tf.Tensor:
    """int32 samples in [1, max_value] with P(k) proportional to p (1 - p)^(k - 1) (inverse
    CDF of the geometric distribution, renormalised to the first `max_value` values)."""
    tail = (1.0 - p) ** max_value
    u = tf.random.stateless_uniform(shape, seed, dtype=tf.float64)
    k = 1 + tf.floor(tf.math.log1p(-u * (1.0 - tail)) / math.log1p(-p))
    return tf.cast(tf.clip_by_value(k, 1, max_value), tf.int32)


def _take_greedily(word, num_words, budget, proposal_starts, proposal_lengths):
    """Chosen pieces, bool [batch, seq_len]: proposals [batch, K] of word ranges [start,
    start + length) in order, each taking its words not yet chosen when they fit the budget."""
    seq_len = tf.shape(word)[1]
    word_ids = tf.range(seq_len)[None, :]  # words are numbered below seq_len
    pieces_per_word = tf.math.bincount(word + 1, minlength=seq_len + 1, maxlength=seq_len + 1,
                                       axis=-1)[:, 1:]  # column 0 counts the -1s: no word

    def propose(state, proposal):
        chosen, used = state
        start, length = proposal  # [batch] each
        span = ((word_ids >= start[:, None]) & (word_ids < (start + length)[:, None])
                & (word_ids < num_words[:, None]) & ~chosen)
        new = tf.reduce_sum(tf.where(span, pieces_per_word, 0), axis=1)
        accept = (new > 0) & (used + new <= budget)
        return chosen | (span & accept[:, None]), used + tf.where(accept, new, 0)

    initial = (tf.zeros_like(word, tf.bool), tf.zeros_like(num_words))
    proposals = (tf.transpose(proposal_starts), tf.transpose(proposal_lengths))  # [K, batch]
    chosen_words, _ = tf.foldl(propose, proposals, initializer=initial)
    return tf.gather(chosen_words, tf.maximum(word, 0), batch_dims=1) & (word >= 0)


def choose_whole_words(word, num_words, budget, seed):
    """Whole words in a random order under the budget: bool [batch, seq_len]."""
    seq_len = tf.shape(word)[1]
    keys = tf.random.stateless_uniform(tf.shape(word), seed)
    keys = tf.where(tf.range(seq_len)[None, :] < num_words[:, None], keys, -1.0)
    _, order = tf.math.top_k(keys, k=seq_len)  # the words first, shuffled
    return _take_greedily(word, num_words, budget, order, tf.ones_like(order))


def choose_spans(word, num_words, budget, seed, *, p: float, max_words: int,
                 max_proposals: int):
    """Spans of whole words under the budget: bool [batch, seq_len]."""
    start_seed, length_seed = tf.unstack(tf.random.experimental.stateless_split(seed, num=2))
    shape = tf.stack([tf.shape(word)[0], max_proposals])
    u = tf.random.stateless_uniform(shape, start_seed)
    starts = tf.cast(tf.floor(u * tf.cast(num_words[:, None], tf.float32)), tf.int32)
    lengths = truncated_geometric(shape, length_seed, p, max_words)
    return _take_greedily(word, num_words, budget, starts, lengths)
