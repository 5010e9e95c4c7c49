"""Raw strings in `fit`, `evaluate` and `predict` of a task model that carries a preprocessor.

Keras slices arrays of features into batches itself; strings must first go through the model's
preprocessor (`electra_tf.preprocessing`). Texts in memory (lists, arrays) go through it once,
and a `tf.data.Dataset` of their features (rows shuffled each epoch when asked, then batched)
feeds Keras: mapping the preprocessor in every epoch would rebuild its graph for every epoch's
iterator, seconds each. The question answerer's rows are windows, several per long context,
shuffled and batched as `run_finetuning` does. A dataset of strings is mapped through the
preprocessor as keras-hub's tasks do. Inputs without strings (feature dicts, datasets of
features) go to Keras unchanged.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf
import keras

DEFAULT_BATCH_SIZE = 32  # Keras' own default for arrays
PREPROCESSING_BATCH = 256  # texts through the preprocessor at a time


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
            f"({type(model).__name__}(..., preprocessor={_preprocessor_name(model)}."
            "from_vocabulary('vocab.txt')), or from_preset of a directory with a vocabulary "
            "attaches it), or pass features: a dict of int input_ids, input_mask, segment_ids")


def _preprocessor_name(model) -> str:
    return getattr(model.preprocessor_cls, "__name__", "ElectraTextClassifierPreprocessor")


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
        model.check_labels(y if ragged or isinstance(y, dict) else np.asarray(y))
    if ragged:
        if not isinstance(x, tf.RaggedTensor):
            x = tf.ragged.constant([list(row) for row in x], tf.string)
        if y is not None and not isinstance(y, tf.RaggedTensor):
            y = tf.ragged.constant([list(row) for row in y], tf.int32)
    else:
        x = tuple(np.asarray(part, dtype=str) for part in x) if isinstance(x, tuple) else (
            np.asarray(x, dtype=str))
    texts = tf.data.Dataset.from_tensor_slices(
        keras.utils.pack_x_y_sample_weight(x, y, sample_weight))
    texts = (texts.ragged_batch(PREPROCESSING_BATCH) if ragged
             else texts.batch(PREPROCESSING_BATCH))
    rows = _concatenated(list(texts.map(model.preprocessor)))
    dataset = tf.data.Dataset.from_tensor_slices(rows)
    if shuffle:
        dataset = dataset.shuffle(len(tf.nest.flatten(rows)[0]), reshuffle_each_iteration=True)
    return dataset.batch(batch_size or DEFAULT_BATCH_SIZE).prefetch(tf.data.AUTOTUNE)


def _concatenated(batches: list):
    """The preprocessor's batches as one structure of rows. A feature whose width differs
    between batches (the tagger's `word_positions`) is padded with -1, as the preprocessor
    pads it."""
    def concatenate(*parts):
        width = max(int(p.shape[1]) for p in parts) if parts[0].shape.rank > 1 else None
        if width is not None:
            parts = [tf.pad(p, [[0, 0], [0, width - p.shape[1]]] + [[0, 0]] * (p.shape.rank - 2),
                            constant_values=-1) for p in parts]
        return tf.concat(parts, axis=0)

    return tf.nest.map_structure(concatenate, *batches)


def _is_nested(x) -> bool:
    return isinstance(x, list) and bool(x) and isinstance(x[0], (list, tuple))
