"""SavedModel export of fine-tuned taggers: numerics in a TensorFlow-only process, serve_text
against the Python featurization and decoding, and the in-graph truncation rule against
`align_words`."""

import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.task_data.tagging import (TaggedSentence, TagSpace, align_words, featurize_tagging,
                                     predicted_word_tags)
from electra_tf.text.tokenization import load_vocabulary, make_tokenizer, special_ids
from electra_tf.export.savedmodel import ExportError
from electra_tf.export.tagger import export_tagger, kept_words
from electra_tf.models.tagger import ElectraTagger
from tests.models.helpers import tiny_model_config
from tests.test_export import (BLOCK_NON_TF_IMPORTS, CLS, OTHER_SAVEDMODEL_OPS, SEP,
                               SERVING_DEFAULT_OPS, forbidden_ops, padded_inputs, savedmodel_ops,
                               serialized_examples)
from tests.test_export import vocab_file  # noqa: F401  (the module-scoped fixture: TOKENS)

TAGS = TagSpace(("B-NP", "E-NP", "I-NP", "O", "S-NP"))
MAX_LENGTH = 12
INPUTS = ("input_ids", "input_mask", "segment_ids")


@pytest.fixture(scope="module")
def tagger():
    keras.utils.set_random_seed(5)
    model = ElectraTagger(tiny_model_config(), num_tags=TAGS.num_tags)
    rng = np.random.default_rng(1)  # a head with signal, not near-uniform tags
    model.head.set_weights([rng.normal(size=w.shape) for w in model.head.get_weights()])
    return model


@pytest.fixture(scope="module")
def exports(tagger, vocab_file, tmp_path_factory):
    root = tmp_path_factory.mktemp("exports")
    return {
        "plain": export_tagger(tagger, str(root / "plain"), task="conll/ner",
                               tag_names=TAGS.labels),
        "text": export_tagger(tagger, str(root / "text"), task="conll/ner", tag_names=TAGS.labels,
                              with_tokenizer=True, vocab_file=vocab_file,
                              max_seq_length=MAX_LENGTH),
    }


SERVE = BLOCK_NON_TF_IMPORTS + textwrap.dedent("""
    import numpy as np
    import tensorflow as tf

    export_dir, inputs_path, outputs_path = sys.argv[1:4]
    data = np.load(inputs_path, allow_pickle=True)  # examples: an object array of bytes
    loaded = tf.saved_model.load(export_dir)
    out = loaded.signatures["serving_default"](
        **{name: tf.constant(data[name]) for name in ("input_ids", "input_mask", "segment_ids")})
    examples = loaded.signatures["serve_examples"](examples=tf.constant(data["examples"]))
    blocked = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    np.savez(outputs_path, loaded=np.array(blocked + ["-"]),
             task=np.array(loaded.task.numpy().decode()),
             tag_names=np.array([n.decode() for n in loaded.tag_names.numpy()]),
             **{k: v.numpy() for k, v in out.items()},
             **{f"examples_{k}": v.numpy() for k, v in examples.items()})
""")


@pytest.mark.slow
def test_serving_default_equals_keras_in_a_tensorflow_only_process(tagger, exports, tmp_path):
    ids, mask, _ = padded_inputs([11, 4, 15], 15, seed=2)
    np.savez(tmp_path / "inputs.npz", input_ids=ids, input_mask=mask, segment_ids=mask,
             examples=np.array(serialized_examples(zip(ids, mask, mask)), dtype=object))
    (tmp_path / "serve.py").write_text(SERVE)
    result = subprocess.run(
        [sys.executable, str(tmp_path / "serve.py"), exports["plain"], str(tmp_path / "inputs.npz"),
         str(tmp_path / "out.npz")], capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=""))
    assert result.returncode == 0, result.stderr[-3000:]
    out = np.load(tmp_path / "out.npz", allow_pickle=False)
    assert list(out["loaded"]) == ["-"]
    assert str(out["task"]) == "conll/ner" and list(out["tag_names"]) == list(TAGS.labels)
    logits = keras.ops.convert_to_numpy(
        tagger({"input_ids": ids, "input_mask": mask, "segment_ids": mask}, training=False))
    assert logits.shape == (3, 15, TAGS.num_tags) and logits.std() > 1e-1
    np.testing.assert_allclose(out["logits"], logits, atol=1e-5, rtol=0)
    np.testing.assert_allclose(out["probabilities"], tf.nn.softmax(logits).numpy(), atol=1e-5)
    np.testing.assert_array_equal(out["tag_ids"], logits.argmax(-1))
    assert out["tag_ids"].dtype == np.int32
    for name in ("tag_ids", "probabilities", "logits"):
        np.testing.assert_array_equal(out[f"examples_{name}"], out[name], err_msg=name)
    ops = savedmodel_ops(exports["plain"])
    assert forbidden_ops(ops) == []
    assert ops - SERVING_DEFAULT_OPS - OTHER_SAVEDMODEL_OPS <= {"ArgMax"}  # core ops only


def python_path(model, vocab_file, sentences, max_seq_length):
    """featurize_tagging, the Keras model and predicted_word_tags, as fine-tuning evaluates."""
    vocabulary = load_vocabulary(vocab_file)
    features = featurize_tagging([TaggedSentence(text.split(), None) for text in sentences],
                                 make_tokenizer(vocabulary), special_ids(vocabulary),
                                 max_seq_length, TAGS)
    probabilities = tf.nn.softmax(model({name: features[name] for name in INPUTS})).numpy()
    predicted = probabilities.argmax(-1)
    tags = predicted_word_tags(predicted, features["word_positions"], TAGS)
    tag_probabilities = [
        probabilities[i, positions[:len(t)], predicted[i, positions[:len(t)]]]
        for i, (t, positions) in enumerate(zip(tags, features["word_positions"]))]
    return features, tags, tag_probabilities


SENTENCES = [
    "the cat sat",
    "hello worlds mat,",  # "worlds" and "mat," are two pieces each
    "the \x07 cat \u0301",  # a control character and a lone accent: no pieces, so [UNK]
    "hello worlds the cat sat on",  # 6 words: the rule keeps 2 (S_{k-1} <= 12 - 6 - 4)
    "",
    "a zzz",  # an out-of-vocabulary word: one [UNK] piece from the tokenizer itself
]


@pytest.mark.slow
def test_serve_text_equals_the_python_path_word_for_word(tagger, exports, vocab_file):
    loaded = tf.saved_model.load(exports["text"])
    assert set(loaded.signatures) == {"serving_default", "serve_examples", "serve_text"}
    out = {k: v.numpy() for k, v in
           loaded.signatures["serve_text"](text=tf.constant(SENTENCES)).items()}
    features, tags, tag_probabilities = python_path(tagger, vocab_file, SENTENCES, MAX_LENGTH)
    longest = int(features["input_mask"].sum(1).max())
    for name in INPUTS:
        assert out[name].dtype == np.int32
        np.testing.assert_array_equal(out[name], features[name][:, :longest], err_msg=name)
    assert features["input_ids"][2, :6].tolist() == [CLS, 8, 1, 9, 1, SEP]  # [UNK]: no pieces
    assert [len(t) for t in tags] == [3, 3, 4, 2, 0, 2]  # the 6-word sentence was truncated
    max_words = max(len(s.split()) for s in SENTENCES)
    assert out["words"].shape == out["tags"].shape == (len(SENTENCES), max_words)
    for i, sentence in enumerate(SENTENCES):
        words = sentence.split()
        assert [w.decode() for w in out["words"][i]] == words + [""] * (max_words - len(words))
        assert out["num_tagged_words"][i] == len(tags[i])
        assert [t.decode() for t in out["tags"][i]] == tags[i] + [""] * (max_words - len(tags[i]))
        np.testing.assert_allclose(out["tag_probabilities"][i, :len(tags[i])],
                                   tag_probabilities[i], atol=1e-5)
        assert not out["tag_probabilities"][i, len(tags[i]):].any()
    assert out["num_tagged_words"].dtype == np.int32
    assert out["tag_probabilities"].dtype == np.float32


@pytest.mark.slow
def test_serve_text_tags_no_word_where_the_original_writes_sep_alone(tagger, exports, vocab_file):
    sentences = ["a " * (MAX_LENGTH - 2), "the cat"]  # n = L - 2 words: Python gives [SEP] alone
    out = tf.saved_model.load(exports["text"]).signatures["serve_text"](text=tf.constant(sentences))
    features, tags, _ = python_path(tagger, vocab_file, sentences, MAX_LENGTH)
    assert features["input_ids"][0, :2].tolist() == [SEP, 0] and tags[0] == []
    assert out["input_ids"].numpy()[0, :3].tolist() == [CLS, SEP, 0]  # documented difference
    assert out["num_tagged_words"].numpy().tolist() == [0, 2]
    assert set(out["tags"].numpy()[0]) == {b""} and len(out["words"].numpy()[0]) == MAX_LENGTH - 2
    assert [t.decode() for t in out["tags"].numpy()[1, :2]] == tags[1]


def test_in_graph_keep_rule_equals_align_words_on_random_piece_counts():
    rng = np.random.default_rng(0)
    cases = 0
    for length in range(2, 24):
        counts = [rng.integers(0 if rng.random() < 0.2 else 1, 5, size=rng.integers(0, length + 3))
                  for _ in range(60)]
        keep, positions = kept_words(tf.ragged.constant([c.tolist() for c in counts],
                                                        dtype=tf.int32, row_splits_dtype=tf.int64),
                                     length)
        for c, k, p in zip(counts, keep.to_list(), positions.to_list()):
            ids, expected = align_words([[9] * n for n in c], CLS, SEP, length)
            kept = sum(k)
            assert k == [True] * kept + [False] * (len(c) - kept), (length, c)
            assert p[:kept] == expected, (length, c, k)
            if len(c) >= length - 2:  # the original's [SEP] alone
                assert ids == [SEP] and kept == 0
            else:
                assert ids == [CLS, *[9] * int(sum(c[:kept])), SEP]
            cases += 1
    assert cases == 22 * 60


def test_wrong_number_of_tag_names_is_an_export_error(tagger, tmp_path):
    with pytest.raises(ExportError, match="5 tags, got 4"):
        export_tagger(tagger, str(tmp_path / "x"), task="conll/ner", tag_names=TAGS.labels[:4])
    assert not (tmp_path / "x").exists()
