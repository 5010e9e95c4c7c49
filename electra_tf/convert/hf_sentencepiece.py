"""A Hugging Face fast tokenizer (`tokenizer.json`) for a SentencePiece model of this project.

Hugging Face's `ElectraTokenizer` is WordPiece only, so a model pretrained with a SentencePiece
vocabulary is written with a `PreTrainedTokenizerFast` that `AutoTokenizer.from_pretrained`
loads: the same pieces and scores as a `tokenizers` Unigram model (or, for a BPE model, BPE
with the merges its pieces imply), SentencePiece's own normalization (the model's precompiled
character map, then its whitespace rule: strip, collapse runs of spaces), "▁" word starts, and
`[CLS] a [SEP]` / `[CLS] a [SEP] b [SEP]` with token type ids 0 and 1. Its ids equal the
`sentencepiece` library's (tests/convert/test_hf_sentencepiece.py), except that Hugging Face
reads a literal "[MASK]" (or another special token) in a text as that token, where
SentencePiece spells it out.
"""

from __future__ import annotations

import json
import os
import shutil

from electra_tf.convert.hf import ConversionError

TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"


def write_hf_sentencepiece_tokenizer(model_path: str, directory: str,
                                     model_max_length: int) -> None:
    """Writes tokenizer.json, tokenizer_config.json and a copy of the model file (under its own
    name) into `directory`, a Hugging Face model directory."""
    # lazy: SentencePiece's protobuf and tokenizers load only for such a conversion
    from sentencepiece import sentencepiece_model_pb2
    from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors

    from electra_tf.text.sentencepiece_vocab import load_sentencepiece
    from electra_tf.text.tokenization import SPECIAL_TOKENS

    model_bytes, ids = load_sentencepiece(model_path)  # checks the special pieces
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(model_bytes)
    pieces = [(piece.piece, piece.score) for piece in proto.pieces]
    tokenizer = Tokenizer(_model(pieces, proto.trainer_spec.model_type, ids.unk))
    tokenizer.normalizer = normalizers.Sequence([
        normalizers.Precompiled(proto.normalizer_spec.precompiled_charsmap),
        normalizers.Strip(), normalizers.Replace(Regex(" {2,}"), " ")])
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581",
                                                       prepend_scheme="always")
    tokenizer.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always")
    cls, sep = SPECIAL_TOKENS[2], SPECIAL_TOKENS[3]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{cls} $A {sep}", pair=f"{cls} $A {sep} $B:1 {sep}:1",
        special_tokens=[(cls, ids.cls), (sep, ids.sep)])
    tokenizer.add_special_tokens(list(SPECIAL_TOKENS))  # already pieces: ids unchanged
    tokenizer.save(os.path.join(directory, TOKENIZER_FILE))
    names = ("pad_token", "unk_token", "cls_token", "sep_token", "mask_token")
    with open(os.path.join(directory, TOKENIZER_CONFIG), "w", encoding="utf-8") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast",
                   "model_max_length": model_max_length, **dict(zip(names, SPECIAL_TOKENS)),
                   # what ElectraTokenizer returns, token type ids included
                   "model_input_names": ["input_ids", "token_type_ids", "attention_mask"]},
                  f, indent=2)
    copy = os.path.join(directory, os.path.basename(model_path))
    if not (os.path.exists(copy) and os.path.samefile(model_path, copy)):
        shutil.copyfile(model_path, copy)


def _model(pieces, model_type, unk_id):
    """The tokenizers model of SentencePiece `pieces` [(piece, score)] by id."""
    # lazy: as above
    from sentencepiece import sentencepiece_model_pb2
    from tokenizers import models

    spec = sentencepiece_model_pb2.TrainerSpec
    if model_type == spec.UNIGRAM:
        return models.Unigram(pieces, unk_id=unk_id, byte_fallback=False)
    if model_type != spec.BPE:
        raise ConversionError(f"a SentencePiece model of type {spec.ModelType.Name(model_type)} "
                              f"has no Hugging Face tokenizer here: unigram and BPE models do")
    # SentencePiece's BPE merges the pair whose merged piece scores highest; a piece's merges
    # are its splits into two pieces of the vocabulary (as transformers' converter derives them).
    vocab = {piece: i for i, (piece, _) in enumerate(pieces)}
    merges = []
    for piece, score in sorted(pieces, key=lambda item: -item[1]):
        splits = sorted(((piece[:k], piece[k:]) for k in range(1, len(piece))
                         if piece[:k] in vocab and piece[k:] in vocab),
                        key=lambda pair: (vocab[pair[0]], vocab[pair[1]]))
        merges += [(left, right, score) for left, right in splits]
    merges.sort(key=lambda merge: -merge[2])
    return models.BPE(vocab, [(left, right) for left, right, _ in merges],
                      unk_token=pieces[unk_id][0], fuse_unk=True)
