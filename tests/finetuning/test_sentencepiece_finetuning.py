"""Fine-tuning with a SentencePiece model as the vocabulary: classification pairs and the
tagging first-piece rule get the `sentencepiece` library's ids; a CSV classifier and a CoNLL
tagger train from scratch with it (the classifier's export tokenizes raw text with it); SQuAD
windows hold the library's pieces of each word, and answers decode to the original
characters."""

import glob
import json
import random

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.evaluation.squad_decoding import RawResult, decode_example
from electra_tf.task_data.classification_data import Example
from electra_tf.task_data.classification_features import LabelSpace, featurize
from electra_tf.task_data.squad_features import QAFeaturizer
from electra_tf.task_data.tagging import TaggedSentence, TagSpace, featurize_tagging
from electra_tf.text.vocab_files import load_special_ids, make_file_tokenizer
from tests.run_helpers import run_in_process
from tests.task_data.test_squad_features import examples as squad_examples
from tests.text.test_sentencepiece_vocab import learned_model, multilingual_lines

CLS, SEP = 2, 3
TINY_MODEL = ["--override", "model.num_layers=1", "--override", "model.hidden_size=16",
              "--override", "model.num_heads=1", "--override", "model.embedding_size=16",
              "--override", "model.intermediate_size=32"]
SMALL_RUN = ["--override", "finetune.train_batch_size=8",
             "--override", "finetune.eval_batch_size=8", "--override", "finetune.max_seq_length=32",
             "--override", "finetune.num_train_epochs=1"]


@pytest.fixture(scope="module")
def spm(tmp_path_factory):
    return learned_model(tmp_path_factory.mktemp("spm"))


def test_classification_pairs_get_the_librarys_ids(spm):
    path, _, processor = spm
    a, b = multilingual_lines(2, seed=21)
    features = featurize([Example("train-0", a, b, "x")], make_file_tokenizer(path),
                         load_special_ids(path), 128, LabelSpace(("x", "y")))
    expected = [CLS] + processor.encode(a) + [SEP] + processor.encode(b) + [SEP]
    n = len(expected)
    assert features["input_ids"][0, :n].tolist() == expected
    assert not features["input_ids"][0, n:].any()
    segments = [0] * (len(processor.encode(a)) + 2) + [1] * (len(processor.encode(b)) + 1)
    assert features["segment_ids"][0, :n].tolist() == segments


def test_tagging_marks_each_words_first_piece(spm):
    path, _, processor = spm
    words = multilingual_lines(1, seed=22)[0].split()
    sentence = TaggedSentence(words, ["O"] * len(words))
    features = featurize_tagging([sentence], make_file_tokenizer(path), load_special_ids(path),
                                 128, TagSpace(("O",)))
    pieces = [processor.encode(word) for word in words]
    starts = np.cumsum([1] + [len(p) for p in pieces[:-1]])
    assert features["word_positions"][0].tolist() == starts.tolist()
    ids = features["input_ids"][0]
    assert [ids[s:s + len(p)].tolist() for s, p in zip(starts, pieces)] == pieces


def write_csv_data(directory):
    rng, lines = random.Random(0), multilingual_lines(40, seed=23)
    directory.mkdir()
    for split, n in (("train", 16), ("dev", 8)):
        with open(directory / f"{split}.jsonl", "w", encoding="utf-8") as f:
            for _ in range(n):
                f.write(json.dumps({"text": rng.choice(lines), "label": rng.choice("ab")},
                                   ensure_ascii=False) + "\n")
    return directory


@pytest.mark.slow
def test_a_classifier_trains_from_a_sentencepiece_vocabulary(spm, tmp_path):
    path, size, processor = spm
    data = write_csv_data(tmp_path / "data")
    result = run_in_process(["--task", "csv", "--data_dir", str(data), "--text_a_column", "text",
                             "--label_column", "label", "--labels", "a,b", "--vocab_file", path,
                             "--override", f"model.vocab_size={size}", *TINY_MODEL, *SMALL_RUN,
                             "--model_dir", str(tmp_path / "out"), "--with_tokenizer"],
                            module="electra_tf.run_finetuning")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "\ndev accuracy:" in result.stdout
    # The run's export tokenizes raw text with the model file, as the library does.
    (export_dir,) = glob.glob(str(tmp_path / "out" / "export" / "*"))
    text = " ".join(multilingual_lines(1, seed=25)[0].split()[:5])
    out = tf.saved_model.load(export_dir).signatures["serve_text"](text_a=tf.constant([text]))
    assert out["input_ids"].numpy()[0].tolist() == [CLS] + processor.encode(text) + [SEP]
    assert out["label"].numpy()[0] in (b"a", b"b")


@pytest.mark.slow
def test_a_tagger_trains_from_a_sentencepiece_vocabulary(spm, tmp_path):
    path, size, _ = spm
    rng, words = random.Random(1), " ".join(multilingual_lines(30, seed=24)).split()
    data = tmp_path / "conll"
    data.mkdir()
    for split in ("train", "dev"):
        blocks = ["\n".join(f"{rng.choice(words)} NN B-NP {rng.choice(['O', 'B-ENT'])}"
                            for _ in range(rng.randint(3, 8))) for _ in range(16)]
        (data / f"{split}.txt").write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    result = run_in_process(["--task", "ner", "--data_dir", str(data), "--vocab_file", path,
                             "--override", f"model.vocab_size={size}", *TINY_MODEL, *SMALL_RUN,
                             "--model_dir", str(tmp_path / "ner")],
                            module="electra_tf.run_finetuning")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "\ndev f1:" in result.stdout


def test_squad_windows_have_the_librarys_pieces_and_decode_to_the_original_text(spm):
    path, _, processor = spm
    context = "Dr. Café Smith's ﬁne party 你好世界 began in 1895."
    answer = "Café Smith's ﬁne"
    (example,) = squad_examples((context, "who hosted?", [(answer, context.index(answer))],
                                 False))
    featurizer = QAFeaturizer(path, max_seq_length=64, doc_stride=16, max_query_length=8)
    (feature,) = featurizer.featurize([example], is_training=True)
    question = processor.encode("who hosted?")[:8]
    pieces = [processor.encode(word) for word in context.split()]  # each word alone
    expected = [CLS, *question, SEP, *(i for word in pieces for i in word), SEP]
    assert feature.input_ids[:len(expected)].tolist() == expected
    first = len(question) + 2 + len(pieces[0])  # "Café" follows "Dr."
    last = first + sum(map(len, pieces[1:4])) - 1
    assert (feature.start_position, feature.end_position) == (first, last)
    # The gold span decodes to the original characters, capitals, accent and ligature kept.
    raw = RawResult(feature.unique_id, np.array([first]), np.array([0.0], np.float32),
                    np.array([[last]]), np.array([[0.0]], np.float32), 0.0)
    best, _, _ = decode_example(example, [feature], [raw], sentencepiece=True)
    assert best == answer


@pytest.mark.slow
def test_a_question_answerer_trains_from_a_sentencepiece_vocabulary(spm, tmp_path):
    from tests.test_run_finetuning import write_squad_files

    path, size, _ = spm
    data = write_squad_files(tmp_path / "squad")
    result = run_in_process(["--task", "squad/v1.1", "--data_dir", str(data), "--vocab_file", path,
                             "--override", f"model.vocab_size={size}", *TINY_MODEL, *SMALL_RUN,
                             "--override", "qa.max_query_length=8", "--override", "qa.doc_stride=8",
                             "--override", "qa.beam_size=8", "--model_dir", str(tmp_path / "qa")],
                            module="electra_tf.run_finetuning")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "\ndev f1:" in result.stdout
    predictions = json.loads((tmp_path / "qa" / "predictions" / "dev" /
                              "predictions.json").read_text())
    contexts = {qa["id"]: paragraph["context"] for paragraph in json.loads(
        (data / "dev.json").read_text())["data"][0]["paragraphs"] for qa in paragraph["qas"]}
    # Every answer is a piece of its own context's original text.
    assert len(predictions) == 24 and all(text in contexts[qid] for qid, text in
                                          predictions.items())
