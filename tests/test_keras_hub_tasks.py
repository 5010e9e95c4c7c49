"""keras-hub users: TextClassifier.from_preset of an ELECTRA preset is ours, on raw strings."""

import warnings

import keras
import keras_hub
import numpy as np
import pytest

import electra_tf.keras_hub_tasks  # noqa: F401  registers ElectraTextClassifier with keras-hub
from electra_tf.convert.keras_hub import to_keras_hub_backbone
from electra_tf.keras_hub_tasks import ElectraTextClassifier
from electra_tf.models import ElectraClassifier
from electra_tf.preprocessing.text_classifier import ElectraTextClassifierPreprocessor
from tests.convert.test_keras_hub import _randomise
from tests.models.helpers import tiny_model_config

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "great", "film", "dull", "what",
         "ride", "the", "story", "was"]
TEXTS = ["the story was great", "dull film", "a great film", "what a ride", "the film was dull"]


@pytest.fixture(scope="module")
def preset(tmp_path_factory):
    """An ELECTRA preset as `convert_checkpoint --to keras_hub` writes it: backbone + tokenizer.

    The encoder's weights are random (`_randomise`): kernels variance-preserving, LayerNorm
    scales near 1, offsets and embeddings at 0.05. With the initial weights (0.02, scales 1)
    or every kernel at 0.05 attention barely mixes the tokens, five texts' [CLS] vectors gave
    logits within 0.1-0.5% of their scale of each other, and a tokenization that lost the text
    would not show; here they differ by 8% or more."""
    directory = str(tmp_path_factory.mktemp("preset"))
    keras.utils.set_random_seed(0)
    source = ElectraClassifier(tiny_model_config(activation="gelu_approximate"), num_labels=2)
    _randomise(source.encoder.weights, seed=0, scale=None)
    to_keras_hub_backbone(source.encoder).save_to_preset(directory)
    keras_hub.models.ElectraTokenizer(vocabulary=VOCAB, lowercase=True,
                                      strip_accents=True).save_to_preset(directory)
    return directory, source


def fine_tuned_run_with_vocabulary(tmp_path, kind="classification"):
    """(a fine-tuning trial directory (a 3-class classifier by default) whose config names a
    vocabulary, its model)."""
    import yaml

    from tests.test_loading import fine_tuning_run

    run = tmp_path / "run"
    model = fine_tuning_run(run, kind)
    (tmp_path / "vocab.txt").write_text("".join(t + "\n" for t in VOCAB))
    config = yaml.safe_load((run / "config.yaml").read_text())
    config["finetune"]["vocab_file"] = str(tmp_path / "vocab.txt")
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    return run, model


@pytest.mark.slow
def test_the_three_lines_of_keras_hub_work_with_electra(preset):
    classifier = keras_hub.models.TextClassifier.from_preset(preset[0], num_classes=2)
    assert isinstance(classifier, ElectraTextClassifier)
    assert isinstance(classifier.preprocessor, ElectraTextClassifierPreprocessor)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        classifier.fit(x=["a great film", "dull"], y=[1, 0], batch_size=2, verbose=0)
    # the backbone's pooler, which the [CLS] head does not read, is not trained: no warning
    assert not [w for w in caught if "Gradients do not exist" in str(w.message)]
    assert classifier.predict(["what a ride"], verbose=0).shape == (1, 2)


def test_the_backbone_is_the_pretrained_encoder_and_the_head_reads_cls(preset):
    """The same encoder: its [CLS] vector under our head's weights gives our logits. And the
    logits are the texts': every two of five texts differ by at least 2% of the largest logit
    (before the bias), so a preprocessor that lost the text (the same ids for every text, which
    the first comparison cannot see) fails."""
    directory, source = preset
    classifier = ElectraTextClassifier.from_preset(directory, num_classes=2)
    features = classifier.preprocessor(TEXTS)
    sequence = source.encode(features, training=False)
    kernel = np.random.default_rng(0).normal(0.0, 32 ** -0.5, (32, 2)).astype(np.float32)
    classifier.output_dense.set_weights([kernel, np.array([0.0, 1.0], np.float32)])
    want = keras.ops.convert_to_numpy(sequence[:, 0]) @ kernel + [0.0, 1.0]
    logits = classifier.predict(TEXTS, verbose=0)
    np.testing.assert_allclose(logits, want, atol=1e-4, rtol=0)
    scale = np.abs(want - [0.0, 1.0]).max()
    for i in range(len(TEXTS)):
        for j in range(i):
            assert np.abs(logits[i] - logits[j]).max() >= 0.02 * scale, (TEXTS[i], TEXTS[j])


@pytest.mark.slow
def test_a_fine_tuned_task_saves_and_loads_as_a_preset(preset, tmp_path):
    classifier = ElectraTextClassifier.from_preset(preset[0], num_classes=3)
    classifier.fit(x=["a great film", "dull", "what a ride"], y=[1, 0, 2], batch_size=3,
                   verbose=0)
    classifier.save_to_preset(str(tmp_path))
    loaded = keras_hub.models.TextClassifier.from_preset(str(tmp_path))
    assert isinstance(loaded, ElectraTextClassifier) and loaded.num_classes == 3
    texts = ["the film was dull", "a ride"]
    np.testing.assert_allclose(loaded.predict(texts, verbose=0),
                               classifier.predict(texts, verbose=0), atol=1e-5, rtol=0)
    # the backbone and tokenizer stay loadable by keras-hub alone
    assert type(keras_hub.models.ElectraBackbone.from_preset(str(tmp_path))) is \
        keras_hub.models.ElectraBackbone


def test_a_tokenizer_larger_than_the_backbone_is_refused(preset):
    backbone = keras_hub.models.ElectraBackbone.from_preset(preset[0])
    too_many = VOCAB + [f"w{i}" for i in range(200)]
    with pytest.raises(ValueError, match="has 214 tokens, more than the backbone's 120"):
        ElectraTextClassifier(backbone, num_classes=2, preprocessor=
                              ElectraTextClassifierPreprocessor.from_vocabulary(too_many))


@pytest.mark.slow
def test_a_fine_tuned_run_takes_strings_and_becomes_a_whole_keras_hub_preset(tmp_path):
    import electra_tf
    from electra_tf.keras_hub_tasks import to_keras_hub_text_classifier

    run, source = fine_tuned_run_with_vocabulary(tmp_path)
    loaded = electra_tf.load(str(run))
    assert loaded.preprocessor.sequence_length == 16  # the run's own length
    texts = ["the story was great", "a dull film"]
    ours = loaded.predict(texts, verbose=0)
    features = loaded.preprocessor(texts)
    np.testing.assert_allclose(ours, source(features, training=False), atol=1e-6, rtol=0)

    preset = str(tmp_path / "preset")
    to_keras_hub_text_classifier(loaded).save_to_preset(preset)
    theirs = keras_hub.models.TextClassifier.from_preset(preset)
    assert isinstance(theirs, ElectraTextClassifier) and theirs.num_classes == 3
    # the tiny encoder uses the exact GELU, keras-hub's backbone the tanh one
    np.testing.assert_allclose(theirs.predict(texts, verbose=0), ours, atol=5e-3, rtol=0)
    with pytest.raises(ValueError, match="a regression head"):
        to_keras_hub_text_classifier(ElectraClassifier(tiny_model_config(), regression=True))


@pytest.mark.parametrize("kind", ["classification", "tagging"])
@pytest.mark.slow
def test_convert_checkpoint_writes_a_fine_tuned_models_whole_preset(tmp_path, kind):
    from electra_tf.keras_hub_tasks import ElectraTokenClassifier
    from tests.run_helpers import run_in_process

    run, source = fine_tuned_run_with_vocabulary(tmp_path, kind)
    result = run_in_process(["--from", "electra_tf", "--input", str(run), "--to", "keras_hub",
                             "--output_dir", str(tmp_path / "preset")],
                            module="electra_tf.convert_checkpoint")
    assert result.returncode == 0, result.stderr[-2000:]
    if kind == "classification":
        assert "converted a fine-tuned classifier (3 classes) -> keras_hub" in result.stdout
        loaded = keras_hub.models.TextClassifier.from_preset(str(tmp_path / "preset"))
        assert isinstance(loaded, ElectraTextClassifier)
        assert loaded.predict(["a great film"], verbose=0).shape == (1, 3)
    else:
        assert (f"converted a fine-tuned tagger ({source.num_tags} tags) -> keras_hub "
                "ElectraTokenClassifier") in result.stdout
        loaded = ElectraTokenClassifier.from_preset(str(tmp_path / "preset"))
        assert len(loaded.predict_word_tags([["a", "great", "film"]])[0]) == 3


@pytest.mark.parametrize("cls, native", [
    (ElectraTextClassifier, "electra_tf.ElectraClassifier.from_preset(run_dir, num_labels=...)"),
    ("ElectraTokenClassifier", "electra_tf.ElectraTagger.from_preset(run_dir, num_tags=...)"),
    ("ElectraMaskedLM", "to_keras_hub_masked_lm(run_dir) converts its generator")])
def test_a_run_directory_given_to_a_keras_hub_task_names_the_call_that_reads_it(cls, native):
    import electra_tf.keras_hub_tasks as tasks
    from tests.run_helpers import REPO

    cls = getattr(tasks, cls) if isinstance(cls, str) else cls
    run = f"{REPO}/tests/fixtures/old_layout/pretraining_run"
    with pytest.raises(ValueError, match="is an electra_tf pretraining directory, not a keras-hub "
                                         "preset") as refused:
        cls.from_preset(run, num_classes=2) if cls is ElectraTextClassifier else \
            cls.from_preset(run)
    assert native in str(refused.value)
    assert f"convert_checkpoint --from electra_tf --input {run} --to keras_hub" in str(
        refused.value)
