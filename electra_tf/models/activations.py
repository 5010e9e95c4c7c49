"""Activation lookup: exact erf GELU by default, as in the original and Hugging Face."""

import keras


@keras.saving.register_keras_serializable(package="electra_tf")
def gelu_approximate(x):
    """The tanh approximation of GELU (keras-hub's ElectraBackbone, HF's "gelu_new")."""
    return keras.activations.gelu(x, approximate=True)


def get_activation(name):
    """Maps a config name ("gelu", "gelu_approximate", "relu") to a Keras activation."""
    if name == "gelu_approximate":
        return gelu_approximate
    return keras.activations.get(name)  # Keras' "gelu" is the exact erf form
