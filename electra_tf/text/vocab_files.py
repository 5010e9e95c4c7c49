"""A vocabulary file of either kind, told apart by its name: a SentencePiece model ends in
".model"; anything else is a WordPiece vocab.txt (one token per line).

`load_tokens(path)` -> the tokens by id (a SentencePiece model's pieces); `load_special_ids(path)`
-> the ids of [PAD] [UNK] [CLS] [SEP] [MASK]; `make_file_tokenizer(path, ...)` -> the in-graph
tokenizer (strings [n] -> ragged int32 ids [n, (tokens)]). A SentencePiece model normalizes text
by the rule stored in it, so the WordPiece options (lower_case, strip_accents, normalization) do
not apply to it.
"""

from __future__ import annotations

from electra_tf.text import sentencepiece_vocab, tokenization
from electra_tf.text.tokenization import is_sentencepiece

__all__ = ["SENTENCEPIECE_WORD_START", "is_sentencepiece", "load_special_ids", "load_tokens",
           "make_file_tokenizer"]

SENTENCEPIECE_WORD_START = "\u2581"  # "▁", which begins every piece that starts a word


def load_tokens(path: str) -> list[str]:
    if not is_sentencepiece(path):
        return tokenization.load_vocabulary(path)
    import sentencepiece

    model, _ = sentencepiece_vocab.load_sentencepiece(path)
    processor = sentencepiece.SentencePieceProcessor(model_proto=model)
    return [processor.id_to_piece(i) for i in range(processor.get_piece_size())]


def load_special_ids(path: str):
    if is_sentencepiece(path):
        return sentencepiece_vocab.load_sentencepiece(path)[1]
    return tokenization.special_ids(tokenization.load_vocabulary(path), source=path)


def make_file_tokenizer(path: str, lower_case: bool = True, strip_accents: bool | None = None,
                        normalization: str = "bert"):
    if is_sentencepiece(path):
        return sentencepiece_vocab.make_sentencepiece_tokenizer(
            sentencepiece_vocab.load_sentencepiece(path)[0])
    return tokenization.make_tokenizer(tokenization.load_vocabulary(path), lower_case,
                                       strip_accents, normalization=normalization)
