"""The embedding block shared by the generator and the discriminator."""

import keras
import keras_hub

from electra_tf.models.dropout import dropout
from electra_tf.models.layer_norm import layer_norm

# the residual table's variable in a pretrainer: its checkpoint path
GDES_RESIDUAL_PATH = "discriminator_embeddings/residual_word_embeddings/embeddings"


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraEmbeddings(keras.layers.Layer):
    """Word + position + token-type embeddings, then LayerNorm, then dropout.

    One instance is shared by both networks, so they use the same variable objects for the
    three tables and the LayerNorm (original: scope `electra/embeddings`). Each call draws its
    own dropout mask. The word table is a `ReversibleEmbedding` so the generator head can use
    its transpose as the output projection.

    Call: `input_ids` int [batch, seq], `segment_ids` int [batch, seq] -> float [batch, seq, E].

    Args:
      vocab_size: rows of the word table V.
      embedding_size: width E of the three tables (ELECTRA-Small: 128; the generator and
        discriminator share it).
      max_position_embeddings: rows of the position table: the longest sequence.
      type_vocab_size: rows of the token-type (segment) table.
      dropout: rate of the dropout after the LayerNorm.
      layer_norm_epsilon: the LayerNorm's epsilon (1e-12 as the original, not Keras' 1e-3).
      initializer_range: stddev of the truncated-normal initialisation of the tables.
      **kwargs: `keras.layers.Layer` arguments (`name`, `dtype`, ...).

    Example:

    ```python
    embeddings = ElectraEmbeddings(vocab_size=200, embedding_size=16, max_position_embeddings=32)
    ids = tf.constant([[101, 7, 8, 102]])
    embeddings(ids, tf.zeros_like(ids)).shape  # (1, 4, 16)
    ```
    """

    def __init__(self, vocab_size, embedding_size, max_position_embeddings=512, type_vocab_size=2,
                 dropout=0.1, layer_norm_epsilon=1e-12, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.embedding_size = embedding_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range

        def init():
            return keras.initializers.TruncatedNormal(stddev=initializer_range)

        self.word_embeddings = keras.layers.ReversibleEmbedding(
            vocab_size, embedding_size, embeddings_initializer=init(), dtype=self.dtype_policy,
            name="word_embeddings")
        self.position_embeddings = keras_hub.layers.PositionEmbedding(
            sequence_length=max_position_embeddings, initializer=init(), dtype=self.dtype_policy,
            name="position_embeddings")
        self.token_type_embeddings = keras.layers.Embedding(
            type_vocab_size, embedding_size, embeddings_initializer=init(), dtype=self.dtype_policy,
            name="token_type_embeddings")
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm")
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy)

    def build(self, input_shape=None):
        self.word_embeddings.build()
        self.position_embeddings.build((None, self.max_position_embeddings, self.embedding_size))
        self.token_type_embeddings.build()
        self.layer_norm.build((None, None, self.embedding_size))
        self.built = True

    def call(self, input_ids, segment_ids, training=None):
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(segment_ids)
        x = x + self.position_embeddings(x)
        return dropout(layer_norm(x, self.layer_norm, training), self.dropout_layer, training)

    def get_config(self):
        config = super().get_config()
        config.update({name: getattr(self, name) for name in (
            "vocab_size", "embedding_size", "max_position_embeddings", "type_vocab_size",
            "dropout", "layer_norm_epsilon", "initializer_range")})
        return config


@keras.saving.register_keras_serializable(package="electra_tf")
class GdesEmbeddings(keras.layers.Layer):
    """The discriminator's embeddings under gradient-disentangled embedding sharing (GDES,
    DeBERTa-v3): its word vectors are the shared table's, held by a stop-gradient, plus a
    residual table of its own that starts at zero, E_D = sg(E_G) + E_delta. The generator's
    masked-LM loss alone trains the shared word table; replaced-token detection trains the
    residual. The position and token-type tables and the LayerNorm stay shared as in ELECTRA
    (DeBERTa has no absolute positions to share).

    Call: as `ElectraEmbeddings` -> float [batch, seq, E]. `effective_word_table()`: the
    discriminator's word table, shared + residual [V, E], what conversion and fine-tuning use.

    Args:
      shared: the `ElectraEmbeddings` block the generator uses.
      **kwargs: `keras.layers.Layer` arguments (`name`, `dtype`, ...).
    """

    def __init__(self, shared, **kwargs):
        super().__init__(**kwargs)
        self.shared = shared
        for name in ("vocab_size", "embedding_size", "max_position_embeddings",
                     "type_vocab_size", "dropout", "layer_norm_epsilon", "initializer_range"):
            setattr(self, name, getattr(shared, name))
        self.residual_word_embeddings = keras.layers.Embedding(
            shared.vocab_size, shared.embedding_size, embeddings_initializer="zeros",
            dtype=self.dtype_policy, name="residual_word_embeddings")
        self.dropout_layer = keras.layers.Dropout(shared.dropout, dtype=self.dtype_policy)

    def build(self, input_shape=None):
        if not self.shared.built:
            self.shared.build()
        self.residual_word_embeddings.build()
        self.built = True

    def effective_word_table(self):
        return self.shared.word_embeddings.embeddings + self.residual_word_embeddings.embeddings

    def call(self, input_ids, segment_ids, training=None):
        shared = self.shared
        x = (keras.ops.stop_gradient(shared.word_embeddings(input_ids))
             + self.residual_word_embeddings(input_ids) + shared.token_type_embeddings(segment_ids))
        x = x + shared.position_embeddings(x)
        return dropout(layer_norm(x, shared.layer_norm, training), self.dropout_layer, training)

    def get_config(self):
        return {**super().get_config(), "shared": keras.layers.serialize(self.shared)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(keras.layers.deserialize(config.pop("shared")), **config)
