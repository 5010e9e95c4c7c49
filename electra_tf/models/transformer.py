"""The post-LN BERT block: keras-hub's TransformerEncoder with a separate attention dropout."""

import keras
import keras_hub


@keras.saving.register_keras_serializable(package="electra_tf")
class TransformerLayer(keras_hub.layers.TransformerEncoder):
    """keras-hub's TransformerEncoder (post-LN), with its own attention-probability dropout rate.

    Call: `inputs` [batch, seq, H], `padding_mask` [batch, seq] (1 = real token) -> [batch, seq, H].
    """

    def __init__(self, intermediate_dim, num_heads, dropout=0.1, attention_dropout=0.1,
                 activation="gelu", layer_norm_epsilon=1e-12, kernel_initializer=None, **kwargs):
        # ELECTRA's defaults, not keras-hub's (ReLU, epsilon 1e-5, Glorot).
        kernel_initializer = kernel_initializer or keras.initializers.TruncatedNormal(stddev=0.02)
        super().__init__(intermediate_dim, num_heads, dropout=dropout, activation=activation,
                         layer_norm_epsilon=layer_norm_epsilon,
                         kernel_initializer=kernel_initializer, **kwargs)
        self.attention_dropout = attention_dropout

    def build(self, inputs_shape):
        # keras-hub uses one `dropout` rate for both the attention probabilities and the residual
        # branches; ELECTRA configures them separately, so build the attention with its own rate
        # and set the two residual dropouts back to the hidden rate.
        hidden_dropout, self.dropout = self.dropout, self.attention_dropout
        try:
            super().build(inputs_shape)
        finally:
            self.dropout = hidden_dropout
        self._self_attention_dropout.rate = hidden_dropout
        self._feedforward_dropout.rate = hidden_dropout

    def get_config(self):
        config = super().get_config()
        config["attention_dropout"] = self.attention_dropout
        return config
