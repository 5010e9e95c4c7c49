"""The ELECTRA encoder: embeddings -> projection E->H (when E != H) -> post-LN transformer stack."""

import keras
import tensorflow as tf

from electra_tf import presets
from electra_tf.models.activations import get_activation
from electra_tf.models.embeddings import ElectraEmbeddings, GdesEmbeddings
from electra_tf.models.transformer import TransformerLayer, sequence_halves


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraEncoder(keras.layers.Layer):
    """A BERT-style encoder over an injected (possibly shared) `ElectraEmbeddings` block.

    There is no pooler: the [CLS] vector `sequence_output[:, 0]` is the sequence summary, as in
    the original. The projection uses Glorot-uniform (TF default in the original); every other
    kernel is truncated normal with stddev `initializer_range`.

    Call: `input_ids`, `input_mask` (1 = real token), `segment_ids`, each int [batch, seq]
    -> `sequence_output` [batch, seq, hidden_size]; with `output_rows=k`, the last block computes
    the first k positions only -> [batch, k, hidden_size] (k = 1: the [CLS] vector alone, what a
    classifier reads; the same values as the whole output's first rows).

    In inference the work is split into two chains of ops that share nothing until they are
    joined after the last block, which TensorFlow's executor runs at once on its inter-op
    threads: a batch of two or more sequences as its two halves of the batch, a single
    sequence as the two halves of the sequence (each half's queries attend to every key, so
    those chains exchange their keys and values at every block,
    `TransformerLayer.call_on_halves`). The outputs are the blocks' called one by one.

    `from_preset(path)` loads a pretrained discriminator encoder; `from_model_config` sizes one
    by an `electra_tf.config.ModelConfig`. A deserialised encoder (`from_config`) owns a new
    copy of its embeddings: sharing them with another network is the owner's job (the
    pretrainer rebuilds its networks from its `ModelConfig`).

    Args:
      embeddings: the `ElectraEmbeddings` block it reads (not owned: it may be shared).
      hidden_size: width H of the transformer; a Dense E->H projection is added when the
        embeddings' width E differs.
      num_layers: transformer blocks.
      num_heads: attention heads per block.
      intermediate_size: width of the feed-forward layer.
      hidden_dropout: dropout rate on the residual branches.
      attention_dropout: dropout rate on the attention probabilities.
      activation: "gelu" (exact erf), "gelu_approximate" (tanh) or "relu".
      layer_norm_epsilon: the blocks' LayerNorm epsilon.
      initializer_range: stddev of the truncated-normal kernels.
      pre_layer_norm: pre-LN blocks (keras-hub's `normalize_first`: LayerNorm before each
        sublayer) and a LayerNorm after the last block, one chain in inference; False, the
        original's post-LN blocks.
      **kwargs: `keras.layers.Layer` arguments (`name`, `dtype`, ...).

    Example:

    ```python
    embeddings = ElectraEmbeddings(vocab_size=200, embedding_size=16, max_position_embeddings=32)
    encoder = ElectraEncoder(embeddings, hidden_size=32, num_layers=2, num_heads=2,
                             intermediate_size=64)
    ids = tf.constant([[101, 7, 8, 102, 0]])
    mask = tf.constant([[1, 1, 1, 1, 0]])
    encoder(ids, mask, tf.zeros_like(ids)).shape  # (1, 5, 32)
    # Or pretrained: encoder = ElectraEncoder.from_preset("runs/small")
    ```
    """

    def __init__(self, embeddings, hidden_size, num_layers, num_heads, intermediate_size,
                 hidden_dropout=0.1, attention_dropout=0.1, activation="gelu",
                 layer_norm_epsilon=1e-12, initializer_range=0.02, pre_layer_norm=False,
                 **kwargs):
        super().__init__(**kwargs)
        self.embeddings = embeddings
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.intermediate_size = intermediate_size
        self.hidden_dropout = hidden_dropout
        self.attention_dropout = attention_dropout
        self.activation = activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.pre_layer_norm = pre_layer_norm
        self.inference_chains = 2
        self.embeddings_project = None
        if embeddings.embedding_size != hidden_size:
            self.embeddings_project = keras.layers.Dense(
                hidden_size, kernel_initializer="glorot_uniform", dtype=self.dtype_policy,
                name="embeddings_project")
        self.transformer_layers = [
            TransformerLayer(
                intermediate_size, num_heads, dropout=hidden_dropout,
                attention_dropout=attention_dropout, activation=get_activation(activation),
                layer_norm_epsilon=layer_norm_epsilon, normalize_first=pre_layer_norm,
                kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
                dtype=self.dtype_policy, name=f"layer_{i}")
            for i in range(num_layers)
        ]
        # Pre-LN blocks leave their residual stream unnormalized: one LayerNorm after the last.
        self.final_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=self.dtype_policy,
            name="final_layer_norm") if pre_layer_norm else None

    @classmethod
    def from_model_config(cls, config, embeddings, **kwargs):
        """Builds an encoder from an `electra_tf.config.ModelConfig`."""
        return cls(embeddings, hidden_size=config.hidden_size, num_layers=config.num_layers,
                   num_heads=config.num_heads, intermediate_size=config.intermediate_size,
                   hidden_dropout=config.hidden_dropout, attention_dropout=config.attention_dropout,
                   activation=config.activation, layer_norm_epsilon=config.layer_norm_epsilon,
                   initializer_range=config.initializer_range,
                   pre_layer_norm=config.pre_layer_norm, **kwargs)

    def build(self, input_shape=None):
        if not self.embeddings.built:
            self.embeddings.build()
        if self.embeddings_project is not None:
            self.embeddings_project.build((None, None, self.embeddings.embedding_size))
        for layer in self.transformer_layers:
            layer.build((None, None, self.hidden_size))
        if self.final_layer_norm is not None:
            self.final_layer_norm.build((None, None, self.hidden_size))
        self.built = True

    def call(self, input_ids, input_mask, segment_ids, training=None, output_rows=None):
        x = self.embeddings(input_ids, segment_ids, training=training)
        if self.embeddings_project is not None:
            x = self.embeddings_project(x)
        if self.pre_layer_norm:  # keras-hub's pre-LN blocks, one chain
            for layer in self.transformer_layers:
                x = layer(x, padding_mask=input_mask, training=training)
            x = self.final_layer_norm(x)
            return x if not output_rows else x[:, :output_rows]
        layers = list(self.transformer_layers)
        last = layers.pop() if output_rows and layers else None
        if not training and self.inference_chains == 2:
            arguments = (x, input_mask, layers, last, output_rows)
            if x.shape[0] is not None:  # known when traced: no conditional in the graph
                halves = self._on_batch_halves if x.shape[0] > 1 else self._on_sequence_halves
                return halves(*arguments)
            return tf.cond(tf.shape(x)[0] > 1, lambda: self._on_batch_halves(*arguments),
                           lambda: self._on_sequence_halves(*arguments))
        for layer in layers:
            x = layer(x, padding_mask=input_mask, training=training)
        if last is not None:
            x = last(x, padding_mask=input_mask, training=training, query_rows=output_rows)
        return x

    def _on_sequence_halves(self, x, input_mask, layers, last, output_rows):
        """Inference on `x` [batch, seq, H] with the blocks `layers` (then `last` for the first
        `output_rows` positions, if given) as two chains, one per half of the sequence."""
        halves = sequence_halves(x)
        for layer in layers:
            with tf.name_scope(layer.name):
                halves = layer.call_on_halves(halves, input_mask)
        x = tf.concat(halves, axis=1)
        if last is not None:
            x = last(x, padding_mask=input_mask, training=False, query_rows=output_rows)
        return x

    def _on_batch_halves(self, x, input_mask, layers, last, output_rows):
        """`_on_sequence_halves`, the chains being the halves of the batch: independent, so
        neither waits for the other until the final join (batches of 32 x 128 ran 1.04-1.07x as
        fast as with sequence halves; docs/performance.md, "Single requests")."""
        half = (tf.shape(x)[0] + 1) // 2
        masks = (None, None) if input_mask is None else (input_mask[:half], input_mask[half:])
        outputs = []
        for rows, mask in zip((x[:half], x[half:]), masks):
            for layer in layers:
                with tf.name_scope(layer.name):
                    (rows,) = layer.call_on_halves((rows,), mask)
            if last is not None:
                rows = last(rows, padding_mask=mask, training=False, query_rows=output_rows)
            outputs.append(rows)
        return tf.concat(outputs, axis=0)

    def reinitialize_top_layers(self, count: int) -> None:
        """Gives the top `count` transformer blocks fresh weights, drawn as a new encoder's
        (truncated-normal kernels, zero biases, LayerNorms at one and zero); the embeddings and
        the blocks below keep theirs. ValueError when the encoder has fewer blocks."""
        if not 0 <= count <= self.num_layers:
            raise ValueError(f"cannot re-initialise the top {count} blocks of an encoder of "
                             f"{self.num_layers}")
        for layer in self.transformer_layers[self.num_layers - count:]:
            fresh = TransformerLayer.from_config(layer.get_config())
            fresh.build((None, None, self.hidden_size))
            for weight, new in zip(layer.weights, fresh.weights):
                weight.assign(new)

    def embed(self, input_ids, input_mask, segment_ids):
        """Features for embedding use (inference, no dropout): float32 `sequence_output`
        [batch, seq, hidden] and `pooled_output` [batch, hidden], the final [CLS] vector (what
        the original's classifier reads; ELECTRA has no pooler layer). From text: an
        `ElectraTextClassifierPreprocessor`'s features, `encoder.embed(**preprocessor(texts))`."""
        sequence = tf.cast(self(tf.cast(input_ids, tf.int32), tf.cast(input_mask, tf.int32),
                                tf.cast(segment_ids, tf.int32), training=False), tf.float32)
        return {"sequence_output": sequence, "pooled_output": sequence[:, 0]}

    def get_config(self):
        config = super().get_config()
        config["embeddings"] = keras.layers.serialize(self.embeddings)
        config.update({name: getattr(self, name) for name in (
            "hidden_size", "num_layers", "num_heads", "intermediate_size", "hidden_dropout",
            "attention_dropout", "activation", "layer_norm_epsilon", "initializer_range",
            "pre_layer_norm")})
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["embeddings"] = keras.layers.deserialize(config["embeddings"])
        return cls(**config)

    @classmethod
    def from_preset(cls, path):
        """The pretrained encoder to fine-tune (with its own embeddings, built, weights loaded)
        from a run directory of `run_pretraining`, an output of `convert_checkpoint` (electra_tf
        or keras_hub) or a fine-tuning run directory: `electra_tf.loading.load_encoder`."""
        return presets.load_preset(cls, path)


def make_embeddings(config, **kwargs):
    """An `ElectraEmbeddings` block sized by an `electra_tf.config.ModelConfig`."""
    return ElectraEmbeddings(
        config.vocab_size, config.embedding_size, config.max_position_embeddings,
        config.type_vocab_size, dropout=config.hidden_dropout,
        layer_norm_epsilon=config.layer_norm_epsilon, initializer_range=config.initializer_range,
        **kwargs)


def plain_encoder(encoder: ElectraEncoder) -> ElectraEncoder:
    """`encoder`, or for a discriminator pretrained with GDES (`GdesEmbeddings`) a copy over
    plain `ElectraEmbeddings` whose word table is its effective one (shared + residual): a
    plain ELECTRA encoder, named as `encoder` over embeddings named `embeddings`, for conversion."""
    gdes = encoder.embeddings
    if not isinstance(gdes, GdesEmbeddings):
        return encoder
    config = encoder.get_config()
    config["embeddings"] = keras.layers.serialize(gdes.shared)
    copy = ElectraEncoder.from_config(config)
    if not copy.embeddings.built:  # first, so its variables are named embeddings/...
        copy.embeddings.build()
    if not copy.built:
        copy.build()
    for target, source in zip(copy.embeddings.weights, gdes.shared.weights):
        target.assign(source)
    copy.embeddings.word_embeddings.embeddings.assign(gdes.effective_word_table())
    own = [w for w in encoder.weights if not any(w is s for s in gdes.weights)]
    for target, source in zip([w for w in copy.weights if not any(
            w is e for e in copy.embeddings.weights)], own):
        target.assign(source)
    return copy
