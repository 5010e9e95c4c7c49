"""electra_tf: ELECTRA pretraining, fine-tuning and serving in Keras 3 / TensorFlow 2."""

__version__ = "0.1.0"
