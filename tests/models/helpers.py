"""Tiny configs and masked batches shared by the model tests."""

import dataclasses
import re

import keras
import numpy as np
import tensorflow as tf

from electra_tf.config import ModelConfig, ObjectiveConfig, OptimizerConfig
from electra_tf.pretraining_data.masking import mask_tokens

VOCAB = 120
CLS, SEP, MASK = 101, 102, 103


def tiny_model_config(**overrides):
    config = ModelConfig(vocab_size=VOCAB, embedding_size=16, hidden_size=32, num_layers=2,
                         num_heads=2, intermediate_size=64, max_position_embeddings=64,
                         generator_fraction=0.5)
    return dataclasses.replace(config, **overrides)


def objective(**overrides):
    return dataclasses.replace(ObjectiveConfig(), **overrides)


def fast_optimizer_config(**overrides):
    config = OptimizerConfig(learning_rate=1e-3, warmup_steps=10, train_steps=1000)
    return dataclasses.replace(config, **overrides)


def layer_norm_with_random_weights(width, seed=0):
    """A built LayerNormalization (epsilon 1e-12) over `width` whose gamma and beta are random,
    not the initial ones and zeros: a test of both must see them used."""
    layer = keras.layers.LayerNormalization(epsilon=1e-12)
    layer.build((None, width))
    rng = np.random.default_rng(seed)
    layer.gamma.assign(rng.normal(1.0, 0.3, width).astype(np.float32))
    layer.beta.assign(rng.normal(0.0, 0.3, width).astype(np.float32))
    return layer


def random_ids(batch, length, seed=0, lengths=None):
    """[CLS] tokens [SEP] padded with 0; returns (ids, input_mask), int32 [batch, length]."""
    rng = np.random.default_rng(seed)
    lengths = lengths if lengths is not None else rng.integers(length // 2, length + 1, size=batch)
    ids = rng.integers(5, 100, size=(batch, length)).astype(np.int32)
    mask = (np.arange(length)[None, :] < np.asarray(lengths)[:, None]).astype(np.int32)
    ids[:, 0] = CLS
    ids[np.arange(batch), np.asarray(lengths) - 1] = SEP
    return ids * mask, mask


def masked_batch(ids, mask, seed=0, max_predictions=5, mask_prob=0.15):
    """The pretrainer's batch dict, masked with the project's masking function."""
    batch = mask_tokens(ids, mask, tf.constant([seed, 1]), mask_prob=mask_prob,
                        max_predictions=max_predictions, mask_token_id=MASK,
                        special_token_ids=[CLS, SEP, MASK])
    batch = {k: v.numpy() for k, v in batch.items()}
    batch.update(input_mask=mask, segment_ids=np.zeros_like(ids))
    return batch


def xla_compiled_functions(function, *args):
    """The names of the XLA-compiled functions (jit_compile=True) that `function(*args)`, traced
    as a tf.function, calls: e.g. {"_forward", "_backward"}."""
    graph = tf.function(function).get_concrete_function(*args).graph
    library = graph.as_graph_def().library.function
    names = (f.signature.name for f in library if f.attr["_XlaMustCompile"].b)
    return {re.fullmatch(r"__inference_(.+)_\d+", name).group(1) for name in names}
