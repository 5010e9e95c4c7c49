"""SavedModel export of fine-tuned classifiers and regressors: numerics in a TensorFlow-only
process, the op allowlist of serving_default, serve_text against Python featurization."""

import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.config import ModelConfig
from electra_tf.task_data.classification_data import Example
from electra_tf.task_data.classification_features import LabelSpace, featurize
from electra_tf.text.tokenization import load_vocabulary, make_tokenizer, special_ids
from electra_tf.export.classifier import export_classifier
from electra_tf.models.classifier import ElectraClassifier
from tests.run_helpers import write_vocab
from tests.test_export import (BLOCK_NON_TF_IMPORTS, OTHER_SAVEDMODEL_OPS, SERVING_DEFAULT_OPS,
                               TOKENS, forbidden_ops, padded_inputs, savedmodel_ops)

LABELS = ("contradiction", "entailment", "neutral")
CONFIG = ModelConfig(vocab_size=len(TOKENS), embedding_size=16, hidden_size=32, num_layers=2,
                     num_heads=2, intermediate_size=64, max_position_embeddings=64)

# Every test exports fine-tuned models (or trains one): the export basics are in the fast tier
# through tests/test_export.py.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def vocab_file(tmp_path_factory):
    return write_vocab(tmp_path_factory.mktemp("vocab") / "vocab.txt", TOKENS)


@pytest.fixture(scope="module")
def classifier():
    keras.utils.set_random_seed(3)
    model = ElectraClassifier(CONFIG, num_labels=3)
    for variable in model.trainable_variables:  # a head with signal, not near-zero logits
        if variable.path.startswith("task_specific/"):
            variable.assign(np.random.default_rng(0).normal(size=variable.shape) * 0.5)
    return model


@pytest.fixture(scope="module")
def regressor():
    keras.utils.set_random_seed(4)
    return ElectraClassifier(CONFIG, regression=True)


@pytest.fixture(scope="module")
def exports(classifier, regressor, vocab_file, tmp_path_factory):
    root = tmp_path_factory.mktemp("exports")
    return {
        "classifier": export_classifier(classifier, str(root / "classifier"), task="glue/mnli",
                                        label_names=LABELS),
        "regressor": export_classifier(regressor, str(root / "regressor"), task="glue/stsb",
                                       label_range=(0.0, 5.0)),
        "text": export_classifier(classifier, str(root / "text"), task="glue/mnli",
                                  label_names=LABELS, with_tokenizer=True, pair=True,
                                  vocab_file=vocab_file, max_seq_length=12),
    }


def keras_outputs(model, ids, mask, segments):
    return keras.ops.convert_to_numpy(model({"input_ids": ids, "input_mask": mask,
                                             "segment_ids": segments}, training=False))


SERVE = BLOCK_NON_TF_IMPORTS + textwrap.dedent("""
    import numpy as np
    import tensorflow as tf

    classifier_dir, regressor_dir, inputs_path, outputs_path = sys.argv[1:5]
    data = np.load(inputs_path)
    inputs = {name: tf.constant(data[name]) for name in ("input_ids", "input_mask", "segment_ids")}
    classifier = tf.saved_model.load(classifier_dir)
    out = classifier.signatures["serving_default"](**inputs)
    regressor = tf.saved_model.load(regressor_dir)
    predictions = regressor.signatures["serving_default"](**inputs)["predictions"]
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    np.savez(outputs_path, logits=out["logits"].numpy(), probabilities=out["probabilities"].numpy(),
             predictions=predictions.numpy(), task=np.array(classifier.task.numpy().decode()),
             label_names=np.array([n.decode() for n in classifier.label_names.numpy()]), label_range=regressor.label_range.numpy(),
             loaded=np.array(loaded + ["-"]))
""")


def test_serving_default_equals_keras_in_a_tensorflow_only_process(classifier, regressor, exports,
                                                                   tmp_path):
    ids, mask, segments = padded_inputs([9, 4, 13], 13, seed=5)
    segments[:, 6:] = mask[:, 6:]  # second segment
    np.savez(tmp_path / "inputs.npz", input_ids=ids, input_mask=mask, segment_ids=segments)
    script = tmp_path / "serve.py"
    script.write_text(SERVE)
    result = subprocess.run(
        [sys.executable, str(script), exports["classifier"], exports["regressor"],
         str(tmp_path / "inputs.npz"), str(tmp_path / "outputs.npz")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=""))
    assert result.returncode == 0, result.stderr[-3000:]
    out = np.load(tmp_path / "outputs.npz")
    assert list(out["loaded"]) == ["-"]
    expected = keras_outputs(classifier, ids, mask, segments)
    assert expected.shape == (3, 3) and expected.std() > 1e-2
    np.testing.assert_allclose(out["logits"], expected, atol=1e-5, rtol=0)
    np.testing.assert_allclose(out["probabilities"], tf.nn.softmax(expected).numpy(), atol=1e-6)
    np.testing.assert_allclose(out["predictions"], 5.0 * keras_outputs(regressor, ids, mask, segments),
                               atol=1e-5, rtol=0)
    assert str(out["task"]) == "glue/mnli"
    assert list(out["label_names"]) == list(LABELS)
    np.testing.assert_array_equal(out["label_range"], [0.0, 5.0])


def test_default_signature_uses_only_core_ops(exports):
    for name in ("classifier", "regressor"):
        ops = savedmodel_ops(exports[name])
        assert forbidden_ops(ops) == []
        extra = ops - SERVING_DEFAULT_OPS - OTHER_SAVEDMODEL_OPS
        assert extra <= {"Softmax", "Sub"}, f"{name}: ops outside the core allowlist: {extra}"


def test_serve_text_equals_python_featurization_and_serving_default(classifier, exports, vocab_file):
    loaded = tf.saved_model.load(exports["text"])
    serve_text = loaded.signatures["serve_text"]
    serve = loaded.signatures["serving_default"]
    pairs = [("the cat sat", "on a mat"), ("hello", "world"),
             ("the cat sat on a mat the cat sat on a mat", "hello worlds hello"),  # truncated
             ("a", "the cat sat on the mat on the mat on a mat")]
    out = serve_text(text_a=tf.constant([a for a, _ in pairs]), text_b=tf.constant([b for _, b in pairs]))
    vocabulary = load_vocabulary(vocab_file)
    features = featurize([Example(str(i), a, b, None) for i, (a, b) in enumerate(pairs)],
                         make_tokenizer(vocabulary), special_ids(vocabulary), 12, LabelSpace(LABELS))
    longest = int(features["input_mask"].sum(1).max())
    for name in ("input_ids", "input_mask", "segment_ids"):
        np.testing.assert_array_equal(out[name].numpy(), features[name][:, :longest], err_msg=name)
    direct = serve(**{name: tf.constant(features[name][:, :longest])
                      for name in ("input_ids", "input_mask", "segment_ids")})
    np.testing.assert_allclose(out["logits"].numpy(), direct["logits"].numpy(), atol=1e-6)
    expected_labels = [LABELS[i] for i in direct["logits"].numpy().argmax(-1)]
    assert [label.decode() for label in out["label"].numpy()] == expected_labels
    assert set(loaded.signatures) == {"serving_default", "serve_examples", "serve_text"}
    assert "text_b" in serve_text.structured_input_signature[1]


def test_export_savedmodel_exports_a_finetuned_run_directory(tmp_path):
    from electra_tf.finetuning.runner import featurize_task, run_trial
    from electra_tf.training.callbacks import Preemption
    from tests.finetuning.helpers import pair_task, tiny_config
    from tests.finetuning.helpers import write_vocab as write_topic_vocab
    from tests.run_helpers import run_in_process

    vocab = write_topic_vocab(tmp_path / "vocab.txt")
    config = tiny_config(vocab, "finetune.num_train_epochs=1")
    task = pair_task(32, 8)
    results = run_trial(featurize_task(task, config, vocab), config, str(tmp_path / "run"), 0,
                        source=None, strategy=tf.distribute.get_strategy(), jit_compile=False,
                        preemption=Preemption(), export=True)
    result = run_in_process(["--model_dir", str(tmp_path / "run"), "--output_dir",
                             str(tmp_path / "out"), "--with_tokenizer"],
                            module="electra_tf.export_savedmodel")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "serve_text" in result.stdout
    ids, mask, segments = padded_inputs([6, 9], 9, seed=1)
    inputs = {"input_ids": tf.constant(ids % 45), "input_mask": tf.constant(mask),
              "segment_ids": tf.constant(segments)}
    exported = tf.saved_model.load(str(tmp_path / "out" / str(results["steps"])))
    during_run = tf.saved_model.load(results["export"])
    np.testing.assert_allclose(exported.signatures["serving_default"](**inputs)["logits"].numpy(),
                               during_run.signatures["serving_default"](**inputs)["logits"].numpy(),
                               atol=1e-6)
    assert exported.task.numpy() == b"csv"
    assert [n.decode() for n in exported.label_names.numpy()] == ["different", "same"]
    assert "text_b" in exported.signatures["serve_text"].structured_input_signature[1]
