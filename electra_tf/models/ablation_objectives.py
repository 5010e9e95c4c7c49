"""The paper's Table 5 MLM comparisons: a full-size masked LM in ELECTRA's discriminator's place.

Both objectives run ELECTRA's steps 1-3 (`pretrainer.py`): a small generator, trained jointly
with its own MLM loss, fills every chosen position with a sample. The full-size network then
reads these corrupted ids, where BERT reads [MASK]s, and predicts the original tokens:
- Replace MLM ("replace_mlm"): at the chosen positions only, with the usual MLM head. It is
  BERT's objective without the [MASK] token that fine-tuning never shows the network.
- All-Tokens MLM ("all_tokens_mlm"): at every non-pad position, through a copy mechanism. A
  sigmoid copy probability D per token mixes "the input token" and the MLM softmax,
      p(token) = D * onehot(input token) + (1 - D) * softmax(MLM logits),
  and the loss is -log p(original token). Like ELECTRA, it learns from every token.
loss = gen_weight * generator MLM + disc_weight * the full-size network's MLM (the recipes set
disc_weight 1), each a batch-global mean as in `pretrainer.py`.
"""

import keras
import tensorflow as tf

from electra_tf.models.cross_entropy import sparse_softmax_cross_entropy
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.heads import DiscriminatorHead, make_generator_head
from electra_tf.models.pretrainer import ElectraPretrainer


def copy_mixture_log_prob(mlm_logits, copy_logits, input_ids, target_ids):
    """log p(target) under p = D * onehot(input) + (1 - D) * softmax(mlm_logits).

    D = sigmoid(copy_logits). Computed in log space, so it stays finite for D near 0 or 1.

    Args:
      mlm_logits: float32 [..., V].
      copy_logits: float32 [...].
      input_ids, target_ids: int32 [...]: the token the network read, the one to predict.
    Returns:
      float32 [...].
    """
    log_softmax_at_target = -sparse_softmax_cross_entropy(target_ids, mlm_logits)
    log_generate = tf.math.log_sigmoid(-copy_logits) + log_softmax_at_target
    log_copy_or_generate = tf.reduce_logsumexp(
        tf.stack([tf.math.log_sigmoid(copy_logits), log_generate]), axis=0)
    return tf.where(tf.equal(input_ids, target_ids), log_copy_or_generate, log_generate)


def copy_mixture_prediction(mlm_logits, copy_logits, input_ids):
    """The most probable token [...] (int32) of the copy mixture above.

    Either the input token, whose probability is D + (1 - D) * softmax[input], or the softmax's
    best token; the mixture itself ([..., V]) is never built.
    """
    copy_prob = tf.sigmoid(copy_logits)
    softmax = tf.nn.softmax(mlm_logits)
    softmax_at_input = tf.gather(softmax, input_ids, batch_dims=len(input_ids.shape))
    input_prob = copy_prob + (1.0 - copy_prob) * softmax_at_input
    best_generated = tf.argmax(softmax, axis=-1, output_type=tf.int32)
    best_generated_prob = (1.0 - copy_prob) * tf.reduce_max(softmax, axis=-1)
    return tf.where(input_prob >= best_generated_prob, input_ids, best_generated)


@keras.saving.register_keras_serializable(package="electra_tf")
class CorruptedInputMlmPretrainer(ElectraPretrainer):
    """ELECTRA's generator and corruption, then a full-size masked LM reading the corrupted ids.

    For `objective.variant` "replace_mlm" and "all_tokens_mlm"; `models.build_pretrainer(...)`
    builds this class for them. The full-size network `mlm_encoder` is the one to fine-tune (`encoder`).
    Its variables are named `discriminator/...`, as the network in ELECTRA's discriminator's
    place, so run directories load for fine-tuning as ELECTRA's do. There is no "replaced" head
    (`discriminator` is None): an export gives the encoder's sequence output, as for the MLM
    baseline. Its MLM head, `mlm_predictions`, is the generator head's design at full size, tied
    to the shared word embeddings; All-Tokens MLM adds `copy_predictions`, one copy logit per token.

    Per-token outputs added to `generate_and_corrupt`'s, with NAME the variant: `NAME_xent`,
    `NAME_correct` and `NAME_weights` ([batch, N] at the masked slots for replace_mlm, [batch,
    seq] for all_tokens_mlm), and for all_tokens_mlm `all_tokens_mlm_logits` [batch, seq, V] and
    `copy_logits` [batch, seq].
    """

    def _build_discriminator(self):
        config = self.model_config
        self.mlm_encoder = ElectraEncoder.from_model_config(
            config, self.embeddings, dtype=self.dtype_policy, name="discriminator")
        self.mlm_head = make_generator_head(
            self.embeddings.word_embeddings, config.activation, config.layer_norm_epsilon,
            config.initializer_range, dtype=self.dtype_policy, name="mlm_predictions")
        self.copy_head = None
        if self.objective.variant == "all_tokens_mlm":
            # The RTD head's design (dense H->H with GELU, dense H->1); its logit is the copy logit.
            self.copy_head = DiscriminatorHead(
                config.hidden_size, config.activation, config.initializer_range,
                dtype=self.dtype_policy, name="copy_predictions")

    def _make_metrics(self):
        mean = keras.metrics.Mean
        name = self.objective.variant
        metrics = super()._make_metrics() + [
            mean(name=f"{name}_loss"), mean(name=f"{name}_accuracy")]
        if self.copy_head is not None:
            metrics.append(mean(name="copy_gate_mean"))  # D over the non-pad tokens
        return metrics

    @property
    def encoder(self):
        """The network to fine-tune: the full-size masked LM."""
        return self.mlm_encoder

    def compute_objective(self, batch, step, training=False):
        """ELECTRA's steps 1-3, then the full-size masked LM on the corrupted ids."""
        outputs = self.generate_and_corrupt(batch, step, training)
        corrupted_ids = outputs["corrupted_ids"]
        hidden = self.mlm_encoder(
            corrupted_ids, tf.cast(batch["input_mask"], tf.int32),
            tf.cast(batch["segment_ids"], tf.int32), training=training)
        name = self.objective.variant
        if self.copy_head is None:  # Replace MLM: the originals at the masked slots
            targets = tf.cast(batch["masked_lm_ids"], tf.int32)
            logits = self._mlm_logits(hidden, batch["masked_lm_positions"])
            outputs[f"{name}_xent"] = sparse_softmax_cross_entropy(targets, logits)
            predicted = tf.argmax(logits, axis=-1, output_type=tf.int32)
            weights = tf.cast(batch["masked_lm_weights"], tf.float32)
        else:  # All-Tokens MLM: every token, through the copy mechanism
            targets = outputs["original_ids"]
            every_position = tf.broadcast_to(tf.range(tf.shape(corrupted_ids)[1]),
                                             tf.shape(corrupted_ids))
            logits = self._mlm_logits(hidden, every_position)
            copy_logits = self.copy_head(hidden, training=training)
            outputs.update(all_tokens_mlm_logits=logits, copy_logits=copy_logits)
            outputs[f"{name}_xent"] = -copy_mixture_log_prob(
                logits, copy_logits, corrupted_ids, targets)
            predicted = copy_mixture_prediction(  # for the accuracy: no gradient
                tf.stop_gradient(logits), tf.stop_gradient(copy_logits), corrupted_ids)
            weights = tf.cast(batch["input_mask"], tf.float32)
        outputs[f"{name}_correct"] = tf.cast(tf.equal(predicted, targets), tf.float32)
        outputs[f"{name}_weights"] = weights
        return outputs

    def _mlm_logits(self, hidden, positions):
        """float32 logits [batch, P, V] of the full-size MLM head at `positions` [batch, P]."""
        return tf.cast(self.mlm_head(hidden, mask_positions=tf.cast(positions, tf.int32)),
                       tf.float32)

    def loss_terms(self, batch):
        name = self.objective.variant
        terms = super().loss_terms(batch)
        key = "masked_lm_weights" if self.copy_head is None else "input_mask"  # as in the outputs
        terms[name] = (self.objective.disc_weight, f"{name}_xent", tf.cast(batch[key], tf.float32))
        return terms

    def update_metric_states(self, by_name, batch, outputs):
        super().update_metric_states(by_name, batch, outputs)
        name = self.objective.variant
        weights = outputs[f"{name}_weights"]
        by_name[f"{name}_accuracy"].update_state(outputs[f"{name}_correct"], sample_weight=weights)
        if self.copy_head is not None:
            by_name["copy_gate_mean"].update_state(tf.sigmoid(outputs["copy_logits"]),
                                                   sample_weight=weights)
