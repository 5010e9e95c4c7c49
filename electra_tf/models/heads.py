"""The two pretraining heads: the generator's masked-LM head and the discriminator's RTD head."""

import keras
import keras_hub

from electra_tf.models.activations import get_activation, training_activation


def make_generator_head(word_embeddings, activation="gelu", layer_norm_epsilon=1e-12,
                        initializer_range=0.02, **kwargs):
    """keras-hub's MaskedLMHead configured as ELECTRA's generator head.

    Gathers the generator's hidden states at the masked positions, then dense to the embedding
    size E with GELU -> LayerNorm (epsilon 1e-12, not keras-hub's 1e-5) -> logits through the
    transposed word-embedding table (tied) plus its own bias.

    Call: `inputs` [batch, seq, Hg], `mask_positions` int [batch, N] -> logits [batch, N, V].

    The layer is keras-hub's (registered as `keras_hub>MaskedLMHead`); its config holds a copy
    of the word table's config, so a deserialised head owns a new, untied table. Inside a
    pretrainer the tie is rebuilt by the pretrainer's constructor.
    """
    return keras_hub.layers.MaskedLMHead(
        token_embedding=word_embeddings,
        intermediate_activation=get_activation(activation),
        layer_norm_epsilon=layer_norm_epsilon,
        kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
        **kwargs)


@keras.saving.register_keras_serializable(package="electra_tf")
class DiscriminatorHead(keras.layers.Layer):
    """Dense H->H with GELU, then dense H->1 (Glorot): one "replaced" logit per token.

    Call: `sequence_output` [batch, seq, H] -> float32 logits [batch, seq].

    Args:
      hidden_size: width H of the encoder output (and of the hidden dense layer).
      activation: of the hidden dense layer: "gelu" (exact erf), "gelu_approximate" or "relu".
      initializer_range: stddev of the hidden layer's truncated-normal kernel.
      **kwargs: `keras.layers.Layer` arguments (`name`, `dtype`, ...).

    Example:

    ```python
    head = DiscriminatorHead(hidden_size=32)
    logits = head(tf.zeros([2, 5, 32]))  # float32 [2, 5]
    replaced_probability = tf.sigmoid(logits)
    ```
    """

    def __init__(self, hidden_size, activation="gelu", initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.activation = activation
        self.initializer_range = initializer_range
        self.dense = keras.layers.Dense(
            hidden_size, activation=get_activation(activation),
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            dtype=self.dtype_policy, name="dense")
        self.dense_prediction = keras.layers.Dense(
            1, kernel_initializer="glorot_uniform", dtype=self.dtype_policy,
            name="dense_prediction")

    def build(self, input_shape=None):
        self.dense.build((None, None, self.hidden_size))
        self.dense_prediction.build((None, None, self.hidden_size))
        self.built = True

    def call(self, sequence_output, training=None):
        activation = training_activation(self.dense.activation, training)
        if activation is self.dense.activation:
            hidden = self.dense(sequence_output)
        else:  # in training, GELU and its derivative as one XLA kernel each, as in the encoder
            hidden = activation(keras.ops.add(
                keras.ops.matmul(sequence_output, self.dense.kernel), self.dense.bias))
        logits = self.dense_prediction(hidden)
        return keras.ops.cast(keras.ops.squeeze(logits, axis=-1), "float32")

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, activation=self.activation,
                      initializer_range=self.initializer_range)
        return config
