"""Keras preprocessors: raw strings to the features of electra_tf's task models, built on
keras-hub's preprocessor, tokenizer and packer layers and saved with them in presets."""
