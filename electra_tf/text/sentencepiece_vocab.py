"""SentencePiece vocabularies: learning one (unigram or BPE) and tokenizing with it in the graph.

`learn_sentencepiece(lines, vocab_size, output_file)` trains a model with the `sentencepiece`
library and writes its `.model` file: [PAD] [UNK] [CLS] [SEP] [MASK] are ids 0-4 ([PAD] and [UNK]
as SentencePiece's pad and unknown pieces, the other three as control symbols, which no text
ever tokenizes to: "[MASK]" in a text is spelled with ordinary pieces), no BOS/EOS pieces. The
text is normalized by SentencePiece's NFKC rule, case-folded when `lower_case` (the
"nmt_nfkc_cf" rule), and the rule is stored in the model, so every tokenizer of the model
normalizes the same way. The same lines give the same file, byte for byte.

`load_sentencepiece(path)` reads a model file (ours or another project's) and returns its bytes
and the special ids, which come from the model: a model without one of the five special pieces
is a `VocabularyError` naming every missing one.

`make_sentencepiece_tokenizer(model)` is tensorflow-text's `SentencepieceTokenizer` for graphs
(tf.data, tf.function, SavedModel signatures): strings [n] -> ragged int32 ids [n, (pieces)],
the ids the `sentencepiece` library gives.
"""

from __future__ import annotations

import io
import os
from typing import Iterable

import tensorflow as tf

from electra_tf.text.tokenization import SPECIAL_TOKENS, SpecialIds, VocabularyError

ALGORITHMS = ("unigram", "bpe")


def learn_sentencepiece(lines: Iterable[str], vocab_size: int, output_file: str, *,
                        algorithm: str = "unigram", lower_case: bool = True,
                        character_coverage: float = 0.9995,
                        max_sentence_length: int = 16384) -> int:
    """Trains a SentencePiece `algorithm` ("unigram" or "bpe") model of about `vocab_size`
    pieces, special pieces included, on `lines` (an iterable of strings, read once; empty lines
    are skipped) and writes it to `output_file`; returns its number of pieces. `vocab_size` is a
    target: a corpus too small for it gives fewer pieces. Characters outside the most frequent
    `character_coverage` of the text become [UNK] (SentencePiece's default 0.9995 suits
    languages with large character sets; 1.0 keeps every character); lines longer than
    `max_sentence_length` bytes are skipped by the trainer."""
    import sentencepiece

    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {', '.join(ALGORITHMS)}, got {algorithm!r}")
    if vocab_size <= len(SPECIAL_TOKENS):
        raise VocabularyError(f"vocab_size must exceed the {len(SPECIAL_TOKENS)} special "
                              f"pieces, got {vocab_size}")
    model = io.BytesIO()
    try:
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=(line for line in lines if line.strip()), model_writer=model,
            vocab_size=vocab_size, model_type=algorithm, hard_vocab_limit=False,
            character_coverage=character_coverage, max_sentence_length=max_sentence_length,
            normalization_rule_name="nmt_nfkc_cf" if lower_case else "nmt_nfkc",
            pad_id=0, pad_piece="[PAD]", unk_id=1, unk_piece="[UNK]", bos_id=-1, eos_id=-1,
            control_symbols=list(SPECIAL_TOKENS[2:]), minloglevel=2)
    except RuntimeError as e:  # the trainer's errors, e.g. no text at all
        raise VocabularyError(f"SentencePiece training failed: {e}") from None
    directory = os.path.dirname(output_file)
    if directory:  # as learn_vocabulary does for a vocab.txt
        tf.io.gfile.makedirs(directory)
    with tf.io.gfile.GFile(output_file, "wb") as f:
        f.write(model.getvalue())
    return sentencepiece.SentencePieceProcessor(model_proto=model.getvalue()).get_piece_size()


def load_sentencepiece(path: str) -> tuple[bytes, SpecialIds]:
    """(the model file's bytes, the ids of [PAD] [UNK] [CLS] [SEP] [MASK] in it)."""
    import sentencepiece

    if not tf.io.gfile.exists(path):
        raise VocabularyError(f"SentencePiece model not found: {path}")
    with tf.io.gfile.GFile(path, "rb") as f:
        model = f.read()
    try:
        processor = sentencepiece.SentencePieceProcessor(model_proto=model)
    except RuntimeError as e:
        raise VocabularyError(f"{path} is not a SentencePiece model: {e}") from None
    # piece_to_id answers the unknown id for a piece the model lacks: compare back.
    ids = {piece: processor.piece_to_id(piece) for piece in SPECIAL_TOKENS}
    missing = [piece for piece, i in ids.items() if processor.id_to_piece(i) != piece]
    if missing:
        raise VocabularyError(
            f"SentencePiece model {path} lacks the pieces {', '.join(missing)}: ELECTRA needs "
            f"{', '.join(SPECIAL_TOKENS)} (learn one with `python -m electra_tf.build_vocab "
            f"--model_type sentencepiece`, or train with pad_piece=[PAD], unk_piece=[UNK] and "
            f"control_symbols=[CLS],[SEP],[MASK])")
    return model, SpecialIds(*(ids[piece] for piece in SPECIAL_TOKENS))


def make_sentencepiece_tokenizer(model: bytes) -> "SentencePieceTokenizer":
    """The in-graph tokenizer of a SentencePiece model (the file's bytes)."""
    return SentencePieceTokenizer(model)


class SentencePieceTokenizer(tf.Module):
    """tensorflow-text's `SentencepieceTokenizer`, callable like the WordPiece tokenizer
    (`tokenization.make_tokenizer`): strings [n] -> ragged int32 ids [n, (pieces)], in a graph
    or eagerly. A tf.Module: attached to an object that a SavedModel saves, it stores the model
    in the SavedModel, so that a loaded signature tokenizes without the file."""

    def __init__(self, model: bytes):
        super().__init__(name="sentencepiece")
        self._model = model
        self._tokenizer = self._make()

    def _make(self):
        import tensorflow_text as tf_text

        return tf_text.SentencepieceTokenizer(model=self._model, out_type=tf.int32)

    def tokenize(self, texts):
        texts = tf.convert_to_tensor(texts, tf.string)
        try:
            return self._tokenizer.tokenize(texts)
        except tf.errors.NotFoundError:
            # keras.utils.set_random_seed and keras.backend.clear_session reset TensorFlow's
            # kernel cache, which deletes tensorflow-text's model resource; eagerly, make it
            # again (in a graph the resource is the graph's own)
            if not tf.executing_eagerly():
                raise
            self._tokenizer = self._make()
            return self._tokenizer.tokenize(texts)

    __call__ = tokenize

