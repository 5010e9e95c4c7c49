"""ELECTRA's replaced-token-detection objective, top to bottom, as a Keras model.

One training step (google-research/electra `run_pretraining.py`):
  1. The generator reads the masked ids; MLM logits are computed only at the masked positions.
  2. One token per masked slot is sampled from the generator, without gradient.
  3. Corrupted ids = the originals with the samples at every chosen position (including the 15%
     the generator saw unmasked). Label = "replaced" iff the sample differs from the original.
  4. The discriminator reads the corrupted ids and predicts one "replaced" logit per token.
  5. loss = gen_weight * MLM + disc_weight * RTD, each a mean over the whole global batch:
     MLM over the weighted masked slots, RTD over every non-pad token ([CLS] and [SEP] included;
     the chosen positions only for the "electra_15" variant).

Under a tf.distribute strategy each replica holds part of the global batch. The loss denominators
are summed across replicas, so each replica's loss is its share of the global mean and the
replicas' gradients sum to exactly the one-device gradient. Sampling noise is generated for the
global batch from a stateless seed (objective seed, optimizer step) and sliced per replica, so a
run is reproducible and does not depend on the number of replicas. With gradient accumulation
(`gradient_accumulation_steps` k) each replica's batch runs as k micro-batches; the denominators
(from the batch alone: `loss_terms`) and the noise are the whole batch's, computed before them,
so the update is the same (`train_step`).

Variants (`objective.variant`, the paper's Table 5 comparisons): "electra_15" computes the RTD
loss over the chosen positions only (step 5); "replace_mlm" and "all_tokens_mlm" put a full-size
masked LM in the discriminator's place (`ablation_objectives.py`; build every pretrainer with
`pretrainer_factory.build_pretrainer`, which picks that subclass for them). With
`electra_objective=False` the model is the paper's MLM baseline: one full-size network with the masked-LM head, trained on the same masked data. With
`uniform_generator` there is no generator network: samples are uniform over the vocabulary.
"""

import dataclasses

import keras
import tensorflow as tf

from electra_tf import presets
from electra_tf.config import ModelConfig, ObjectiveConfig
from electra_tf.models.accumulation import accumulated_gradients
from electra_tf.models.cross_entropy import sparse_softmax_cross_entropy
from electra_tf.models.embeddings import GdesEmbeddings
from electra_tf.models.encoder import ElectraEncoder, make_embeddings
from electra_tf.models.heads import DiscriminatorHead, make_generator_head
from electra_tf.models.replicated import ReplicatedModel, cross_replica_sum
from electra_tf.models.sampling import sample_token_ids

BATCH_KEYS = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids",
              "masked_lm_weights")
NOISE_KEY = "sampling_noise"  # train_step's uniform noise [batch, N], cut with the batch


def chosen_slots(positions, weights, seq_length):
    """int32 [batch, N, seq]: one-hot of each masked slot's position, zero for padding slots
    (weight 0)."""
    chosen = tf.one_hot(tf.cast(positions, tf.int32), seq_length, dtype=tf.int32)
    return chosen * tf.cast(tf.cast(weights, tf.float32) > 0, tf.int32)[:, :, None]


def _replica_position():
    """(index of this replica, number of replicas in sync)."""
    context = tf.distribute.get_replica_context()
    if context is None:
        return 0, 1
    return context.replica_id_in_sync_group, context.num_replicas_in_sync


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraPretrainer(ReplicatedModel):
    """Generator + discriminator sharing their embeddings, trained jointly with `model.fit`.

    Batches are dicts of int tensors with static shapes: `input_ids` (with [MASK]s),
    `input_mask`, `segment_ids` [batch, seq]; `masked_lm_positions`, `masked_lm_ids` (the
    original ids) and float `masked_lm_weights` [batch, N] (see `electra_tf.pretraining_data.masking`).
    Calling the model returns the objective's per-token tensors (`compute_objective`), e.g.
    `disc_logits` [batch, seq]; `encoder` is the network to fine-tune.

    Args:
      model_config: sizes of the discriminator and generator, an `electra_tf.config.ModelConfig`
        (default: its defaults).
      objective: the objective, an `electra_tf.config.ObjectiveConfig` (default: ELECTRA's);
        its `variant` "replace_mlm" or "all_tokens_mlm" builds a `CorruptedInputMlmPretrainer`.
      **kwargs: `keras.Model` arguments (`name`, `dtype`, ...).

    Example:

    ```python
    from electra_tf.config import ModelConfig, ObjectiveConfig

    config = ModelConfig(vocab_size=200, embedding_size=16, hidden_size=32, num_layers=2,
                         num_heads=2, intermediate_size=64, max_position_embeddings=32)
    model = ElectraPretrainer(config, ObjectiveConfig())
    model.compile(optimizer=keras.optimizers.Adam(1e-4))
    # model.fit(masked_batches)  # see electra_tf.pretraining_data.builder / electra_tf.pretrain
    model = ElectraPretrainer.from_preset("runs/small")  # a run or converted directory
    ```
    """

    def __init__(self, model_config=None, objective=None, **kwargs):
        super().__init__(**kwargs)
        self.model_config = model_config or ModelConfig()
        self.objective = objective or ObjectiveConfig()
        self.objective.validate()  # the variant decides which networks to build
        if type(self) is ElectraPretrainer and self.objective.variant in (
                "replace_mlm", "all_tokens_mlm"):
            raise ValueError(f"objective.variant {self.objective.variant!r} trains a "
                             "CorruptedInputMlmPretrainer: build it with "
                             "electra_tf.models.build_pretrainer(model_config, objective)")
        config = self.model_config
        self.embeddings = make_embeddings(config, dtype=self.dtype_policy, name="embeddings")
        self.generator = self.generator_head = None
        self.discriminator = self.discriminator_head = None
        if self.objective.electra_objective:
            generator_config = config.generator_config()
            if not self.objective.uniform_generator:  # uniform: the original builds no generator
                generator_embeddings = self.embeddings
                if config.generator_embeddings_untied:
                    generator_embeddings = make_embeddings(
                        generator_config, dtype=self.dtype_policy, name="generator_embeddings")
                self.generator = ElectraEncoder.from_model_config(
                    generator_config, generator_embeddings, dtype=self.dtype_policy,
                    name="generator")
            self._build_discriminator()
        else:
            generator_config = config
            self.generator = ElectraEncoder.from_model_config(
                config, self.embeddings, dtype=self.dtype_policy, name="generator")
        if self.generator is not None:
            self.generator_head = make_generator_head(
                self.generator.embeddings.word_embeddings, generator_config.activation,
                generator_config.layer_norm_epsilon, generator_config.initializer_range,
                dtype=self.dtype_policy, name="generator_predictions")
        self.tracked_metrics = self._make_metrics()
        self._build_with_dummy_batch()

    def _build_discriminator(self):
        """The full-size network that reads the corrupted ids, and its "replaced" head."""
        config = self.model_config
        embeddings = self.embeddings
        if config.embedding_sharing == "gdes":
            if self.generator is None:
                raise ValueError("model.embedding_sharing gdes shares the generator's word "
                                 "table: it needs a generator network (not "
                                 "objective.uniform_generator)")
            embeddings = GdesEmbeddings(self.embeddings, dtype=self.dtype_policy,
                                        name="discriminator_embeddings")
        self.discriminator = ElectraEncoder.from_model_config(
            config, embeddings, dtype=self.dtype_policy, name="discriminator")
        self.discriminator_head = DiscriminatorHead(
            config.hidden_size, config.activation, config.initializer_range,
            dtype=self.dtype_policy, name="discriminator_predictions")

    def _make_metrics(self):
        mean = keras.metrics.Mean
        metrics = [mean(name="loss")]
        if self.generator is not None:
            metrics += [mean(name="mlm_loss"), mean(name="mlm_accuracy")]
        if self.objective.electra_objective:
            metrics.append(mean(name="sampled_accuracy"))
        if self.discriminator is not None:
            metrics += [
                mean(name="disc_loss"), mean(name="disc_accuracy"),
                keras.metrics.Precision(thresholds=0.5, name="disc_precision"),
                keras.metrics.Recall(thresholds=0.5, name="disc_recall"),
                keras.metrics.AUC(name="disc_auc"),
            ]
        return metrics

    @property
    def encoder(self):
        """The network to fine-tune: the discriminator (the generator for the MLM baseline)."""
        return self.discriminator if self.discriminator is not None else self.generator

    @property
    def metrics(self):
        return self.tracked_metrics

    # ---- the networks -------------------------------------------------------------------------

    def generator_logits(self, input_ids, input_mask, segment_ids, positions, training=False):
        """MLM logits [batch, N, V] at `positions` [batch, N] only, in the compute dtype (the
        cross-entropy and sampling kernels compute in float32 inside: a cast here would be one
        more pass over the logits each way)."""
        hidden = self.generator(input_ids, input_mask, segment_ids, training=training)
        return self.generator_head(hidden, mask_positions=positions)

    def discriminator_logits(self, input_ids, input_mask, segment_ids, training=False):
        """float32 "replaced" logits [batch, seq]."""
        hidden = self.discriminator(input_ids, input_mask, segment_ids, training=training)
        return self.discriminator_head(hidden, training=training)

    # ---- the objective ------------------------------------------------------------------------

    def compute_objective(self, batch, step, training=False):
        """Runs steps 1-4 on this replica's batch; returns a dict of per-token tensors."""
        outputs = self.generate_and_corrupt(batch, step, training)
        if not self.objective.electra_objective:
            return outputs

        # 4. Discriminator: is each token replaced?
        input_mask = tf.cast(batch["input_mask"], tf.int32)
        segment_ids = tf.cast(batch["segment_ids"], tf.int32)
        disc_logits = self.discriminator_logits(
            outputs["corrupted_ids"], input_mask, segment_ids, training)
        outputs.update(
            disc_logits=disc_logits,
            disc_xent=tf.nn.sigmoid_cross_entropy_with_logits(
                labels=outputs["disc_labels"], logits=disc_logits),
        )
        return outputs

    def generate_and_corrupt(self, batch, step, training=False):
        """Steps 1-3. Returns the generator's `mlm_logits` [batch, N, V], `mlm_xent` and
        `mlm_correct` [batch, N] (when there is a generator) and, for the ELECTRA objectives,
        `sampled_ids`, `sampled_correct` [batch, N], `original_ids`, `corrupted_ids` (int) and
        `disc_labels`, `is_chosen` (float 0/1) [batch, seq]."""
        masked_ids = tf.cast(batch["input_ids"], tf.int32)
        input_mask = tf.cast(batch["input_mask"], tf.int32)
        segment_ids = tf.cast(batch["segment_ids"], tf.int32)
        positions = tf.cast(batch["masked_lm_positions"], tf.int32)
        original_at_positions = tf.cast(batch["masked_lm_ids"], tf.int32)
        weights = tf.cast(batch["masked_lm_weights"], tf.float32)

        # 1. Generator: a masked-LM only at the masked positions.
        outputs = {}
        if self.generator is None:  # uniform_generator: equal logits, nothing to learn
            mlm_logits = tf.zeros(
                [tf.shape(positions)[0], tf.shape(positions)[1], self.model_config.vocab_size])
        else:
            mlm_logits = self.generator_logits(
                masked_ids, input_mask, segment_ids, positions, training)
            xent, correct = sparse_softmax_cross_entropy(
                original_at_positions, mlm_logits, return_correct=True)
            outputs = {
                "mlm_logits": tf.cast(mlm_logits, tf.float32),  # pruned from a step not using it
                "mlm_xent": xent,
                "mlm_correct": correct,  # the label has the highest logit (argmax, ties aside)
            }
        if not self.objective.electra_objective:
            return outputs

        # 2. Sample a replacement for every masked slot; no gradient flows through the sample.
        noise = batch.get(NOISE_KEY)
        if noise is None:
            noise = self.sampling_noise(batch, step)
        sampled = self._sample(tf.stop_gradient(mlm_logits), original_at_positions, noise)

        # 3. Corrupt the originals at every chosen position; label what actually changed.
        chosen = chosen_slots(positions, weights, tf.shape(masked_ids)[1])  # [batch, N, seq]
        is_chosen = tf.reduce_max(chosen, axis=1) > 0  # [batch, seq]
        original_ids = tf.where(
            is_chosen, tf.reduce_sum(chosen * original_at_positions[:, :, None], axis=1), masked_ids)
        corrupted_ids = tf.where(
            is_chosen, tf.reduce_sum(chosen * sampled[:, :, None], axis=1), masked_ids)
        outputs.update(
            sampled_ids=sampled,
            sampled_correct=tf.cast(tf.equal(sampled, original_at_positions), tf.float32),
            original_ids=original_ids,
            corrupted_ids=corrupted_ids,
            disc_labels=tf.cast(tf.not_equal(corrupted_ids, original_ids), tf.float32),
            is_chosen=tf.cast(is_chosen, tf.float32),
        )
        return outputs

    def sampling_noise(self, batch, step):
        """This replica's rows [batch, N] of the global batch's uniform noise, keyed by
        (objective seed, step): the same samples whatever the number of replicas."""
        replica, num_replicas = _replica_position()
        shape = tf.shape(batch["masked_lm_positions"])
        batch_size, num_slots = shape[0], shape[1]
        seed = tf.stack([tf.constant(self.objective.seed, tf.int64), tf.cast(step, tf.int64)])
        uniform = tf.random.stateless_uniform([num_replicas * batch_size, num_slots], seed=seed)
        return tf.slice(uniform, [replica * batch_size, 0], [batch_size, num_slots])

    def _sample(self, mlm_logits, original_ids, noise):
        """Draws ids [batch, N] from softmax(logits / temperature) with uniform `noise`."""
        return sample_token_ids(
            mlm_logits, noise, self.objective.temperature,
            excluded_ids=original_ids if self.objective.disallow_correct else None)

    def loss_terms(self, batch):
        """{name: (weight, key of the per-token loss in the outputs, per-token weights)}: the
        loss is the sum over names of weight * (the batch-global weighted mean of the per-token
        loss). The token weights come from the batch alone, so a mean's denominator is known
        before any network runs."""
        terms = {}
        if self.generator is not None:
            terms["mlm"] = (self.objective.gen_weight, "mlm_xent",
                            tf.cast(batch["masked_lm_weights"], tf.float32))
        if self.discriminator is not None:
            if self.objective.variant == "electra_15":  # the chosen positions only
                chosen = chosen_slots(batch["masked_lm_positions"], batch["masked_lm_weights"],
                                      tf.shape(batch["input_ids"])[1])
                token_weights = tf.cast(tf.reduce_max(chosen, axis=1) > 0, tf.float32)
            else:  # every non-pad token
                token_weights = tf.cast(batch["input_mask"], tf.float32)
            terms["disc"] = (self.objective.disc_weight, "disc_xent", token_weights)
        return terms

    def loss_denominators(self, batch):
        """{term: the sum of its token weights over the global batch (all replicas)}."""
        names, sums = zip(*((name, tf.reduce_sum(token_weights))
                            for name, (_, _, token_weights) in self.loss_terms(batch).items()))
        return dict(zip(names, tf.unstack(cross_replica_sum(tf.stack(sums)))))

    def compute_losses(self, batch, outputs, denominators=None):
        """Step 5. Returns this replica's differentiable share of the loss ("loss_share", and
        of each term, "<term>_share") and its weighted sum of each term ("<term>_sum", no
        gradient); and, when `denominators` is None (a whole batch, not a micro-batch of a
        larger one whose `loss_denominators` are given), the global means to report ("loss",
        "<term>_loss")."""
        whole_batch = denominators is None
        if whole_batch:
            denominators = self.loss_denominators(batch)
        losses = {"loss_share": 0.0}
        for name, (weight, key, token_weights) in self.loss_terms(batch).items():
            local_sum = tf.reduce_sum(outputs[key] * token_weights)
            losses[f"{name}_share"] = local_sum / (denominators[name] + 1e-6)
            losses["loss_share"] += weight * losses[f"{name}_share"]
            losses[f"{name}_sum"] = tf.stop_gradient(local_sum)
        if whole_batch:
            losses.update(self.global_losses(batch, losses, denominators))
        return losses

    def global_losses(self, batch, sums, denominators):
        """{"loss", "<term>_loss"}: the global means over `batch` from this replica's
        "<term>_sum"s (summed over its micro-batches) and the batch's `denominators`."""
        terms = self.loss_terms(batch)
        totals = tf.unstack(cross_replica_sum(tf.stack([sums[f"{name}_sum"] for name in terms])))
        losses = {"loss": 0.0}
        for (name, (weight, _, _)), total in zip(terms.items(), totals):
            losses[f"{name}_loss"] = total / (denominators[name] + 1e-6)
            losses["loss"] += weight * losses[f"{name}_loss"]
        return losses

    # ---- Keras hooks --------------------------------------------------------------------------

    def call(self, inputs, training=False):
        """The objective's tensors for a batch, sampling keyed by step 0."""
        return self.compute_objective(inputs, step=0, training=training)

    def train_step(self, data):
        """One optimizer update from this replica's batch, in `gradient_accumulation_steps`
        micro-batches (rows / `micro_batch_rows` of them for a growing batch; `accumulation.py`):
        the sampling noise and the loss denominators are the whole batch's, so k micro-batches
        update exactly as the batch at once."""
        batch, _, _ = keras.utils.unpack_x_y_sample_weight(data)
        step = self.optimizer.iterations
        if self.objective.electra_objective:
            batch = {**batch, NOISE_KEY: self.sampling_noise(batch, step)}
        denominators = self.loss_denominators(batch)
        by_name = {m.name: m for m in self.tracked_metrics}

        def micro_batch_loss(micro_batch):
            outputs = self.compute_objective(micro_batch, step, training=True)
            losses = self.compute_losses(micro_batch, outputs, denominators)
            self.update_metric_states(by_name, micro_batch, outputs)
            sums = {key: value for key, value in losses.items() if key.endswith("_sum")}
            return self.optimizer.scale_loss(losses["loss_share"]), sums

        variables = self.trainable_variables
        micro_batches = self.micro_batches_of(tf.shape(batch["input_ids"])[0])
        gradients, sums = accumulated_gradients(micro_batch_loss, batch, micro_batches,
                                                variables, self.parallel_chains)
        self.optimizer.apply(gradients, variables)
        return self._finish_step(by_name, self.global_losses(batch, sums, denominators))

    def test_step(self, data):
        batch, _, _ = keras.utils.unpack_x_y_sample_weight(data)
        # Evaluation noise is keyed by the batch's content: deterministic, different per batch.
        step = -1 - tf.reduce_sum(tf.cast(batch["input_ids"], tf.int64))
        outputs = self.compute_objective(batch, step, training=False)
        by_name = {m.name: m for m in self.tracked_metrics}
        self.update_metric_states(by_name, batch, outputs)
        return self._finish_step(by_name, self.compute_losses(batch, outputs))

    def _finish_step(self, by_name, losses):
        """Updates the loss metrics ("loss", "<term>_loss") with the step's global means and
        returns the logs."""
        for name, value in losses.items():
            if name in by_name:
                by_name[name].update_state(value)
        return self.logged({m.name: m.result() for m in self.tracked_metrics})

    def update_metric_states(self, by_name, batch, outputs):
        """Updates the per-token metrics `by_name` (those of `_make_metrics` but the losses)
        with one (micro-)batch's tensors."""
        weights = tf.cast(batch["masked_lm_weights"], tf.float32)
        if self.generator is not None:
            by_name["mlm_accuracy"].update_state(outputs["mlm_correct"], sample_weight=weights)
        if self.objective.electra_objective:
            by_name["sampled_accuracy"].update_state(outputs["sampled_correct"], sample_weight=weights)
        if self.discriminator is not None:
            # Detection over every non-pad token, also for electra_15 (whose loss covers the
            # chosen positions only), so that the variants' numbers compare.
            token_mask = tf.cast(batch["input_mask"], tf.float32)
            labels, logits = outputs["disc_labels"], outputs["disc_logits"]
            probs = tf.sigmoid(logits)
            by_name["disc_accuracy"].update_state(
                tf.cast(tf.equal(tf.cast(logits > 0, tf.float32), labels), tf.float32),
                sample_weight=token_mask)
            for name in ("disc_precision", "disc_recall", "disc_auc"):
                by_name[name].update_state(labels, probs, sample_weight=token_mask)

    def _build_with_dummy_batch(self):
        """Creates every variable now: `fit` refuses a subclassed model with unbuilt sublayers."""
        length, slots = 8, 2
        self.embeddings.build()  # first, so the shared variables are named embeddings/..., not generator/...
        if self.discriminator is not None and self.discriminator.embeddings is not self.embeddings:
            self.discriminator.embeddings.build()  # GDES: discriminator_embeddings/residual_...
        dummy = {key: tf.zeros([1, length], tf.int32) for key in BATCH_KEYS[:3]}
        dummy["input_mask"] = tf.ones([1, length], tf.int32)
        dummy.update(masked_lm_positions=tf.constant([[1, 2]]),
                     masked_lm_ids=tf.zeros([1, slots], tf.int32),
                     masked_lm_weights=tf.ones([1, slots], tf.float32))
        self.compute_objective(dummy, step=0, training=False)
        self.built = True

    def get_config(self):
        return {**super().get_config(), "model_config": dataclasses.asdict(self.model_config),
                "objective": dataclasses.asdict(self.objective)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(ModelConfig(**config.pop("model_config")),
                   ObjectiveConfig(**config.pop("objective")), **config)

    @classmethod
    def from_preset(cls, path, **kwargs):
        """The pretrainer of a directory, weights loaded, in one call
        (`electra_tf.loading.load_pretrainer`): a run directory of `run_pretraining` or an
        output of `convert_checkpoint --to electra_tf` (config.yaml + checkpoints/, the newest
        checkpoint; or a checkpoint prefix inside checkpoints/), or a keras-hub
        `ElectraBackbone` preset (its weights in the discriminator; generator and heads fresh).
        `kwargs` go to the constructor (`name`, `dtype`)."""
        return presets.load_preset(cls, path, **kwargs)
