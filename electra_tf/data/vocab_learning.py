"""Learning a WordPiece vocabulary from a corpus."""

from __future__ import annotations

import os
from typing import Iterable

import keras_hub
import tensorflow as tf

from electra_tf.data.tokenization import SPECIAL_TOKENS, VocabularyError


def learn_vocabulary(lines: Iterable[str] | tf.data.Dataset, vocab_size: int, output_file: str,
                     lower_case: bool = True, strip_accents: bool | None = None) -> list[str]:
    """Learns a WordPiece vocabulary with tensorflow-text's learner (through keras-hub).

    The result starts with [PAD] [UNK] [CLS] [SEP] [MASK] and is written one token per line.
    """
    if isinstance(lines, tf.data.Dataset):
        dataset = lines
    else:
        lines = [line for line in lines if line.strip()]
        if not lines:
            raise VocabularyError("cannot learn a vocabulary from an empty corpus")
        dataset = tf.data.Dataset.from_tensor_slices(lines)
    vocabulary = keras_hub.tokenizers.compute_word_piece_vocabulary(
        dataset.batch(1000), vocabulary_size=vocab_size, lowercase=lower_case,
        strip_accents=lower_case if strip_accents is None else strip_accents,
        reserved_tokens=list(SPECIAL_TOKENS))
    directory = os.path.dirname(output_file)
    if directory:
        tf.io.gfile.makedirs(directory)
    with tf.io.gfile.GFile(output_file, "w") as f:
        f.write("".join(token + "\n" for token in vocabulary))
    return vocabulary
