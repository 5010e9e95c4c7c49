"""A pretraining run's vocabulary: from the data's metadata, checked against every source."""

import pytest

from electra_tf.pretraining_data import pretraining_records as records
from electra_tf.pretraining_data import run_vocabulary as rv
from electra_tf.text.tokenization import SpecialIds
from tests.run_helpers import SPECIALS, write_vocab

LEARNED_IDS = SpecialIds(pad=0, unk=1, cls=2, sep=3, mask=4)


def metadata_of(vocab_file, size):
    return {"max_seq_length": 32, "vocab_size": size, "vocab_file": str(vocab_file),
            "vocab_sha256": records.vocab_sha256(str(vocab_file)),
            "special_token_ids": LEARNED_IDS._asdict()}


@pytest.fixture
def learned(tmp_path):
    path = write_vocab(tmp_path / "vocab.txt")
    return path, metadata_of(path, 120)


def test_the_data_metadata_gives_size_ids_and_vocab_file(learned):
    path, metadata = learned
    vocabulary = rv.resolve({"data": metadata}, vocab_file=None)
    assert (vocabulary.size, vocabulary.ids, vocabulary.vocab_file) == (120, LEARNED_IDS, path)
    assert "metadata.json of data" in vocabulary.describe()


def test_a_moved_vocab_file_is_not_recorded(learned, tmp_path):
    _, metadata = learned
    metadata["vocab_file"] = str(tmp_path / "gone.txt")
    assert rv.resolve({"data": metadata}, None).vocab_file is None


def test_the_same_vocab_file_agrees(learned):
    path, metadata = learned
    assert rv.resolve({"data": metadata}, path).ids == LEARNED_IDS


def test_another_vocab_file_is_refused_naming_both(learned, tmp_path):
    _, metadata = learned
    bert_like = write_vocab(tmp_path / "bert.txt",
                            ["[PAD]"] + [f"[unused{i}]" for i in range(99)] + SPECIALS[1:] + ["a"])
    with pytest.raises(rv.VocabularyMismatch, match=r"metadata.json of data: 120 tokens, "
                       r"\[CLS\]=2.*--vocab_file .*bert.txt: 105 tokens, \[CLS\]=101"):
        rv.resolve({"data": metadata}, bert_like)


def test_train_and_eval_data_of_different_builds_are_refused(learned, tmp_path):
    path, metadata = learned
    other = dict(metadata, vocab_sha256="0" * 64)
    with pytest.raises(rv.VocabularyMismatch, match="disagree"):
        rv.resolve({"train": metadata, "eval": other}, None)


def test_without_metadata_or_vocab_file_the_run_refuses_to_guess():
    with pytest.raises(rv.VocabularyMismatch, match="--assume_bert_vocabulary"):
        rv.resolve({}, None)
    assumed = rv.resolve({}, None, assume_bert_vocabulary=True)
    assert (assumed.size, assumed.ids.cls, assumed.ids.mask) == (30522, 101, 103)


def test_metadata_that_only_records_a_size_is_checked_but_not_enough(tmp_path):
    small = write_vocab(tmp_path / "small.txt", SPECIALS + [f"w{i}" for i in range(55)])
    with pytest.raises(rv.VocabularyMismatch, match="120 tokens.*60 tokens"):
        rv.resolve({"data": {"vocab_size": 120}}, small)
    with pytest.raises(rv.VocabularyMismatch, match="neither"):
        rv.resolve({"data": {"vocab_size": 120}}, None)


def test_user_settings_must_agree(learned):
    _, metadata = learned
    vocabulary = rv.resolve({"data": metadata}, None)
    rv.check_user_settings(vocabulary, {"objective.mask_token_id": 4, "model.vocab_size": 120})
    rv.check_user_settings(vocabulary, {"model.vocab_size": 128})  # padded table: allowed
    with pytest.raises(rv.VocabularyMismatch, match=r"mask_token_id=103.*\[MASK\] is 4"):
        rv.check_user_settings(vocabulary, {"objective.mask_token_id": 103})
    with pytest.raises(rv.VocabularyMismatch, match="model.vocab_size=100 is smaller"):
        rv.check_user_settings(vocabulary, {"model.vocab_size": 100})
