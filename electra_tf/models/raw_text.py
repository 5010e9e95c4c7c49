"""Raw strings in `fit`, `evaluate` and `predict` of a task model that carries a preprocessor.

Keras slices arrays of features into batches itself; strings must first go through the model's
preprocessor (`electra_tf.preprocessing`), so inputs that hold strings are turned into a batched
`tf.data.Dataset` mapped through it, as keras-hub's tasks do. Inputs without strings (feature
dicts, datasets of features) go to Keras unchanged.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf
import keras

DEFAULT_BATCH_SIZE = 32  # Keras' own default for arrays


def holds_strings(x) -> bool:
    """Whether `x` (a string, arrays or lists of strings, a tuple of those, a dataset whose
    elements hold strings) is raw text rather than features."""
    if isinstance(x, tf.data.Dataset):
        return any(spec.dtype == tf.string for spec in tf.nest.flatten(x.element_spec))
    if isinstance(x, (str, bytes)):
        return True
    if isinstance(x, tuple):
        return any(holds_strings(part) for part in x)
    if isinstance(x, tf.RaggedTensor):
        return x.dtype == tf.string
    if _is_nested(x):  # sentences of words
        return isinstance(next((word for row in x for word in row), None), (str, bytes))
    if isinstance(x, tf.Tensor):
        return x.dtype == tf.string
    if isinstance(x, (list, np.ndarray)):
        array = np.asarray(x, dtype=object) if isinstance(x, list) else x
        return array.size > 0 and (array.dtype.kind in "USO") and isinstance(
            array.flat[0], (str, bytes, np.str_, np.bytes_))
    return False


def check_fits(preprocessor, model_config, model_name: str) -> None:
    """Raises ValueError when the preprocessor makes ids or lengths the encoder has no rows for."""
    # a tokenizer being deserialized gets its vocabulary after the model is built
    vocabulary_size = (preprocessor.tokenizer.vocabulary_size()
                       if getattr(preprocessor.tokenizer, "vocabulary", None) is not None else 0)
    if vocabulary_size > model_config.vocab_size:
        raise ValueError(f"the preprocessor's vocabulary has {vocabulary_size} tokens, more than "
                         f"the {model_config.vocab_size} rows of {model_name}'s embeddings: "
                         "it is not this model's vocabulary")
    if preprocessor.sequence_length > model_config.max_position_embeddings:
        raise ValueError(f"the preprocessor's sequence_length {preprocessor.sequence_length} is "
                         f"above {model_name}'s {model_config.max_position_embeddings} positions")


def check_preprocessor(model, x) -> None:
    if model.preprocessor is None:
        raise ValueError(
            f"{type(model).__name__} got raw strings but has no preprocessor: give it one "
            f"({type(model).__name__}(..., preprocessor=ElectraTextClassifierPreprocessor."
            "from_vocabulary('vocab.txt')), or from_preset of a directory with a vocabulary "
            "attaches it), or pass features: a dict of int input_ids, input_mask, segment_ids")


def as_dataset(model, x, y=None, sample_weight=None, batch_size=None, shuffle=False):
    """Strings (or a dataset of strings) -> a batched dataset of the model's features, labels
    and weights passed through; `model.check_labels(y)` sees the labels first."""
    check_preprocessor(model, x)
    if isinstance(x, tf.data.Dataset):
        if y is not None or sample_weight is not None or batch_size is not None:
            raise ValueError("when x is a tf.data.Dataset it holds the labels and is batched: "
                             "give no y, sample_weight or batch_size")
        return x.map(model.preprocessor, num_parallel_calls=tf.data.AUTOTUNE).prefetch(
            tf.data.AUTOTUNE)
    if isinstance(x, (str, bytes)):
        x = [x]  # one text: a batch of one
    ragged = _is_nested(x) or isinstance(x, tf.RaggedTensor)  # sentences of words: ragged rows
    if y is not None:
        model.check_labels(y if ragged else np.asarray(y))
    if ragged:
        if not isinstance(x, tf.RaggedTensor):
            x = tf.ragged.constant([list(row) for row in x], tf.string)
        if y is not None and not isinstance(y, tf.RaggedTensor):
            y = tf.ragged.constant([list(row) for row in y], tf.int32)
        count = int(x.nrows())
    else:
        x = tuple(np.asarray(part, dtype=str) for part in x) if isinstance(x, tuple) else (
            np.asarray(x, dtype=str))
        count = len(np.atleast_1d(tf.nest.flatten(x)[0]))
    elements = keras.utils.pack_x_y_sample_weight(x, y, sample_weight)
    dataset = tf.data.Dataset.from_tensor_slices(elements)
    if shuffle:
        dataset = dataset.shuffle(count, reshuffle_each_iteration=True)
    batch_size = batch_size or DEFAULT_BATCH_SIZE
    dataset = dataset.ragged_batch(batch_size) if ragged else dataset.batch(batch_size)
    return dataset.map(model.preprocessor, num_parallel_calls=tf.data.AUTOTUNE).prefetch(
        tf.data.AUTOTUNE)


def _is_nested(x) -> bool:
    return isinstance(x, list) and bool(x) and isinstance(x[0], (list, tuple))
