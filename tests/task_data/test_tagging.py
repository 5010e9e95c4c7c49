"""Tagging data: CoNLL and TFDS readers, BIOES spans, the tag set and first-piece features."""

import random

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.task_data.classification_data import TaskDataError
from electra_tf.task_data.tagging import (TaggedSentence, TagSpace, align_words, featurize_tagging,
                                     from_bioes, get_span_labels, predicted_word_tags,
                                     read_conll, read_tfds_conll, spans_to_tags, to_bioes)
from electra_tf.text.tokenization import SpecialIds, make_tokenizer

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "new", "york",
         "##er", "##s", "un", "##break", "##able", ","]
IDS = SpecialIds(pad=0, unk=1, cls=2, sep=3, mask=4)
ID = {token: i for i, token in enumerate(VOCAB)}

CONLL_2003 = """\
-DOCSTART- -X- -X- O

EU NNP B-NP B-ORG
rejects VBZ B-VP O
German JJ B-NP B-MISC

Peter NNP B-NP B-PER
Blackburn NNP I-NP I-PER
"""


def write(tmp_path, text, name="data.txt"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# ---------------------------------------------------------------------------------------------
# CoNLL files


def test_read_conll_takes_the_last_column_and_skips_docstart(tmp_path):
    sentences = read_conll(write(tmp_path, CONLL_2003))
    assert sentences == [
        TaggedSentence(["EU", "rejects", "German"], ["B-ORG", "O", "B-MISC"], line=3),
        TaggedSentence(["Peter", "Blackburn"], ["B-PER", "I-PER"], line=7)]


def test_read_conll_reads_another_tag_column_and_a_file_without_final_blank_line(tmp_path):
    text = CONLL_2003.rstrip("\n") + "\n\n\n"  # extra blank lines make no empty sentences
    chunks = read_conll(write(tmp_path, text), tag_column=2)
    assert [s.tags for s in chunks] == [["B-NP", "B-VP", "B-NP"], ["B-NP", "I-NP"]]
    no_final_blank = read_conll(write(tmp_path, "a B-NP\nb I-NP", "short.txt"))
    assert no_final_blank == [TaggedSentence(["a", "b"], ["B-NP", "I-NP"], line=1)]


def test_a_line_with_another_column_count_names_file_and_line(tmp_path):
    path = write(tmp_path, CONLL_2003.replace("Peter NNP B-NP B-PER", "Peter B-PER"))
    with pytest.raises(TaskDataError, match=r"data\.txt, line 7: 2 columns, but the first word "
                                            r"line \(3\) has 4"):
        read_conll(path)


def test_unlabelled_files_need_labelled_false(tmp_path):
    path = write(tmp_path, "Peter\nBlackburn\n\nEU\n")
    with pytest.raises(TaskDataError, match="line 1: the tag column is the word column"):
        read_conll(path)
    assert read_conll(path, labelled=False) == [
        TaggedSentence(["Peter", "Blackburn"], None, 1), TaggedSentence(["EU"], None, 4)]


def test_a_malformed_tag_names_file_and_line(tmp_path):
    path = write(tmp_path, "a B-NP\nb NP\n")
    with pytest.raises(TaskDataError, match=r"data\.txt, line 2: tag 'NP' is neither O"):
        read_conll(path)
    with pytest.raises(TaskDataError, match="no tag column 5"):
        read_conll(path, tag_column=5)


# ---------------------------------------------------------------------------------------------
# Spans and BIOES


@pytest.mark.parametrize("rule", ["electra", "conlleval"])
def test_spans_of_well_formed_sequences(rule):
    assert get_span_labels([], rule) == []
    assert get_span_labels(["B-PER", "I-PER", "O", "B-LOC"], rule) == [(0, 1, "PER"), (3, 3, "LOC")]
    assert get_span_labels(["S-A", "B-A", "E-A", "B-B", "I-B", "E-B"], rule) == [
        (0, 0, "A"), (1, 2, "A"), (3, 5, "B")]
    # IOB1: I- opens a span, B- only splits two adjacent spans of one type.
    assert get_span_labels(["I-PER", "I-PER", "B-PER", "O", "I-LOC"], rule) == [
        (0, 1, "PER"), (2, 2, "PER"), (4, 4, "LOC")]


def test_the_two_rules_differ_where_the_original_is_quirky():
    # IOB1 adjacent spans of two types: the original merges them and keeps the last type.
    assert get_span_labels(["I-PER", "I-LOC"], "electra") == [(0, 1, "LOC")]
    assert get_span_labels(["I-PER", "I-LOC"], "conlleval") == [(0, 0, "PER"), (1, 1, "LOC")]
    # E- does not end a span in the original, so a following I- continues it.
    tags = ["B-NP", "E-NP", "I-NP", "E-NP"]
    assert get_span_labels(tags, "electra") == [(0, 3, "NP")]
    assert get_span_labels(tags, "conlleval") == [(0, 1, "NP"), (2, 3, "NP")]
    tags = ["B-NP", "I-VP", "E-VP"]
    assert get_span_labels(tags, "electra") == [(0, 2, "VP")]
    assert get_span_labels(tags, "conlleval") == [(0, 0, "NP"), (1, 2, "VP")]


def random_spans(rng, length):
    spans, i = [], 0
    while i < length:
        if rng.random() < 0.5:
            end = min(length - 1, i + rng.randint(0, 3))
            spans.append((i, end, rng.choice("AB")))
            i = end + 1
        else:
            i += rng.randint(1, 2)
    return spans


def test_bioes_round_trip_from_bio_and_iob1():
    rng = random.Random(0)
    for _ in range(500):
        length = rng.randint(0, 12)
        spans = random_spans(rng, length)
        bioes = spans_to_tags(spans, length, "BIOES")
        bio = spans_to_tags(spans, length, "BIO")
        iob1 = spans_to_tags(spans, length, "IOB1")
        assert to_bioes(bio) == to_bioes(iob1) == to_bioes(bioes) == bioes
        assert from_bioes(bioes, "BIO") == bio and from_bioes(bioes, "IOB1") == iob1
        assert get_span_labels(bioes) == spans
    assert spans_to_tags([(0, 1, "A"), (2, 2, "A"), (3, 3, "B")], 5, "IOB1") == [
        "I-A", "I-A", "B-A", "I-B", "O"]
    assert to_bioes(["B-NP", "I-NP", "I-NP", "O", "B-VP"]) == ["B-NP", "I-NP", "E-NP", "O", "S-VP"]


# ---------------------------------------------------------------------------------------------
# Tag set


def test_tag_space_is_the_sorted_bioes_tags_of_train_and_dev():
    train = [TaggedSentence(["a", "b", "c"], ["B-NP", "I-NP", "O"])]
    dev = [TaggedSentence(["a"], ["B-NP"]), TaggedSentence(["b"], None)]
    space = TagSpace.from_sentences(train, {"dev": dev})
    assert space.labels == ("B-NP", "E-NP", "O", "S-NP")  # S-NP only occurs in dev
    assert space.encode(["O", "S-NP"]) == [2, 3] and space.decode([0, 1]) == ["B-NP", "E-NP"]
    with pytest.raises(TaskDataError, match="tag 'I-NP' is not one of the 4 tags"):
        space.encode(["I-NP"])


def test_a_dev_type_unseen_in_training_names_tag_and_line(tmp_path):
    train = read_conll(write(tmp_path, "a B-NP\nb O\n", "train.txt"))
    dev_path = write(tmp_path, "a B-NP\n\nb O\nc B-LST\n", "dev.txt")
    with pytest.raises(TaskDataError, match=r"dev\.txt, line 4: tag 'B-LST' has a type that the "
                                            r"training data \(.*train\.txt\) never uses"):
        TagSpace.from_sentences(train, {dev_path: read_conll(dev_path)},
                                train_source=str(tmp_path / "train.txt"))


# ---------------------------------------------------------------------------------------------
# Features


def test_align_words_tags_first_pieces_and_follows_the_original_truncation():
    # [CLS]=2 [SEP]=3; the words have 2, 1 and 3 pieces.
    words = [[10, 11], [12], [13, 14, 15]]
    assert align_words(words, 2, 3, 64) == ([2, 10, 11, 12, 13, 14, 15, 3], [1, 3, 4])
    # L=9 would fit all 8 ids, but the original stops at the first unit where
    # (3 words + 2) + ids so far + 1 > 9, i.e. once 4 ids are in: before the third word.
    assert align_words(words, 2, 3, 9) == ([2, 10, 11, 12, 3], [1, 3])
    # L - 2 words or more: the original keeps [SEP] alone.
    assert align_words([[10]] * 6, 2, 3, 8) == ([3], [])
    # A word too long for the rest of the sequence is cut, where the original overruns L.
    assert align_words([[10], [11] * 20], 2, 3, 10) == ([2, 10, 3], [1])


def test_align_words_stays_within_the_length_and_keeps_a_prefix_of_words():
    rng = random.Random(1)
    for _ in range(300):
        words = [[rng.randint(10, 99) for _ in range(rng.randint(1, 4))]
                 for _ in range(rng.randint(0, 12))]
        length = rng.randint(3, 30)
        ids, positions = align_words(words, 2, 3, length)
        assert len(ids) <= length and ids[-1] == 3
        assert [ids[p] for p in positions] == [w[0] for w in words[:len(positions)]]
        if ids[0] == 2:
            assert ids == [2, *(p for w in words[:len(positions)] for p in w), 3]


@pytest.fixture(scope="module")
def tokenizer():
    return make_tokenizer(VOCAB)


def test_featurize_labels_the_first_piece_of_each_word(tokenizer):
    space = TagSpace(("B-LOC", "E-LOC", "O", "S-X"))
    sentences = [TaggedSentence(["The", "New", "Yorkers", "sat"], ["O", "B-LOC", "I-LOC", "O"]),
                 TaggedSentence(["unbreakable", "cats", ""], None)]
    f = featurize_tagging(sentences, tokenizer, IDS, 14, space)
    pad = [0] * 6
    assert f["input_ids"].tolist() == [
        [ID[t] for t in ["[CLS]", "the", "new", "york", "##er", "##s", "sat", "[SEP]"]] + pad,
        [ID[t] for t in ["[CLS]", "un", "##break", "##able", "cat", "##s", "[UNK]", "[SEP]"]] + pad]
    assert f["input_mask"].tolist() == f["segment_ids"].tolist() == [[1] * 8 + pad] * 2
    assert f["word_positions"].tolist() == [[1, 2, 3, 6], [1, 4, 6, -1]]
    assert f["tag_mask"].tolist() == [[0, 1, 1, 1, 0, 0, 1, 0] + pad,
                                      [0, 1, 0, 0, 1, 0, 1, 0] + pad]
    assert f["tags"].tolist() == [[0, 2, 0, 1, 0, 0, 2, 0] + pad, [0] * 14]  # O=2 B-LOC=0 E-LOC=1
    assert {k: v.dtype for k, v in f.items()} == {
        "input_ids": np.int32, "input_mask": np.int32, "segment_ids": np.int32, "tags": np.int32,
        "tag_mask": np.float32, "word_positions": np.int32}


def test_featurize_truncation_marks_cut_words(tokenizer):
    space = TagSpace(("B-LOC", "E-LOC", "I-LOC", "O", "S-LOC"))
    sentence = TaggedSentence(["the", "new", "yorkers", "sat", "the"],
                              ["O", "B-LOC", "E-LOC", "O", "S-LOC"], line=7)
    f = featurize_tagging([sentence], tokenizer, IDS, 10, space)
    # 5 words: stop once 7 + ids + 1 > 10, i.e. with 3 ids in ([CLS] the new), before "yorkers".
    assert f["input_ids"][0].tolist() == [ID["[CLS]"], ID["the"], ID["new"], ID["[SEP]"]] + [0] * 6
    assert f["word_positions"].tolist() == [[1, 2, -1, -1, -1]]
    assert f["tags"][0, :3].tolist() == [0, 3, 0] and f["tag_mask"][0].sum() == 2
    logits_argmax = np.array([[0, 4, 1, 0, 0, 0, 0, 0, 0, 0]])
    assert predicted_word_tags(logits_argmax, f["word_positions"], space) == [["S-LOC", "E-LOC"]]
    with pytest.raises(TaskDataError, match="line 7: tag 'B-LOC' is not one of the 2 tags"):
        featurize_tagging([sentence], tokenizer, IDS, 10, TagSpace(("O", "S-LOC")))


# ---------------------------------------------------------------------------------------------
# TFDS


def conll_examples(self, *args, **kwargs):
    """Mocked TFDS conll2003 examples with known tags (ner names: O B-PER I-PER B-ORG ...)."""
    examples = [{"tokens": ["Peter", "Blackburn", "said"], "ner": [1, 2, 0]},
                {"tokens": ["EU"], "ner": [3]}]
    features = self.info.features

    def generate():
        for e in examples:
            yield {"tokens": e["tokens"], "ner": e["ner"], "pos": [0] * len(e["ner"]),
                   "chunks": [0] * len(e["ner"])}
    signature = {name: tf.TensorSpec([None], tf.string if name == "tokens" else tf.int64)
                 for name in features.keys()}
    return tf.data.Dataset.from_generator(generate, output_signature=signature)


def test_read_tfds_conll_maps_class_ids_to_names(tmp_path):
    tfds = pytest.importorskip("tensorflow_datasets")
    with tfds.testing.mock_data(as_dataset_fn=conll_examples, data_dir=str(tmp_path)):
        sentences = read_tfds_conll("conll2003", "train", "ner", data_dir=str(tmp_path))
        assert sentences == [
            TaggedSentence(["Peter", "Blackburn", "said"], ["B-PER", "I-PER", "O"]),
            TaggedSentence(["EU"], ["B-ORG"])]
        with pytest.raises(TaskDataError, match="no sequence of tag names 'nerd'"):
            read_tfds_conll("conll2003", "train", "nerd", data_dir=str(tmp_path))
    with tfds.testing.mock_data(num_examples=3, data_dir=str(tmp_path)):  # random lengths
        with pytest.raises(TaskDataError, match=r"conll2003/dev, sentence \d: \d+ words but"):
            read_tfds_conll("conll2003", "dev", "ner", data_dir=str(tmp_path))
