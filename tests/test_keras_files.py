""".keras files reload with plain Keras in a new process after `import electra_tf`: the task
models with their preprocessors, compiled with the fine-tuning recipe (our AdamW, its warmup
and decay schedule, one step taken so the optimizer has state), and keras-hub's task over our
backbone; they predict on raw strings what they predicted before saving. Both import orders
(`electra_tf` before Keras, as isort sorts them, and after) are tried."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from electra_tf.keras_objects import REGISTERING_MODULES
from tests.run_helpers import REPO

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "film", "was", "great", "dull",
         "story", "ann", "wrote", "it", "in", "1990", "who", "when", "?", "."]
TEXTS = ["the film was great", "a dull story", "ann wrote it", "when was it ?"]
QUESTIONS, CONTEXTS = ["who wrote it ?", "when ?"], ["ann wrote it in 1990 .", "in 1990 ann wrote it"]

LOAD_AND_PREDICT = """
import json, sys
{imports}
import numpy as np
names, texts, questions, contexts = json.loads(sys.argv[2])
outputs = {{}}
for name in names:
    model = keras.models.load_model(f"{{sys.argv[1]}}/{{name}}.keras")
    assert model.optimizer is not None and int(model.optimizer.iterations) == 1, name
    x = {{"question_answerer": (questions, contexts),
          "tagger": [t.split() for t in texts]}}.get(name, texts)
    outputs[name] = [type(model).__name__, type(model.optimizer).__name__,
                     np.asarray(model.predict(x, verbose=0)).tolist()]
print(json.dumps(outputs))
"""


def _inputs(name):
    """Raw text as each model takes it: texts, sentences of words, (questions, contexts)."""
    return {"question_answerer": (QUESTIONS, CONTEXTS),
            "tagger": [text.split() for text in TEXTS]}.get(name, TEXTS)


def _predictions(model, name):
    return np.asarray(model.predict(_inputs(name), verbose=0)).tolist()


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """{name: (class, optimizer class, predictions)} of five models saved under a directory:
    the three task models and keras-hub's task over a WordPiece vocabulary, and a classifier
    over a SentencePiece model (its model file travels inside the .keras file)."""
    import keras_hub

    from electra_tf.convert.keras_hub import to_keras_hub_backbone
    from electra_tf.keras_hub_tasks import ElectraTextClassifier
    from electra_tf.models import ElectraClassifier, ElectraQuestionAnswerer, ElectraTagger
    from electra_tf.preprocessing.question_answerer import ElectraQuestionAnswererPreprocessor
    from electra_tf.preprocessing.tagger import ElectraTaggerPreprocessor
    from electra_tf.preprocessing.text_classifier import ElectraTextClassifierPreprocessor
    from electra_tf.text.sentencepiece_vocab import learn_sentencepiece
    from tests.models.helpers import tiny_model_config

    directory = tmp_path_factory.mktemp("keras_files")
    spm = str(directory / "spm.model")
    pieces = learn_sentencepiece(TEXTS * 20, 60, spm, character_coverage=1.0)
    config = tiny_model_config(vocab_size=len(VOCAB), activation="gelu_approximate")
    keras.utils.set_random_seed(0)
    models = {
        "classifier": ElectraClassifier(config, num_labels=2, preprocessor=(
            ElectraTextClassifierPreprocessor.from_vocabulary(VOCAB, sequence_length=16))),
        "tagger": ElectraTagger(config, num_tags=3, preprocessor=(
            ElectraTaggerPreprocessor.from_vocabulary(VOCAB, sequence_length=16))),
        "question_answerer": ElectraQuestionAnswerer(config, beam_size=2, preprocessor=(
            ElectraQuestionAnswererPreprocessor.from_vocabulary(
                VOCAB, sequence_length=24, doc_stride=4, max_query_length=8))),
        "sentencepiece_classifier": ElectraClassifier(
            tiny_model_config(vocab_size=pieces), num_labels=2,
            preprocessor=ElectraTextClassifierPreprocessor.from_vocabulary(
                spm, sequence_length=16)),
    }
    labels = {"classifier": np.array([1, 0, 1, 0]),
              "sentencepiece_classifier": np.array([1, 0, 1, 0]),
              "tagger": [[i % 3 for i in range(len(text.split()))] for text in TEXTS],
              "question_answerer": {"answer_start": [0, 12], "answer_text": ["ann", "1990"]}}
    for name, model in models.items():
        model.compile_for_finetuning(num_train_steps=10)
        model.fit(_inputs(name), labels[name], batch_size=len(QUESTIONS) if
                  name == "question_answerer" else 4, epochs=1, verbose=0)
    backbone = to_keras_hub_backbone(models["classifier"].encoder)
    tokenizer = keras_hub.models.ElectraTokenizer(vocabulary=VOCAB, lowercase=True)
    models["text_classifier"] = ElectraTextClassifier(
        backbone=backbone, num_classes=2,
        preprocessor=ElectraTextClassifierPreprocessor(tokenizer, sequence_length=16))
    models["text_classifier"].fit(TEXTS, labels["classifier"], batch_size=4, epochs=1, verbose=0)
    expected = {}
    for name, model in models.items():
        model.save(str(directory / f"{name}.keras"))
        expected[name] = [type(model).__name__, type(model.optimizer).__name__,
                          _predictions(model, name)]
    os.remove(spm)  # the reload must not need the model file
    return directory, expected


@pytest.mark.slow
@pytest.mark.parametrize("imports", ["import electra_tf\nimport keras",
                                     "import keras\nimport electra_tf"])
def test_plain_keras_reloads_every_task_model_in_a_fresh_process(saved, imports):
    directory, expected = saved
    result = subprocess.run(
        [sys.executable, "-c", LOAD_AND_PREDICT.format(imports=imports), str(directory),
         json.dumps([sorted(expected), TEXTS, QUESTIONS, CONTEXTS])],
        capture_output=True, text=True, cwd=REPO, timeout=300,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert result.returncode == 0, result.stderr[-3000:]
    # nothing to act on: no "Skipping variable loading for optimizer", no Keras warning
    assert "Skipping variable loading" not in result.stderr, result.stderr[-3000:]
    assert "Warning" not in result.stderr, result.stderr[-3000:]
    loaded = json.loads(result.stdout.splitlines()[-1])
    assert sorted(loaded) == sorted(expected)
    for name, (cls, optimizer, predictions) in expected.items():
        assert loaded[name][:2] == [cls, optimizer], name
        if name == "question_answerer":
            assert loaded[name][2] == predictions  # the answers' text
        else:
            np.testing.assert_allclose(loaded[name][2], predictions, rtol=1e-5, atol=1e-6,
                                       err_msg=name)
    assert expected["classifier"][1] == "AdamWeightDecay"


def test_every_module_that_registers_keras_classes_is_registered_on_import():
    """keras_objects.REGISTERING_MODULES names every module of the package that registers a
    class with Keras (one left out would be missing after `import electra_tf`)."""
    package = os.path.join(REPO, "electra_tf")
    registering = set()
    for directory, _, names in os.walk(package):
        for name in names:
            path = os.path.join(directory, name)
            if name.endswith(".py") and "register_keras_serializable(" in open(path).read():
                module = os.path.relpath(path[:-3], REPO).replace(os.sep, ".")
                registering.add(module)
    assert registering == set(REGISTERING_MODULES)
