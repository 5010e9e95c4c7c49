"""`ElectraMaskedLM`: keras-hub's `MaskedLM` for an `ElectraBackbone`, the ELECTRA generator as
a fill-mask model, with `ElectraMaskedLMPreprocessor`.

    import keras_hub
    import electra_tf.keras_hub_tasks  # registers the classes with keras-hub

    masked_lm = keras_hub.models.MaskedLM.from_preset("presets/small_generator")
    masked_lm.fill_mask(["the [MASK] sat on the mat"], top_k=3)
    # -> [[[("cat", 0.41), ("dog", 0.22), ("man", 0.05)]]]: per text, per [MASK]
    masked_lm.fit(x=["the cat sat on the mat", "a dog ran"], batch_size=2)  # masked at random

The head is the original's generator head (`run_pretraining.py`, `_get_masked_lm_output`;
`electra_tf`'s `make_generator_head`, a keras-hub `MaskedLMHead`): the final hidden states at
the masked positions -> dense to the embedding size E (which may exceed the generator's hidden
size, the backbone projecting E to it) with GELU (exact erf) -> LayerNorm (epsilon 1e-12) ->
logits through the backbone's token embedding table (tied) plus an output bias.
`to_keras_hub_masked_lm` converts a pretrainer's generator into one, its head's GELU that of our
model config; the backbone's is always keras-hub's tanh approximation.

As every keras-hub masked LM, `fit`, `evaluate` and `predict` on raw strings mask tokens at
random (`MaskedLMPreprocessor`); `fill_mask` predicts at the "[MASK]"s written in the text. The
preprocessor tokenizes with keras-hub's `ElectraTokenizer`, whose ids are the original's on
ordinary text (see `electra_tf.convert.keras_hub`).
"""

from __future__ import annotations

import keras
import keras_hub
import numpy as np
from absl import logging

from electra_tf.keras_hub_tasks.task_base import ElectraTaskMixin
from electra_tf.keras_hub_tasks.text_classifier import fit_preprocessor_to_backbone
from electra_tf.models.heads import make_generator_head
from electra_tf.preprocessing.text_classifier import electra_tokenizer

MASK = "[MASK]"


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraMaskedLMPreprocessor(keras_hub.models.MaskedLMPreprocessor):
    """Texts [batch] (or pairs) -> int `token_ids`, `padding_mask`, `segment_ids`
    [batch, sequence_length] with tokens masked at random and their `mask_positions`
    [batch, mask_selection_length], the original ids as labels and the weights of the real
    slots: keras-hub's masked-LM preprocessing over an `ElectraTokenizer`.

    Args: those of `keras_hub.models.MaskedLMPreprocessor` (`tokenizer`, `sequence_length`,
    `mask_selection_rate`, ...).
    """

    backbone_cls = keras_hub.models.ElectraBackbone
    tokenizer_cls = keras_hub.models.ElectraTokenizer

    @classmethod
    def from_vocabulary(cls, vocabulary, lower_case=True, strip_accents=None, **kwargs):
        """A preprocessor for a `vocab.txt` (path) or a list of tokens; `lower_case` and
        `strip_accents` as the run's tokenizer (uncased by default, accents stripped when
        lower-casing)."""
        return cls(electra_tokenizer(vocabulary, lower_case, strip_accents), **kwargs)

    def fill_mask_features(self, texts):
        """Texts (a list, or one string) with "[MASK]" where tokens are to be predicted -> the
        model's features, nothing masked at random: int32 `token_ids`, `padding_mask`,
        `segment_ids` [batch, sequence_length] (`[CLS] text [SEP]`, the text cut at the end) and
        `mask_positions` [batch, most [MASK]s left in a text], padded with 0."""
        texts = [texts] if isinstance(texts, str) else list(texts)
        tokenizer, length = self.tokenizer, self.sequence_length
        token_ids = np.full([len(texts), length], tokenizer.pad_token_id, np.int32)
        for row, text in enumerate(texts):
            pieces = []
            for index, part in enumerate(text.split(MASK)):
                pieces += [tokenizer.mask_token_id] if index else []
                pieces += np.asarray(tokenizer(part), np.int32).reshape(-1).tolist()
            ids = [tokenizer.start_token_id, *pieces[:length - 2], tokenizer.end_token_id]
            token_ids[row, :len(ids)] = ids
        where = [np.flatnonzero(row == tokenizer.mask_token_id) for row in token_ids]
        mask_positions = np.zeros([len(texts), max(map(len, where), default=0)], np.int32)
        for row, positions in enumerate(where):
            mask_positions[row, :len(positions)] = positions
        return {"token_ids": token_ids,
                "padding_mask": (token_ids != tokenizer.pad_token_id).astype(np.int32),
                "segment_ids": np.zeros_like(token_ids), "mask_positions": mask_positions}


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraMaskedLM(ElectraTaskMixin, keras_hub.models.MaskedLM):
    """An `ElectraBackbone` (a generator) under the original's generator head: int
    `token_ids`, `padding_mask`, `segment_ids` [batch, seq] and `mask_positions` [batch, N] ->
    logits [batch, N, vocab_size].

    Args:
      backbone: a `keras_hub.models.ElectraBackbone`.
      preprocessor: an `ElectraMaskedLMPreprocessor`, or None to call the model on features; a
        sequence_length above the backbone's positions is cut to them.
      intermediate_activation: of the head's dense layer: "gelu" (exact erf, the original's)
        or "gelu_approximate" (tanh, as the backbone's).
      head_trained: whether the masked-LM head holds trained weights (a generator's, from
        `to_keras_hub_masked_lm`, a task preset's, or after `fit`). keras-hub's
        `MaskedLM.from_preset` on a preset of a backbone alone (such as the discriminator's that
        `convert_checkpoint --to keras_hub` writes) builds a random head: `fill_mask` then warns
        that its answers are noise, and says how to write the generator's preset.
    """

    backbone_cls = keras_hub.models.ElectraBackbone
    preprocessor_cls = ElectraMaskedLMPreprocessor

    def __init__(self, backbone, preprocessor=None, intermediate_activation="gelu",
                 head_trained=False, **kwargs):
        # === Layers ===
        self.backbone = backbone
        self.leave_the_pooler_out(backbone)
        self.preprocessor = preprocessor
        fit_preprocessor_to_backbone(preprocessor, backbone)
        self.masked_lm_head = make_generator_head(
            backbone.token_embedding, intermediate_activation, dtype=backbone.dtype_policy,
            name="mlm_head")
        # === Functional model ===
        inputs = {**backbone.input,
                  "mask_positions": keras.Input(shape=(None,), dtype="int32",
                                                name="mask_positions")}
        sequence = backbone(backbone.input)["sequence_output"]
        outputs = self.masked_lm_head(sequence, inputs["mask_positions"])
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        # === Config ===
        self.intermediate_activation = intermediate_activation
        self.head_trained = head_trained

    def load_task_weights(self, filepath):
        super().load_task_weights(filepath)
        self.head_trained = True

    def fit(self, *args, **kwargs):
        history = super().fit(*args, **kwargs)
        self.head_trained = True
        return history

    def fill_mask(self, texts, top_k=5):
        """Texts with "[MASK]"s -> per text, per [MASK] (left to right; those cut with the text
        are left out), the `top_k` likeliest tokens of the vocabulary as (token, probability)
        pairs, best first."""
        if self.preprocessor is None:
            raise ValueError("fill_mask needs the preprocessor's tokenizer: build the model with "
                             "preprocessor=ElectraMaskedLMPreprocessor.from_vocabulary(...)")
        if not self.head_trained:
            logging.warning(
                "this ElectraMaskedLM's masked-LM head was never trained or loaded (a preset of "
                "a backbone alone, such as the discriminator's, has none): fill_mask's answers "
                "are noise. Write a pretraining run's generator as a MaskedLM preset: "
                "electra_tf.keras_hub_tasks.to_keras_hub_masked_lm(run_dir).save_to_preset(dir)")
        features = self.preprocessor.fill_mask_features(texts)
        logits = self(features, training=False)
        probabilities = keras.ops.convert_to_numpy(
            keras.ops.softmax(keras.ops.cast(logits, "float32")))
        vocabulary = self.preprocessor.tokenizer.get_vocabulary()
        counts = np.sum(features["token_ids"] == self.preprocessor.tokenizer.mask_token_id, -1)
        return [[[(vocabulary[i], float(slot[i]))
                  for i in np.argsort(-slot[:len(vocabulary)], kind="stable")[:top_k]]
                 for slot in slots[:count]]
                for slots, count in zip(probabilities, counts)]

    def get_config(self):
        return {**super().get_config(), "intermediate_activation": self.intermediate_activation,
                "head_trained": self.head_trained}
