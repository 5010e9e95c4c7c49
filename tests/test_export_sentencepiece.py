"""serve_text with a SentencePiece model as the vocabulary: the discriminator, a sentence-pair
classifier and a tagger tokenize raw text in the graph to the `sentencepiece` library's ids, the
model file travels inside the SavedModel (a process with only TensorFlow and tensorflow-text
loads it after the file is gone), and the question answerer answers with whole words."""

import os
import shutil
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.export import question_answerer
from electra_tf.export.classifier import export_classifier
from electra_tf.export.question_answerer import export_question_answerer
from electra_tf.export.savedmodel import export_discriminator
from electra_tf.export.tagger import export_tagger
from electra_tf.models import ElectraPretrainer
from electra_tf.models.classifier import ElectraClassifier
from electra_tf.models.question_answerer import ElectraQuestionAnswerer
from electra_tf.models.tagger import ElectraTagger
from electra_tf.text.vocab_files import load_special_ids, make_file_tokenizer
from tests.models.helpers import objective, tiny_model_config
from tests.test_export import BLOCK_NON_TF_IMPORTS
from tests.text.test_sentencepiece_vocab import learned_model, multilingual_lines

CLS, SEP, PAD = 2, 3, 0
MAX_LENGTH = 24


@pytest.fixture(scope="module")
def spm(tmp_path_factory):
    return learned_model(tmp_path_factory.mktemp("spm"))


def _config(size):
    keras.utils.set_random_seed(5)
    return tiny_model_config(vocab_size=size)


def _expected(processor, texts):
    """[CLS] pieces [SEP], cut to MAX_LENGTH, padded with [PAD] to the batch's longest."""
    rows = [[CLS] + processor.encode(text)[:MAX_LENGTH - 2] + [SEP] for text in texts]
    longest = max(map(len, rows))
    return [row + [PAD] * (longest - len(row)) for row in rows]


TEXTS = multilingual_lines(3, seed=31) + ["", "Hello 你好世界 안녕하세요 नमस्ते " * 4]


@pytest.mark.slow
def test_discriminator_serve_text_has_the_librarys_ids(spm, tmp_path):
    path, size, processor = spm
    model = ElectraPretrainer(_config(size), objective(cls_token_id=CLS, sep_token_id=SEP,
                                                       mask_token_id=4))
    export_dir = export_discriminator(model, str(tmp_path / "disc"), with_examples=False,
                                      with_tokenizer=True, vocab_file=path,
                                      max_seq_length=MAX_LENGTH)
    assert os.path.exists(os.path.join(export_dir, "assets", "spm.model"))
    loaded = tf.saved_model.load(export_dir)
    assert loaded.vocab_file.asset_path.numpy().decode().endswith("spm.model")
    out = loaded.signatures["serve_text"](text=tf.constant(TEXTS))
    expected = _expected(processor, TEXTS)
    assert out["input_ids"].numpy().tolist() == expected
    assert out["input_mask"].numpy().tolist() == [[int(i != PAD) for i in row]
                                                   for row in expected]
    reference = loaded.signatures["serving_default"](
        input_ids=out["input_ids"], input_mask=out["input_mask"],
        segment_ids=tf.zeros_like(out["input_ids"]))
    np.testing.assert_allclose(out["logits"].numpy(), reference["logits"].numpy(), atol=1e-6)


@pytest.mark.slow
def test_classifier_serve_text_packs_sentencepiece_pairs(spm, tmp_path):
    path, size, processor = spm
    model = ElectraClassifier(_config(size), num_labels=2)
    export_dir = export_classifier(model, str(tmp_path / "cls"), task="csv",
                                   label_names=("a", "b"), with_examples=False,
                                   with_tokenizer=True, pair=True, vocab_file=path,
                                   max_seq_length=64)
    a, b = (" ".join(line.split()[:4]) for line in multilingual_lines(2, seed=32))
    out = tf.saved_model.load(export_dir).signatures["serve_text"](
        text_a=tf.constant([a]), text_b=tf.constant([b]))
    pieces_a, pieces_b = processor.encode(a), processor.encode(b)
    expected = [CLS] + pieces_a + [SEP] + pieces_b + [SEP]
    assert len(expected) <= 64
    assert out["input_ids"].numpy()[0].tolist() == expected
    assert out["segment_ids"].numpy()[0].tolist() == [0] * (len(pieces_a) + 2) + [1] * (
        len(pieces_b) + 1)
    assert out["label"].numpy()[0] in (b"a", b"b")


@pytest.mark.slow
def test_tagger_serve_text_tags_words_by_their_first_piece(spm, tmp_path):
    path, size, processor = spm
    model = ElectraTagger(_config(size), num_tags=3)
    export_dir = export_tagger(model, str(tmp_path / "tagger"), task="conll/ner",
                               tag_names=("O", "B-X", "I-X"), with_examples=False,
                               with_tokenizer=True, vocab_file=path, max_seq_length=64)
    sentence = " ".join(multilingual_lines(1, seed=33)[0].split()[:6])
    out = tf.saved_model.load(export_dir).signatures["serve_text"](text=tf.constant([sentence]))
    words = sentence.split()
    pieces = [processor.encode(word) or [1] for word in words]  # a word of no pieces is [UNK]
    expected = [CLS] + [i for p in pieces for i in p] + [SEP]
    assert out["input_ids"].numpy()[0].tolist() == expected
    assert [w.decode() for w in out["words"].numpy()[0]] == words
    assert len(out["tags"].numpy()[0]) == len(words)


@pytest.mark.slow
def test_question_answerer_serve_text_answers_with_whole_words(spm, tmp_path):
    path, size, processor = spm
    model = ElectraQuestionAnswerer(_config(size), beam_size=3)
    export_dir = export_question_answerer(model, str(tmp_path / "qa"), task="squad/v1.1",
                                          with_tokenizer=True, vocab_file=path,
                                          max_seq_length=64, max_query_length=16)
    question, context = "who hosted?", "Dr. Café Smith's ﬁne party, 你好世界 in 1895."
    out = tf.saved_model.load(export_dir).signatures["serve_text"](
        question=tf.constant([question]), context=tf.constant([context]))
    # A random model's best span, cut at the original text's whitespace words.
    words = context.split()
    spans = {" ".join(words[i:j]) for i in range(len(words)) for j in range(i + 1, len(words) + 1)}
    assert out["answer"].numpy()[0].decode() in spans
    # The window it scored holds the library's pieces of each whitespace word.
    window = question_answerer._window(
        tf.constant([question]), tf.constant([context]), make_file_tokenizer(path),
        load_special_ids(path), 64, 16, question_answerer._whitespace_words_with_offsets)
    pieces = [processor.encode(word) for word in words]
    assert window["input_ids"].numpy()[0].tolist() == [
        CLS, *processor.encode(question), SEP, *(i for word in pieces for i in word), SEP]


# tensorflow-text imports keras itself: here only keras-hub and electra_tf are kept out.
TEXT_ONLY = BLOCK_NON_TF_IMPORTS.replace(
    '("keras", "keras_hub", "tensorflow_text", "tf_keras", "electra_tf")',
    '("keras_hub", "electra_tf")') + textwrap.dedent("""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the SentencePiece ops, as a TF Text server)

    export_dir, text = sys.argv[1:3]
    out = tf.saved_model.load(export_dir).signatures["serve_text"](text=tf.constant([text]))
    assert not [m for m in sys.modules if m.split(".")[0] in BLOCKED]
    print(out["input_ids"].numpy()[0].tolist())
""")


@pytest.mark.slow
def test_the_model_file_travels_inside_the_savedmodel(spm, tmp_path):
    path, size, processor = spm
    moved = str(tmp_path / "moved.model")
    shutil.copyfile(path, moved)
    model = ElectraPretrainer(_config(size), objective(cls_token_id=CLS, sep_token_id=SEP,
                                                       mask_token_id=4))
    export_dir = export_discriminator(model, str(tmp_path / "disc"), with_examples=False,
                                      with_tokenizer=True, vocab_file=moved,
                                      max_seq_length=MAX_LENGTH)
    os.remove(moved)
    shutil.rmtree(os.path.join(export_dir, "assets"))  # the asset is a copy; the model is in
    (tmp_path / "serve.py").write_text(TEXT_ONLY)      # the tokenizer's saved resource
    text = TEXTS[0]
    result = subprocess.run([sys.executable, str(tmp_path / "serve.py"), export_dir, text],
                            capture_output=True, text=True, timeout=120, cwd=tmp_path,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=""))
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == str(_expected(processor, [text])[0])
