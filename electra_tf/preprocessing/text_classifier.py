"""Raw strings -> the classifier's features, as a keras-hub preprocessor.

`ElectraTextClassifierPreprocessor` turns one text or a pair of texts into what
`ElectraClassifier` reads, the features `run_finetuning` makes (`task_data.classification_features`):
`[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`, truncated as the original's `_truncate_seq_pair`
(one token at a time from the longer text, from `b` on a tie: keras-hub's round-robin packer
keeps the same tokens), segment ids 0 through the first [SEP] and 1 after, padded with 0.

It is keras-hub's `TextClassifierPreprocessor` with keras-hub's `ElectraTokenizer` (so a preset
holds a tokenizer that keras-hub alone can load) and the tokenization of the original BERT code
by default: `normalization="bert"` tokenizes with `electra_tf.text.tokenization`'s in-graph
tokenizer built from that tokenizer's vocabulary and case settings, which gives the ids the
released checkpoints were trained with; `normalization="keras_hub"` uses keras-hub's tokenizer
as it is (NFKC case folding; the two differ on some non-ASCII text).

    preprocessor = ElectraTextClassifierPreprocessor.from_vocabulary("runs/small/vocab.txt")
    preprocessor(["a great film"])                       # one text per example
    preprocessor(x=(["a great film"], ["I liked it"]))   # pairs: x is a tuple (texts_a, texts_b)
    # -> {"input_ids", "input_mask", "segment_ids"}: int32 [batch, sequence_length]

It works eagerly and inside `tf.data` (`dataset.map(preprocessor)` over `x` or `(x, y)`
elements), and passes labels and sample weights through: `preprocessor(x, y)` -> `(features,
y)`. As every keras-hub preprocessor, it reads a bare tuple argument as `(x, y)` or `(x, y,
sample_weight)`, so a pair called directly goes in as `x=(texts_a, texts_b)` (or `((texts_a,
texts_b), labels)`).
"""

from __future__ import annotations

import keras
import keras_hub
import tensorflow as tf

from electra_tf.preprocessing.sentencepiece_tokenizer import ElectraSentencePieceTokenizer
from electra_tf.text.sentencepiece_vocab import make_sentencepiece_tokenizer
from electra_tf.text.tokenization import (NORMALIZATIONS, is_sentencepiece, load_vocabulary,
                                          make_tokenizer)

FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids")


def electra_tokenizer(vocabulary, lower_case=True, strip_accents=None):
    """keras-hub's `ElectraTokenizer` for a `vocab.txt` (path) or a list of tokens;
    `strip_accents` defaults to `lower_case`. A SentencePiece model (a path ending in ".model")
    gives an `ElectraSentencePieceTokenizer`, which normalizes by the model's own rule."""
    if isinstance(vocabulary, str) and is_sentencepiece(vocabulary):
        return ElectraSentencePieceTokenizer.from_model_file(vocabulary)
    if isinstance(vocabulary, str):
        vocabulary = load_vocabulary(vocabulary)
    strip_accents = lower_case if strip_accents is None else strip_accents
    return keras_hub.models.ElectraTokenizer(vocabulary=list(vocabulary), lowercase=lower_case,
                                             strip_accents=strip_accents)


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraTextClassifierPreprocessor(keras_hub.models.TextClassifierPreprocessor):
    """One text or a pair [batch] -> int32 `input_ids`, `input_mask`, `segment_ids`
    [batch, sequence_length], as `run_finetuning` featurizes classification examples.

    Args:
      tokenizer: a `keras_hub.models.ElectraTokenizer` (its vocabulary and `lowercase` /
        `strip_accents`) or, for a SentencePiece vocabulary, an `ElectraSentencePieceTokenizer`.
      sequence_length: the padded length (the fine-tuning recipe's `max_seq_length`).
      truncate: keras-hub's packer truncation; "round_robin" is the original's rule.
      normalization: "bert" (the original's ids, the default) or "keras_hub".
    """

    backbone_cls = keras_hub.models.ElectraBackbone
    tokenizer_cls = keras_hub.models.ElectraTokenizer

    def __init__(self, tokenizer, sequence_length=128, truncate="round_robin",
                 normalization="bert", **kwargs):
        super().__init__(tokenizer, sequence_length=sequence_length, truncate=truncate, **kwargs)
        if normalization not in NORMALIZATIONS:
            raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got "
                             f"{normalization!r}")
        self.normalization = normalization
        self._graph_tokenizer = None

    @classmethod
    def from_vocabulary(cls, vocabulary, lower_case=True, strip_accents=None, **kwargs):
        """A preprocessor for a `vocab.txt` (path) or a list of tokens; `lower_case` and
        `strip_accents` as the run's tokenizer (uncased by default, accents stripped when
        lower-casing, as BERT's uncased vocabularies). A SentencePiece model (a `.model` path)
        is taken too; its own normalization rule replaces these two settings."""
        return cls(electra_tokenizer(vocabulary, lower_case, strip_accents), **kwargs)

    def _token_ids(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """strings [batch] -> ragged int32 ids [batch, (tokens)]."""
        if isinstance(self.tokenizer, ElectraSentencePieceTokenizer):
            if self._graph_tokenizer is None:  # the ids `run_finetuning` featurizes with
                with tf.init_scope():
                    self._graph_tokenizer = make_sentencepiece_tokenizer(self.tokenizer.proto)
            return self._graph_tokenizer(texts)
        if self.normalization == "keras_hub":
            return tf.cast(self.tokenizer(texts), tf.int32)
        if self._graph_tokenizer is None:
            with tf.init_scope():  # eager tables: each tf.data map's graph captures the same
                self._graph_tokenizer = make_tokenizer(
                    self.tokenizer.get_vocabulary(), self.tokenizer.lowercase,
                    self.tokenizer.strip_accents)
        return self._graph_tokenizer.ragged(texts)

    def call(self, x, y=None, sample_weight=None):
        segments = x if isinstance(x, tuple) else (x,)  # keras-hub's rule: a tuple is a pair
        segments = tuple(tf.convert_to_tensor(s, tf.string) for s in segments)
        scalar = segments[0].shape.rank == 0
        segments = tuple(tf.reshape(s, [-1]) for s in segments)
        token_ids, segment_ids = self.packer(tuple(self._token_ids(s) for s in segments))
        features = {"input_ids": tf.cast(token_ids, tf.int32),
                    "input_mask": tf.cast(token_ids != self.tokenizer.pad_token_id, tf.int32),
                    "segment_ids": tf.cast(segment_ids, tf.int32)}
        if scalar:
            features = {name: value[0] for name, value in features.items()}
        return keras.utils.pack_x_y_sample_weight(features, y, sample_weight)

    def get_config(self):
        return {**super().get_config(), "normalization": self.normalization}
