"""One-call loading (`electra_tf.loading`, the models' `from_preset`): each kind of directory a
user has loads with the source's weights and gives the source's outputs."""

import dataclasses
import json
import os
import pathlib
import shutil
import types

import keras_hub
import numpy as np
import pytest
import sentencepiece
import yaml

from electra_tf.config import ElectraConfig, FinetuneConfig, QAConfig
from electra_tf.convert.keras_hub import to_keras_hub_backbone
from electra_tf.convert_checkpoint import write_electra_tf
from electra_tf.finetuning.runner import write_task_card
from electra_tf.loading import load, load_encoder, load_pretrainer, load_task_model
from electra_tf.models import (CorruptedInputMlmPretrainer, ElectraClassifier, ElectraEncoder,
                               ElectraPretrainer, ElectraQuestionAnswerer, ElectraTagger,
                               build_pretrainer)
from electra_tf.models.task_model import TaskModel
from electra_tf.preprocessing.sentencepiece_tokenizer import ElectraSentencePieceTokenizer
from electra_tf.preprocessing.question_answerer import ElectraQuestionAnswererPreprocessor
from electra_tf.preprocessing.tagger import ElectraTaggerPreprocessor
from electra_tf.preprocessing.text_classifier import ElectraTextClassifierPreprocessor
from electra_tf.text.sentencepiece_vocab import learn_sentencepiece
from electra_tf.training.checkpointing import CheckpointError, RunCheckpoint
from electra_tf.training.optimizer import create_optimizer
from tests.models.helpers import (fast_optimizer_config, masked_batch, objective, random_ids,
                                  tiny_model_config)
from tests.models.test_serialization import randomise


def weights(layer):
    return {v.path: v.numpy() for v in layer.weights}


def assert_same_weights(loaded: dict, expected: dict):
    assert sorted(loaded) == sorted(expected) and expected
    for path, value in expected.items():
        np.testing.assert_array_equal(loaded[path], value, err_msg=path)


def encoder_inputs(batch=3, length=12, seed=5):
    ids, mask = random_ids(batch, length, seed=seed)
    segments = np.zeros_like(ids)
    segments[:, length // 2:] = 1
    return ids, mask, segments * mask


def assert_same_encoder(loaded: ElectraEncoder, source: ElectraEncoder):
    """Loaded weights (by path, the source's `generator/` read as `discriminator/` for the MLM
    baseline) and outputs equal to the source encoder's."""
    expected = {path.replace(f"{source.name}/", "discriminator/", 1): value
                for path, value in weights(source).items()}
    assert_same_weights(weights(loaded), expected)
    ids, mask, segments = encoder_inputs()
    np.testing.assert_allclose(loaded(ids, mask, segments, training=False),
                               source(ids, mask, segments, training=False), rtol=0, atol=1e-6)


def assert_same_pretrainer(loaded, source):
    assert type(loaded) is type(source)
    assert loaded.model_config == source.model_config and loaded.objective == source.objective
    assert_same_weights(weights(loaded), weights(source))
    ids, mask = random_ids(4, 16, seed=1)
    batch = masked_batch(ids, mask)
    expected = source(batch, training=False)
    actual = loaded(batch, training=False)
    for key in expected:
        np.testing.assert_allclose(actual[key], expected[key], rtol=0, atol=1e-6, err_msg=key)


# ---- the sources ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pretraining_run(tmp_path_factory):
    """A run directory as run_pretraining leaves it: config.yaml, checkpoints ckpt-3 and ckpt-5
    (RunCheckpoint: weights, optimizer, dropout seeds, batches seen)."""
    run = tmp_path_factory.mktemp("pretraining_run")
    config = ElectraConfig(model=tiny_model_config(), objective=objective(),
                           optimizer=fast_optimizer_config())
    config = dataclasses.replace(config, run=dataclasses.replace(config.run, max_seq_length=32))
    (run / "config.yaml").write_text(config.validate().to_yaml())
    model = ElectraPretrainer(config.model, config.objective)
    model.compile(optimizer=create_optimizer(config.optimizer))
    checkpoint = RunCheckpoint(model, str(run / "checkpoints"))
    randomise(model, seed=3)
    at_step_3 = weights(model)
    checkpoint.save(3)
    randomise(model, seed=5)
    checkpoint.save(5)
    return types.SimpleNamespace(path=str(run), model=model, at_step_3=at_step_3)


@pytest.fixture(scope="module")
def gdes_run(tmp_path_factory):
    """A GDES pretraining run (model.embedding_sharing gdes) whose residual table is not zero."""
    run = tmp_path_factory.mktemp("gdes_run")
    config = ElectraConfig(model=tiny_model_config(embedding_sharing="gdes"),
                           objective=objective(), optimizer=fast_optimizer_config())
    config = dataclasses.replace(config, run=dataclasses.replace(config.run, max_seq_length=32))
    (run / "config.yaml").write_text(config.validate().to_yaml())
    model = ElectraPretrainer(config.model, config.objective)
    model.compile(optimizer=create_optimizer(config.optimizer))
    randomise(model, seed=4)
    assert np.any(model.discriminator.embeddings.residual_word_embeddings.embeddings.numpy())
    RunCheckpoint(model, str(run / "checkpoints")).save(2)
    return types.SimpleNamespace(path=str(run), model=model)


def test_a_gdes_runs_discriminator_loads_as_a_plain_electra_encoder(gdes_run):
    ids, mask, segments = encoder_inputs()
    pretrained = gdes_run.model.discriminator(ids, mask, segments, training=False)
    encoder = load_encoder(gdes_run.path)
    np.testing.assert_allclose(encoder.embeddings.word_embeddings.embeddings.numpy(),
                               gdes_run.model.discriminator.embeddings.effective_word_table(),
                               rtol=0, atol=1e-7)
    np.testing.assert_allclose(encoder(ids, mask, segments, training=False), pretrained,
                               rtol=0, atol=1e-5)
    classifier = ElectraClassifier.from_preset(gdes_run.path, num_labels=2)
    np.testing.assert_allclose(classifier.encode({"input_ids": ids, "input_mask": mask,
                                                  "segment_ids": segments}), pretrained,
                               rtol=0, atol=1e-5)
    again = load_pretrainer(gdes_run.path)  # the pretrainer itself keeps shared and residual
    assert_same_weights(weights(again), weights(gdes_run.model))


def _converted(directory, config, objective_config=None):
    pretrainer = build_pretrainer(config, objective_config or objective())
    randomise(pretrainer, seed=7)
    write_electra_tf(pretrainer, str(directory), None)
    return types.SimpleNamespace(path=str(directory), model=pretrainer)


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """An output directory of `convert_checkpoint --to electra_tf`."""
    return _converted(tmp_path_factory.mktemp("converted"), tiny_model_config())


def _keras_hub_preset(directory, with_tokenizer):
    """A preset as `convert_checkpoint --to keras_hub` writes it, with or without its tokenizer.
    keras-hub's encoder uses the tanh GELU, so the source does too: outputs then match."""
    pretrainer = ElectraPretrainer(tiny_model_config(activation="gelu_approximate"), objective())
    randomise(pretrainer, seed=9)
    to_keras_hub_backbone(pretrainer.discriminator).save_to_preset(str(directory))
    if with_tokenizer:
        vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "dog", "##s"]
        keras_hub.models.ElectraTokenizer(vocabulary=vocabulary).save_to_preset(str(directory))
        assert os.path.isfile(os.path.join(directory, "tokenizer.json"))
    return types.SimpleNamespace(path=str(directory), model=pretrainer)


@pytest.fixture(scope="module")
def keras_hub_preset(tmp_path_factory):
    return _keras_hub_preset(tmp_path_factory.mktemp("keras_hub"), with_tokenizer=False)


@pytest.fixture(scope="module")
def keras_hub_preset_with_tokenizer(tmp_path_factory):
    return _keras_hub_preset(tmp_path_factory.mktemp("keras_hub_tokenizer"), with_tokenizer=True)


# ---- pretrainers ------------------------------------------------------------------------------

def test_a_pretraining_run_loads_at_its_newest_checkpoint(pretraining_run):
    loaded = load(pretraining_run.path)
    assert_same_pretrainer(loaded, pretraining_run.model)
    assert_same_pretrainer(ElectraPretrainer.from_preset(pretraining_run.path),
                           pretraining_run.model)
    # A checkpoint prefix loads that checkpoint; the run's checkpoints/ its newest.
    older = load(os.path.join(pretraining_run.path, "checkpoints", "ckpt-3"))
    assert_same_weights(weights(older), pretraining_run.at_step_3)
    newest = load_encoder(os.path.join(pretraining_run.path, "checkpoints"))
    assert_same_encoder(newest, pretraining_run.model.discriminator)


def test_a_converted_directory_loads_as_its_pretrainer(converted):
    assert_same_pretrainer(load(converted.path), converted.model)
    assert_same_pretrainer(load(pathlib.Path(converted.path)), converted.model)  # os.PathLike


def test_an_ablation_run_loads_as_its_class(tmp_path):
    source = _converted(tmp_path, tiny_model_config(), objective(variant="replace_mlm"))
    loaded = ElectraPretrainer.from_preset(source.path)
    assert isinstance(loaded, CorruptedInputMlmPretrainer)
    assert_same_pretrainer(loaded, source.model)
    assert isinstance(CorruptedInputMlmPretrainer.from_preset(source.path),
                      CorruptedInputMlmPretrainer)


@pytest.mark.parametrize("preset", ["keras_hub_preset", "keras_hub_preset_with_tokenizer"])
def test_a_keras_hub_preset_gives_the_encoder_or_a_pretrainer_around_it(preset, request):
    keras_hub_preset = request.getfixturevalue(preset)
    encoder = load(keras_hub_preset.path)
    assert isinstance(encoder, ElectraEncoder) and encoder.activation == "gelu_approximate"
    assert_same_encoder(encoder, keras_hub_preset.model.discriminator)
    pretrainer = ElectraPretrainer.from_preset(keras_hub_preset.path)
    assert_same_encoder(pretrainer.encoder, keras_hub_preset.model.discriminator)


# ---- encoders ---------------------------------------------------------------------------------

@pytest.mark.parametrize("source", ["pretraining_run", "converted", "keras_hub_preset",
                                    "keras_hub_preset_with_tokenizer"])
def test_the_encoder_loads_from_every_kind_of_directory(source, request):
    source = request.getfixturevalue(source)
    encoder = ElectraEncoder.from_preset(source.path)
    assert isinstance(encoder, ElectraEncoder) and encoder.embeddings.built
    assert_same_encoder(encoder, source.model.discriminator)


def test_the_mlm_baseline_encoder_is_its_generator(tmp_path):
    source = _converted(tmp_path, tiny_model_config(), objective(electra_objective=False))
    assert_same_encoder(load_encoder(source.path), source.model.generator)


# ---- task models ------------------------------------------------------------------------------

TASKS = {
    "classifier": (ElectraClassifier, dict(num_labels=3), "task_specific/output/kernel", (32, 3)),
    "question_answerer": (ElectraQuestionAnswerer, dict(head="independent", beam_size=3),
                          "task_specific/end_logits/kernel", (32, 1)),
    "tagger": (ElectraTagger, dict(num_tags=5), "task_specific/output/kernel", (32, 5)),
}


@pytest.mark.parametrize("task, source", [
    ("classifier", "pretraining_run"), ("classifier", "converted"),
    ("classifier", "keras_hub_preset"), ("question_answerer", "pretraining_run"),
    ("tagger", "keras_hub_preset_with_tokenizer")])
def test_a_task_model_starts_from_a_pretrained_directory(task, source, request):
    model_class, kwargs, head_kernel, head_shape = TASKS[task]
    source = request.getfixturevalue(source)
    model = model_class.from_preset(source.path, **kwargs)
    assert type(model) is model_class
    assert all(model.get_config()[key] == value for key, value in kwargs.items())
    assert_same_encoder(model.encoder, source.model.discriminator)
    assert weights(model)[head_kernel].shape == head_shape  # a fresh head


FINE_TUNED = {
    "classification": (
        lambda config: ElectraClassifier(config.model, 3, dropout=config.finetune.head_dropout,
                                         loss_reduction=config.finetune.loss_reduction),
        {"task": "csv", "kind": "classification", "labels": ["a", "b", "c"],
         "label_range": [0.0, 1.0], "pair": True}),
    "regression": (
        lambda config: ElectraClassifier(config.model, regression=True,
                                         dropout=config.finetune.head_dropout,
                                         loss_reduction=config.finetune.loss_reduction),
        {"task": "glue/sts", "kind": "classification", "labels": None,
         "label_range": [0.0, 5.0], "pair": True}),
    "qa": (
        lambda config: ElectraQuestionAnswerer(config.model, head=config.qa.head,
                                               beam_size=config.qa.beam_size,
                                               answerable_weight=config.qa.answerable_weight,
                                               loss_reduction=config.finetune.loss_reduction),
        {"task": "squad/v2.0", "kind": "qa", "version": "v2.0", "max_seq_length": 16,
         "head": "independent", "beam_size": 3, "max_answer_length": 30}),
    "tagging": (
        lambda config: ElectraTagger(config.model, 4,
                                     loss_reduction=config.finetune.loss_reduction),
        {"task": "chunk", "kind": "tagging", "tags": ["O", "B-NP", "I-NP", "E-NP"]}),
}


def fine_tuning_run(directory, kind, vocab_file=""):
    """A trial directory as run_finetuning leaves it (runner.run_trial): config.yaml, task.json,
    checkpoints/ (RunCheckpoint), built as the task's `build_model` builds the model."""
    build, card = FINE_TUNED[kind]
    config = FinetuneConfig(model=tiny_model_config(),
                            qa=QAConfig(head="independent", beam_size=3, answerable_weight=0.3))
    config = dataclasses.replace(config, finetune=dataclasses.replace(
        config.finetune, max_seq_length=16, head_dropout=0.2, loss_reduction="mean",
        vocab_file=vocab_file)).validate()
    model = build(config)
    model.compile(optimizer=create_optimizer(config.optimizer, config.model.num_layers))
    randomise(model, seed=11)
    os.makedirs(directory, exist_ok=True)
    write_task_card(str(directory), types.SimpleNamespace(card=lambda: card), config)
    RunCheckpoint(model, os.path.join(directory, "checkpoints")).save(2)
    return model


@pytest.mark.parametrize("kind", sorted(FINE_TUNED))
def test_a_fine_tuning_run_loads_as_its_fine_tuned_model(kind, tmp_path):
    source = fine_tuning_run(tmp_path, kind)
    loaded = load(str(tmp_path))
    assert type(loaded) is type(source)
    config, expected = loaded.get_config(), source.get_config()
    assert {**config, "name": None} == {**expected, "name": None}
    assert_same_weights(weights(loaded), weights(source))
    ids, mask, segments = encoder_inputs()
    inputs = {"input_ids": ids, "input_mask": mask, "segment_ids": segments}
    expected, actual = source(inputs, training=False), loaded(inputs, training=False)
    for key in (expected if isinstance(expected, dict) else [None]):
        np.testing.assert_allclose(actual[key] if key else actual,
                                   expected[key] if key else expected, rtol=0, atol=1e-6)
    # The class's from_preset gives the same model, and its encoder alone loads too.
    assert type(type(source).from_preset(str(tmp_path))) is type(source)
    assert_same_encoder(load_encoder(str(tmp_path)), source.encoder)


def test_a_fine_tuning_run_is_refused_as_another_kind(tmp_path):
    fine_tuning_run(tmp_path / "trial_0", "tagging")
    fine_tuning_run(tmp_path / "trial_1", "tagging")
    with pytest.raises(CheckpointError, match="ElectraTagger.*not an ElectraClassifier"):
        ElectraClassifier.from_preset(str(tmp_path / "trial_0"))
    with pytest.raises(CheckpointError, match="task model, not a pretrainer"):
        ElectraPretrainer.from_preset(str(tmp_path / "trial_0"))
    with pytest.raises(CheckpointError, match="2 trials.*trial_0"):
        load(str(tmp_path))
    # An override that resizes the head no longer fits the checkpoint.
    with pytest.raises(CheckpointError, match="cannot initialise"):
        ElectraTagger.from_preset(str(tmp_path / "trial_0"), num_tags=7)


# ---- .keras files and errors ------------------------------------------------------------------

def test_a_keras_file_loads_through_every_entry(tmp_path):
    source = ElectraTagger(tiny_model_config(), num_tags=3)
    randomise(source, seed=13)
    path = str(tmp_path / "tagger.keras")
    source.save(path)
    for loaded in (load(path), ElectraTagger.from_preset(path),
                   load_task_model(TaskModel, path)):
        assert type(loaded) is ElectraTagger
        assert_same_weights(weights(loaded), weights(source))
    assert_same_encoder(load_encoder(path), source.encoder)
    with pytest.raises(CheckpointError, match="holds an ElectraTagger, not an ElectraClassifier"):
        ElectraClassifier.from_preset(path)


def test_what_is_not_a_model_is_refused_naming_what_was_expected(tmp_path, pretraining_run):
    expected = "config.yaml \\+ checkpoints/"
    with pytest.raises(CheckpointError, match=f"with neither config.yaml.*{expected}"):
        load(str(tmp_path))
    with pytest.raises(CheckpointError, match=f"does not exist; expected .*{expected}"):
        load(str(tmp_path / "missing"))
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(CheckpointError, match="is a file, not"):
        load(str(tmp_path / "notes.txt"))
    bert = tmp_path / "bert"
    bert.mkdir()
    (bert / "config.json").write_text(json.dumps({"class_name": "BertBackbone",
                                                  "registered_name": "keras_hub>BertBackbone"}))
    with pytest.raises(CheckpointError, match="not a keras-hub ElectraBackbone preset.*Bert"):
        load(str(bert))
    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "config.json").write_text(json.dumps({"model_type": "electra", "hidden_size": 256}))
    with pytest.raises(CheckpointError, match="Hugging Face.*--from hf"):
        load(str(hf))
    google = tmp_path / "electra_small"
    google.mkdir()
    (google / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-1000000"\n')
    with pytest.raises(CheckpointError, match="--from google"):
        load(str(google))
    saved_model = tmp_path / "export"
    saved_model.mkdir()
    (saved_model / "saved_model.pb").write_bytes(b"")
    with pytest.raises(CheckpointError, match="tf.saved_model.load"):
        load(str(saved_model))
    empty_run = tmp_path / "empty_run"
    (empty_run / "checkpoints").mkdir(parents=True)
    (empty_run / "config.yaml").write_text(
        open(os.path.join(pretraining_run.path, "config.yaml")).read())
    with pytest.raises(CheckpointError, match="holds no checkpoint"):
        load(str(empty_run))
    (empty_run / "config.yaml").write_text("model:\n  hidden_sise: 3\n")
    for loader in (load_encoder, load_pretrainer):
        with pytest.raises(CheckpointError, match="hidden_sise"):
            loader(str(empty_run))
    with pytest.raises(CheckpointError, match="no task head.*ElectraClassifier.from_preset"):
        load_task_model(TaskModel, pretraining_run.path)
    with pytest.raises(CheckpointError, match="holds an ElectraPretrainer"):
        CorruptedInputMlmPretrainer.from_preset(pretraining_run.path)



def test_a_classifier_from_a_run_with_a_vocabulary_takes_raw_strings(tmp_path, pretraining_run):
    assert ElectraClassifier.from_preset(pretraining_run.path, num_labels=2).preprocessor is None
    run = tmp_path / "run"
    shutil.copytree(pretraining_run.path, run)
    (run / "vocab.txt").write_text("\n".join(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "dog", "##s"]) + "\n")
    model = ElectraClassifier.from_preset(str(run), num_labels=2)
    assert isinstance(model.preprocessor, ElectraTextClassifierPreprocessor)
    assert model.predict(["the dogs", "a dog"], verbose=0).shape == (2, 2)
    features = model.preprocessor(["the dogs"])
    np.testing.assert_array_equal(features["input_ids"][0, :5], [2, 5, 6, 7, 3])


def test_a_question_answerer_and_a_tagger_from_a_run_get_their_own_preprocessors(
        tmp_path, pretraining_run):
    run = tmp_path / "run"
    shutil.copytree(pretraining_run.path, run)
    (run / "vocab.txt").write_text("\n".join(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "dog", "##s"]) + "\n")
    answerer = ElectraQuestionAnswerer.from_preset(str(run), beam_size=3)
    preprocessor = answerer.preprocessor
    assert isinstance(preprocessor, ElectraQuestionAnswererPreprocessor)
    # the QA recipe (512, 64, 128) fitted to the tiny encoder's 64 positions
    assert (preprocessor.sequence_length, preprocessor.max_query_length,
            preprocessor.doc_stride) == (64, 16, 45)
    assert answerer.predict((["the dog"], ["the dogs"]), verbose=0).shape == (1,)
    tagger = ElectraTagger.from_preset(str(run), num_tags=3)
    assert isinstance(tagger.preprocessor, ElectraTaggerPreprocessor)
    assert len(tagger.predict_word_tags([["the", "dogs"]])[0]) == 2


@pytest.fixture(scope="module")
def sentencepiece_model(tmp_path_factory):
    """(path, `sentencepiece` processor) of a model of fewer pieces than the tiny vocabulary."""
    path = str(tmp_path_factory.mktemp("spm") / "spm.model")
    learn_sentencepiece(["the dogs ran", "a dog sat", "the cat sat on the dog"] * 50,
                        40, path, character_coverage=1.0)
    return path, sentencepiece.SentencePieceProcessor(model_file=path)


def test_a_task_model_from_a_run_pretrained_without_dropout_fine_tunes_with_it(
        tmp_path, pretraining_run):
    run = tmp_path / "run"
    shutil.copytree(pretraining_run.path, run)
    config = yaml.safe_load((run / "config.yaml").read_text())
    config["model"].update(hidden_dropout=0.0, attention_dropout=0.0)
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    assert load_pretrainer(str(run)).model_config.hidden_dropout == 0.0  # as it pretrained
    classifier = ElectraClassifier.from_preset(str(run), num_labels=2)
    assert (classifier.model_config.hidden_dropout,
            classifier.model_config.attention_dropout) == (0.1, 0.1)


def test_a_sentencepiece_run_gives_task_models_that_take_raw_strings(
        tmp_path, pretraining_run, sentencepiece_model):
    path, processor = sentencepiece_model
    run = tmp_path / "run"
    shutil.copytree(pretraining_run.path, run)
    config = yaml.safe_load((run / "config.yaml").read_text())
    config["run"]["vocab_file"] = path  # as run_pretraining writes a SentencePiece run's
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    classifier = ElectraClassifier.from_preset(str(run), num_labels=2)
    assert isinstance(classifier.preprocessor.tokenizer, ElectraSentencePieceTokenizer)
    features = classifier.preprocessor(x=(["the dogs sat"], ["a cat"]))
    expected = [2, *processor.encode("the dogs sat"), 3, *processor.encode("a cat"), 3]
    np.testing.assert_array_equal(features["input_ids"][0, :len(expected)], expected)
    assert classifier.predict(["the dogs sat"], verbose=0).shape == (1, 2)
    tagger = ElectraTagger.from_preset(str(run), num_tags=3)
    assert len(tagger.predict_word_tags([["the", "dogs", "sat"]])[0]) == 3
    answerer = ElectraQuestionAnswerer.from_preset(str(run), beam_size=3)
    (answer,) = answerer.predict((["who sat?"], ["the dog sat"]), verbose=0)
    assert answer in "the dog sat"  # SentencePiece pieces mapped back to the words


@pytest.mark.parametrize("kind", ["classification", "tagging"])
def test_a_fine_tuned_sentencepiece_run_loads_with_its_tokenizer(kind, tmp_path,
                                                                 sentencepiece_model):
    path, processor = sentencepiece_model
    source = fine_tuning_run(tmp_path, kind, vocab_file=path)
    loaded = load(str(tmp_path))
    assert isinstance(loaded.preprocessor.tokenizer, ElectraSentencePieceTokenizer)
    assert_same_weights(weights(loaded), weights(source))
    if kind == "tagging":
        features = loaded.preprocessor([["the", "dogs"]])
        pieces = [processor.encode("the"), processor.encode("dogs")]
    else:
        features = loaded.preprocessor(["the dogs"])
        pieces = [processor.encode("the dogs")]
    expected = [2, *(i for p in pieces for i in p), 3]
    np.testing.assert_array_equal(features["input_ids"][0, :len(expected)], expected)
    raw = loaded.predict(loaded.preprocessor(["the dogs"] if kind != "tagging"
                                              else [["the", "dogs"]]), verbose=0)
    direct = source({k: features[k] for k in ("input_ids", "input_mask", "segment_ids")},
                    training=False)
    np.testing.assert_allclose(raw, direct, rtol=0, atol=1e-5)


def test_a_classifier_from_a_keras_hub_preset_with_a_tokenizer_takes_raw_strings(
        keras_hub_preset, keras_hub_preset_with_tokenizer):
    assert ElectraClassifier.from_preset(keras_hub_preset.path, num_labels=2).preprocessor is None
    model = ElectraClassifier.from_preset(keras_hub_preset_with_tokenizer.path, num_labels=2)
    assert isinstance(model.preprocessor, ElectraTextClassifierPreprocessor)
    assert model.preprocessor.sequence_length == 64  # the tiny encoder's positions
    # the preset's tokenizer is cased (keras-hub's default): "The" is [UNK], "the" is not
    np.testing.assert_array_equal(model.preprocessor(["the dogs The"])["input_ids"][0, :6],
                                  [2, 5, 6, 7, 1, 3])
    assert model.predict(["the dogs"], verbose=0).shape == (1, 2)
