""".keras round trips: every model saves and loads through Keras' registry, with no custom_objects.

For each model: the same class and config, every weight equal by path, the same outputs in
inference mode, and for the pretrainer the embeddings still shared (one variable object) and
training that goes on.
"""

import os
import subprocess
import sys
import zipfile

import h5py
import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.models import (CorruptedInputMlmPretrainer, DiscriminatorHead, ElectraClassifier,
                               ElectraEmbeddings, ElectraEncoder, ElectraPretrainer,
                               ElectraQuestionAnswerer, ElectraTagger, make_embeddings,
                               build_pretrainer, make_generator_head)
from electra_tf.models.classifier import ClassificationHead
from electra_tf.models.span_heads import IndependentSpanHead, JointSpanHead
from electra_tf.models.tagger import TokenTaggingHead
from electra_tf.training.optimizer import create_optimizer
from tests.models.helpers import (VOCAB, fast_optimizer_config, masked_batch, objective,
                                  random_ids, tiny_model_config)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def randomise(model, seed=0):
    """Distinct random values in every weight, so only a real load reproduces them."""
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        variable.assign((0.05 * rng.standard_normal(variable.shape)).astype(variable.dtype))


def save_and_load(model, directory, name="model.keras"):
    path = os.path.join(directory, name)
    model.save(path)
    return keras.saving.load_model(path), path


def assert_same_model(loaded, model):
    assert type(loaded) is type(model)
    assert loaded.get_config() == model.get_config()
    expected = {v.path: v.numpy() for v in model.weights}
    restored = {v.path: v.numpy() for v in loaded.weights}
    assert sorted(restored) == sorted(expected) and len(expected) == len(model.weights)
    for path, value in expected.items():
        np.testing.assert_array_equal(restored[path], value, err_msg=path)


def assert_same_outputs(actual, expected):
    if isinstance(expected, dict):
        assert sorted(actual) == sorted(expected)
        for key in expected:
            np.testing.assert_allclose(actual[key], expected[key], rtol=0, atol=1e-6, err_msg=key)
    else:
        np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-6)


@pytest.fixture(scope="module")
def pretraining_batch():
    ids, mask = random_ids(4, 16, seed=1)
    return masked_batch(ids, mask)


def task_inputs(batch=3, length=12, seed=2):
    ids, mask = random_ids(batch, length, seed=seed)
    segments = np.zeros_like(ids)
    segments[:, length // 3:] = 1
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segments * mask}


# ---- the pretrainer ---------------------------------------------------------------------------

PRETRAINERS = {
    "electra": objective(),
    "replace_mlm": objective(variant="replace_mlm", disc_weight=1.0),
    "uniform_generator": objective(uniform_generator=True),
}


@pytest.mark.parametrize("name", sorted(PRETRAINERS))
def test_pretrainer_round_trip(name, pretraining_batch, tmp_path):
    keras.utils.set_random_seed(0)
    model = build_pretrainer(tiny_model_config(), PRETRAINERS[name])
    randomise(model)
    loaded, _ = save_and_load(model, tmp_path)

    assert_same_model(loaded, model)
    assert isinstance(loaded, CorruptedInputMlmPretrainer) == (name == "replace_mlm")
    assert_same_outputs(loaded(pretraining_batch, training=False),
                        model(pretraining_batch, training=False))
    # Still one embedding block, one set of variables: the load did not untie anything.
    shared = loaded.embeddings
    assert loaded.encoder.embeddings is shared
    if loaded.generator is not None:
        assert loaded.generator.embeddings is shared
        assert loaded.generator_head.token_embedding is shared.word_embeddings
        assert (loaded.generator_head.token_embedding.embeddings
                is loaded.encoder.embeddings.word_embeddings.embeddings)
    assert len({id(v) for v in loaded.weights}) == len(loaded.weights)


def test_shared_word_table_is_stored_once(tmp_path):
    model = ElectraPretrainer(tiny_model_config(), objective())
    _, path = save_and_load(model, tmp_path)
    with zipfile.ZipFile(path) as archive, archive.open("model.weights.h5") as f:
        with h5py.File(f) as weights:
            shapes = []
            weights.visititems(lambda name, item: shapes.append((name, item.shape))
                               if isinstance(item, h5py.Dataset) else None)
    word_tables = [name for name, shape in shapes if shape == (VOCAB, 16)]
    # Keras stores a shared layer once, under the first attribute (in sorted order) reaching it.
    assert word_tables == ["discriminator/embeddings/word_embeddings/vars/0"]
    assert len(shapes) == len(model.weights)


@pytest.mark.slow
def test_loaded_pretrainer_keeps_its_optimizer_state_and_trains(pretraining_batch, tmp_path):
    model = ElectraPretrainer(tiny_model_config(), objective())
    model.compile(optimizer=create_optimizer(fast_optimizer_config()))
    model.optimizer.build(model.trainable_variables)
    rng = np.random.default_rng(4)
    for variable in model.optimizer.variables:  # as after some steps, without tracing a step
        integer = "int" in str(variable.dtype)
        variable.assign(np.full(variable.shape, 7) if integer else
                        rng.uniform(0.0, 1e-3, variable.shape).astype(variable.dtype))
    loaded, _ = save_and_load(model, tmp_path)

    assert_same_model(loaded, model)
    assert type(loaded.optimizer) is type(model.optimizer)
    assert int(loaded.optimizer.iterations.numpy()) == 7
    assert len(loaded.optimizer.variables) == len(model.optimizer.variables)
    for restored, saved in zip(loaded.optimizer.variables, model.optimizer.variables):
        np.testing.assert_array_equal(restored.numpy(), saved.numpy(), err_msg=saved.path)

    loaded.compile(optimizer=create_optimizer(fast_optimizer_config(warmup_steps=0)))
    dataset = tf.data.Dataset.from_tensors(pretraining_batch).repeat()
    history = loaded.fit(dataset, steps_per_epoch=1, epochs=1, verbose=0, shuffle=False).history
    assert np.isfinite(history["loss"][0]) and int(loaded.optimizer.iterations.numpy()) == 1
    assert not np.array_equal(loaded.discriminator_head.dense.kernel.numpy(),
                              model.discriminator_head.dense.kernel.numpy())


# ---- the task models --------------------------------------------------------------------------

TASK_MODELS = {
    "classifier": lambda: ElectraClassifier(tiny_model_config(), num_labels=3, dropout=0.2),
    "regressor": lambda: ElectraClassifier(tiny_model_config(), regression=True),
    "question_answerer": lambda: ElectraQuestionAnswerer(tiny_model_config(), beam_size=4,
                                                         answerable_weight=0.3),
    "question_answerer_independent": lambda: ElectraQuestionAnswerer(
        tiny_model_config(), head="independent", beam_size=3, loss_reduction="mean"),
    "tagger": lambda: ElectraTagger(tiny_model_config(), num_tags=5, name="my_tagger"),
}


@pytest.mark.parametrize("name", sorted(TASK_MODELS))
def test_task_model_round_trip(name, tmp_path):
    model = TASK_MODELS[name]()
    randomise(model, seed=3)
    loaded, _ = save_and_load(model, tmp_path)

    assert_same_model(loaded, model)
    assert type(loaded.head) is type(model.head)
    inputs = task_inputs()
    assert_same_outputs(loaded(inputs, training=False), model(inputs, training=False))


@pytest.mark.slow
def test_registration_happens_on_import(tmp_path):
    """A fresh process that imports electra_tf.models loads a .keras file by Keras alone."""
    model = ElectraQuestionAnswerer(tiny_model_config(), beam_size=2)
    path = str(tmp_path / "qa.keras")
    model.save(path)
    code = ("import sys, keras, electra_tf.models\n"
            "model = keras.saving.load_model(sys.argv[1])\n"
            "print(type(model).__name__, type(model.head).__name__, len(model.weights))\n")
    result = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True,
                            cwd=REPO, timeout=300,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["ElectraQuestionAnswerer", "JointSpanHead",
                                     str(len(model.weights))]


# ---- the layers -------------------------------------------------------------------------------

def _layers():
    config = tiny_model_config()
    embeddings = make_embeddings(config, name="embeddings")
    return {
        "embeddings": embeddings,
        "encoder": ElectraEncoder.from_model_config(config, embeddings, name="discriminator"),
        "discriminator_head": DiscriminatorHead(32, "gelu_approximate", 0.05),
        "generator_head": make_generator_head(embeddings.word_embeddings, "gelu_approximate",
                                              1e-7, name="generator_predictions"),
        "classification_head": ClassificationHead(3, dropout=0.3),
        "tagging_head": TokenTaggingHead(7),
        "joint_span_head": JointSpanHead(5, 0.4),
        "independent_span_head": IndependentSpanHead(6, 0.2),
    }


@pytest.mark.parametrize("name", sorted(_layers()))
def test_layer_serializes_by_registered_name(name):
    layer = _layers()[name]
    serialized = keras.layers.serialize(layer)
    assert serialized["registered_name"].startswith(
        "keras_hub>" if name == "generator_head" else "electra_tf>")
    clone = keras.layers.deserialize(serialized)
    assert type(clone) is type(layer)
    assert clone.get_config() == layer.get_config()


def test_deserialized_encoder_and_generator_head_own_their_tables():
    layers = _layers()
    encoder = keras.layers.deserialize(keras.layers.serialize(layers["encoder"]))
    assert isinstance(encoder.embeddings, ElectraEmbeddings)
    assert encoder.embeddings is not layers["embeddings"]
    head = keras.layers.deserialize(keras.layers.serialize(layers["generator_head"]))
    assert isinstance(head, keras_hub.layers.MaskedLMHead)
    assert head.token_embedding is not layers["embeddings"].word_embeddings
    assert head.token_embedding.input_dim == VOCAB
