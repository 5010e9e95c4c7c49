"""A SentencePiece model with ELECTRA's special pieces, as a keras-hub tokenizer.

`ElectraSentencePieceTokenizer` is what the preprocessors hold for a run whose vocabulary is a
SentencePiece model (`build_vocab --model_type sentencepiece`, or another project's model with
[PAD] [UNK] [CLS] [SEP] [MASK]): keras-hub's `SentencePieceTokenizer` with those pieces named as
its special tokens, so the packers find [CLS], [SEP] and [PAD], and a `.keras` file or a preset
stores the model itself (as keras-hub's tokenizer asset). The model's stored normalization rule
replaces the WordPiece options: there is no `lowercase` or `strip_accents` to set.

    tokenizer = ElectraSentencePieceTokenizer.from_model_file("runs/spm/data/spm.model")
    tokenizer(["a great film"])  # ragged int32 ids [batch, (pieces)]
"""

from __future__ import annotations

import keras
import keras_hub

from electra_tf.text.sentencepiece_vocab import load_sentencepiece


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraSentencePieceTokenizer(keras_hub.tokenizers.SentencePieceTokenizer):
    """Strings [batch] -> int32 ids [batch, (pieces)] of a SentencePiece model that holds
    [PAD] [UNK] [CLS] [SEP] [MASK]."""

    def __init__(self, proto=None, **kwargs):
        self._add_special_token("[CLS]", "cls_token")
        self._add_special_token("[SEP]", "sep_token")
        self._add_special_token("[PAD]", "pad_token")
        self._add_special_token("[MASK]", "mask_token")
        self._add_special_token("[UNK]", "unk_token")
        # the names keras-hub's packers read, as its other BERT-like tokenizers have them
        self._add_special_token("[CLS]", "start_token")
        self._add_special_token("[SEP]", "end_token")
        super().__init__(proto=proto, **kwargs)

    @classmethod
    def from_model_file(cls, path: str) -> "ElectraSentencePieceTokenizer":
        """The tokenizer of a `.model` file; a model without ELECTRA's special pieces is a
        `VocabularyError` naming the missing ones."""
        return cls(proto=load_sentencepiece(path)[0])
