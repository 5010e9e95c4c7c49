"""The fine-tuning model: the discriminator's encoder under a task head, trained as the original.

The original (`run_finetuning.py`) sums the per-example losses over the batch; a mean is an
option. Under a tf.distribute strategy each replica differentiates its share of the global loss
(its local sum, or its local sum over the global count for the mean), so the replicas' gradients
add up to the one-device gradient and the optimizer clips the summed gradient (see
`electra_tf.training.optimizer`).
"""

import dataclasses

import keras
import tensorflow as tf

from electra_tf import presets
from electra_tf.config import ModelConfig
from electra_tf.models import raw_text
from electra_tf.models.accumulation import accumulated_gradients
from electra_tf.models.encoder import ElectraEncoder, make_embeddings
from electra_tf.models.replicated import ReplicatedModel, cross_replica_sum

INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")
LOSS_REDUCTIONS = ("sum", "mean")
TASK_HEAD_SCOPE = "task_specific"  # the layer name of every task head (layer-wise LR decay: depth n + 2)


class TaskModel(ReplicatedModel):
    """Embeddings + encoder (named as in the pretrainer, so its checkpoints restore by path) and
    a task head that a subclass adds under the layer name `task_specific`.

    Inputs are dicts of int tensors `input_ids`, `input_mask`, `segment_ids` [batch, seq];
    labels are whatever the subclass's `per_example_loss` takes. Subclasses implement
    `call(inputs, training)` and `per_example_loss(labels, outputs) -> float32 [batch]`, and may
    add metrics in `update_task_metrics`. `preprocessor_cls` is the class of preprocessor that
    turns raw text into the subclass's features.
    """

    preprocessor_cls = None

    def __init__(self, model_config=None, loss_reduction="sum", preprocessor=None, **kwargs):
        super().__init__(**kwargs)
        self.preprocessor = preprocessor
        if loss_reduction not in LOSS_REDUCTIONS:
            raise ValueError(f"loss_reduction must be one of {LOSS_REDUCTIONS}, got {loss_reduction!r}")
        self.model_config = model_config or ModelConfig()
        self.loss_reduction = loss_reduction
        self.embeddings = make_embeddings(self.model_config, dtype=self.dtype_policy, name="embeddings")
        self.encoder = ElectraEncoder.from_model_config(
            self.model_config, self.embeddings, dtype=self.dtype_policy, name="discriminator")
        self.loss_tracker = keras.metrics.Mean(name="loss")
        if preprocessor is not None:
            raw_text.check_fits(preprocessor, self.model_config, type(self).__name__)

    def encode(self, inputs, training=False, output_rows=None):
        """The encoder's sequence output [batch, seq, hidden]; its first `output_rows`
        positions [batch, output_rows, hidden] if given (`ElectraEncoder.call`)."""
        input_ids, input_mask, segment_ids = (tf.cast(inputs[name], tf.int32) for name in INPUT_NAMES)
        return self.encoder(input_ids, input_mask, segment_ids, training=training,
                            output_rows=output_rows)

    def per_example_loss(self, labels, outputs):
        raise NotImplementedError

    def check_labels(self, labels) -> None:
        """Raises ValueError for labels [n] the head cannot train on (a subclass's rule)."""

    # ---- raw strings: through the preprocessor (raw_text.py) ---------------------------------

    def fit(self, x=None, y=None, batch_size=None, sample_weight=None, validation_data=None,
            shuffle=True, **kwargs):
        if raw_text.holds_strings(x):
            x = raw_text.as_dataset(self, x, y, sample_weight, batch_size, shuffle)
            y = sample_weight = batch_size = None
            shuffle = False  # as_dataset shuffled it; Keras does not shuffle a dataset
        if validation_data is not None and raw_text.holds_strings(validation_data):
            validation_data = (raw_text.as_dataset(self, validation_data)
                               if isinstance(validation_data, tf.data.Dataset)
                               else raw_text.as_dataset(
                                   self, *keras.utils.unpack_x_y_sample_weight(validation_data),
                                   batch_size=batch_size))
        return super().fit(x, y, batch_size=batch_size, sample_weight=sample_weight,
                           validation_data=validation_data, shuffle=shuffle, **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, sample_weight=None, **kwargs):
        if raw_text.holds_strings(x):
            x = raw_text.as_dataset(self, x, y, sample_weight, batch_size)
            y = sample_weight = batch_size = None
        return super().evaluate(x, y, batch_size=batch_size, sample_weight=sample_weight,
                                **kwargs)

    def predict(self, x, batch_size=None, **kwargs):
        if raw_text.holds_strings(x):
            x, batch_size = raw_text.as_dataset(self, x, batch_size=batch_size), None
        return super().predict(x, batch_size=batch_size, **kwargs)

    def compile_for_finetuning(self, num_train_steps, config="finetune/default", overrides=(),
                               **compile_kwargs):
        """`compile()` with the fine-tuning recipe `run_finetuning` uses: the original's AdamW
        (weight decay 0.01, no bias correction), linear warmup over
        `finetune.warmup_proportion` of `num_train_steps` then linear decay, layer-wise
        learning-rate decay, and the learning rate for this encoder's width unless the recipe
        or `overrides` ("optimizer.learning_rate=1e-4", ...) name one. Returns the resolved
        `FinetuneConfig`."""
        return presets.compile_for_finetuning(self, num_train_steps, config, overrides,
                                              **compile_kwargs)

    def training_outputs(self, inputs, labels, training):
        """What the loss is computed from; a head that needs the labels in its forward pass
        (the QA head's end logits are conditioned on the gold start) overrides this."""
        return self(inputs, training=training)

    def update_task_metrics(self, labels, outputs, sample_weight):
        """Updates subclass metrics; `sample_weight` [batch] is 0 for padding examples."""

    def task_metrics(self):
        return []

    @property
    def metrics(self):
        return [self.loss_tracker] + self.task_metrics()

    def _loss(self, labels, outputs, sample_weight):
        """(this replica's differentiable share of the loss, the global mean per-example loss)."""
        losses = self.per_example_loss(labels, outputs) * sample_weight
        local = tf.stack([tf.reduce_sum(losses), tf.reduce_sum(sample_weight)])
        global_sum, global_count = tf.unstack(cross_replica_sum(tf.stop_gradient(local)))
        share = local[0] if self.loss_reduction == "sum" else local[0] / tf.maximum(global_count, 1.0)
        return share, global_sum / tf.maximum(global_count, 1.0)

    def _unpack(self, data):
        inputs, labels, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        if sample_weight is None:
            sample_weight = tf.ones([tf.shape(inputs["input_ids"])[0]], tf.float32)
        return inputs, labels, tf.cast(sample_weight, tf.float32)

    def train_step(self, data):
        """One optimizer update from this replica's batch, in `gradient_accumulation_steps`
        micro-batches (`accumulation.py`) whose losses divide by the whole batch's count."""
        inputs, labels, sample_weight = self._unpack(data)
        global_count = tf.maximum(cross_replica_sum(tf.reduce_sum(sample_weight)), 1.0)

        def micro_batch_loss(micro_batch):
            inputs, labels, sample_weight = micro_batch
            outputs = self.training_outputs(inputs, labels, training=True)
            local_sum = tf.reduce_sum(self.per_example_loss(labels, outputs) * sample_weight)
            share = local_sum if self.loss_reduction == "sum" else local_sum / global_count
            self.update_task_metrics(labels, outputs, sample_weight)
            return self.optimizer.scale_loss(share), tf.stop_gradient(local_sum)

        variables = self.trainable_variables
        gradients, local_sum = accumulated_gradients(
            micro_batch_loss, (inputs, labels, sample_weight), self.gradient_accumulation_steps,
            variables, self.parallel_chains)
        self.optimizer.apply(gradients, variables)
        self.loss_tracker.update_state(cross_replica_sum(local_sum) / global_count)
        return self.logged({m.name: m.result() for m in self.metrics})

    def test_step(self, data):
        inputs, labels, sample_weight = self._unpack(data)
        outputs = self.training_outputs(inputs, labels, training=False)
        _, mean_loss = self._loss(labels, outputs, sample_weight)
        return self._update_metrics(labels, outputs, sample_weight, mean_loss)

    def _update_metrics(self, labels, outputs, sample_weight, mean_loss):
        self.loss_tracker.update_state(mean_loss)
        self.update_task_metrics(labels, outputs, sample_weight)
        return self.logged({m.name: m.result() for m in self.metrics})

    def task_config(self) -> dict:
        """The subclass's own constructor arguments, for `get_config`."""
        return {}

    def get_config(self):
        config = {**super().get_config(), "model_config": dataclasses.asdict(self.model_config),
                  **self.task_config(), "loss_reduction": self.loss_reduction}
        if self.preprocessor is not None:
            config["preprocessor"] = keras.saving.serialize_keras_object(self.preprocessor)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if config.get("preprocessor") is not None:
            config["preprocessor"] = keras.saving.deserialize_keras_object(config["preprocessor"])
        return cls(ModelConfig(**config.pop("model_config")), **config)

    @classmethod
    def from_preset(cls, path, **kwargs):
        """This task model from a directory, in one call (`electra_tf.loading.load_task_model`).

        From a pretrained directory (a run of `run_pretraining`, an output of
        `convert_checkpoint`, a keras-hub `ElectraBackbone` preset): the pretrained encoder
        under a fresh head; `kwargs` are the constructor's (`num_labels=3`, `num_tags=9`,
        `head="independent"`, ...). From a fine-tuning run directory (`task.json`): the
        fine-tuned model, head included, built as the run built it.
        """
        return presets.load_preset(cls, path, **kwargs)

    def build_layers(self, head):
        """Creates every variable now (`fit` refuses a subclassed model with unbuilt sublayers),
        outside the model's name scope, so paths read `embeddings/...`, `discriminator/layer_0/...`
        and `task_specific/...` as in the pretrainer's checkpoints."""
        self.embeddings.build()
        self.encoder.build()
        head.build((None, None, self.model_config.hidden_size))
        self.built = True
