"""Pretraining data and runs from a SentencePiece model: the build tokenizes with the model (the
ids the `sentencepiece` library gives), the metadata records it, the run takes its size and
special ids from it, whole-word masking finds words by SentencePiece's "▁", and export and
fine-tuning find the model through the run's config."""

import random

import numpy as np
import pytest
import sentencepiece
import tensorflow as tf

from electra_tf.pretraining_data import builder
from electra_tf.pretraining_data import pretraining_records as records
from electra_tf.pretraining_data import run_vocabulary, word_masking
from electra_tf.text.sentencepiece_vocab import learn_sentencepiece
from electra_tf.text.tokenization import VocabularyError, load_vocabulary
from tests.finetuning.test_sentencepiece_finetuning import SMALL_RUN, write_csv_data
from tests.run_helpers import cli_args, run_in_process
from tests.text.test_sentencepiece_vocab import multilingual_lines

MAX_LEN = 32


@pytest.fixture(scope="module")
def spm_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("spm_data")
    model = root / "spm.model"
    learn_sentencepiece(multilingual_lines(3000, seed=0), 1200, str(model),
                        character_coverage=1.0)
    lines = multilingual_lines(400, seed=7)
    rng = random.Random(0)
    documents, start = [], 0
    while start < len(lines):  # documents of 1-12 lines, a blank line between them
        end = start + rng.randint(1, 12)
        documents.append(lines[start:end])
        start = end
    corpus = root / "corpus.txt"
    corpus.write_text("\n\n".join("\n".join(d) for d in documents) + "\n", encoding="utf-8")
    summary = builder.build_pretraining_data(output_dir=str(root / "records"),
                                             vocab_file=str(model), corpus=str(corpus),
                                             max_seq_length=MAX_LEN, num_processes=1)
    return {"model": model, "lines": lines, "summary": summary, "records": root / "records"}


def test_build_tokenizes_with_the_model_and_records_it(spm_data):
    processor = sentencepiece.SentencePieceProcessor(model_file=str(spm_data["model"]))
    summary = spm_data["summary"]
    # Every token of the corpus is counted: the in-graph ids are the library's, line by line.
    assert summary.stats.tokens == sum(len(processor.encode(line)) for line in spm_data["lines"])
    metadata = records.read_metadata(str(spm_data["records"]))
    assert metadata["tokenizer"] == "sentencepiece"
    assert metadata["vocab_size"] == processor.get_piece_size()
    assert metadata["special_token_ids"] == {"pad": 0, "unk": 1, "cls": 2, "sep": 3, "mask": 4}
    assert metadata["lower_case"] is None and metadata["normalization"] is None
    examples = list(records.read_examples(summary.shards, MAX_LEN).as_numpy_iterator())
    assert len(examples) == summary.stats.examples > 20
    for example in examples:
        ids = example["input_ids"][example["input_mask"] == 1]
        assert ids[0] == 2 and ids[-1] == 3
        assert ids.max() < processor.get_piece_size() and not np.isin(ids, [0, 4]).any()


def test_run_vocabulary_and_word_pieces_come_from_the_model(spm_data):
    model = str(spm_data["model"])
    processor = sentencepiece.SentencePieceProcessor(model_file=model)
    vocabulary = run_vocabulary.from_vocab_file(model)
    assert vocabulary.size == processor.get_piece_size()
    assert tuple(vocabulary.ids) == (0, 1, 2, 3, 4)
    continues = word_masking.continuation_pieces_of(model)
    pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    assert continues.tolist() == [not piece.startswith("\u2581") for piece in pieces]
    # The pieces of one word: the first starts with "▁", the others continue it.
    word = processor.encode("mplywlofyhe")
    assert len(word) >= 2 and not continues[word[0]] and continues[word[1:]].all()


def test_wordpiece_steps_refuse_a_sentencepiece_model_by_name(spm_data):
    with pytest.raises(VocabularyError, match="is a SentencePiece model, and this step takes a "
                                              "WordPiece vocab.txt") as raised:
        load_vocabulary(str(spm_data["model"]))
    # ... and names what takes either kind
    assert "make_file_tokenizer(path)" in str(raised.value)
    assert "ElectraTextClassifierPreprocessor.from_vocabulary(path)" in str(raised.value)


@pytest.mark.slow
@pytest.mark.parametrize("masking", ["token", "whole_word"])
def test_a_run_pretrains_on_sentencepiece_data(spm_data, tmp_path, masking):
    result = run_in_process(cli_args(spm_data["records"], spm_data["model"], tmp_path / "run", 4,
                                     "--noexport", "--override", f"objective.masking={masking}"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "finished at step 4" in result.stdout
    config = (tmp_path / "run" / "config.yaml").read_text()
    size = sentencepiece.SentencePieceProcessor(model_file=str(spm_data["model"])).get_piece_size()
    assert f"vocab_size: {size}" in config and "spm.model" in config


@pytest.mark.slow
def test_the_run_carries_its_model_to_export_and_fine_tuning(spm_data, tmp_path):
    """Neither step is given the model: both find it through the run's config.yaml."""
    run = tmp_path / "run"
    trained = run_in_process(cli_args(spm_data["records"], spm_data["model"], run, 2,
                                      "--noexport"))
    assert trained.returncode == 0, trained.stderr[-3000:]
    exported = run_in_process(["--model_dir", str(run), "--output_dir", str(tmp_path / "served"),
                               "--with_tokenizer", "--nowith_examples"],
                              module="electra_tf.export_savedmodel")
    assert exported.returncode == 0, exported.stderr[-3000:]
    (version,) = (tmp_path / "served").iterdir()
    text = spm_data["lines"][3]
    out = tf.saved_model.load(str(version)).signatures["serve_text"](text=tf.constant([text]))
    processor = sentencepiece.SentencePieceProcessor(model_file=str(spm_data["model"]))
    assert out["input_ids"].numpy()[0].tolist() == [2] + processor.encode(text)[:MAX_LEN - 2] + [3]

    csv = write_csv_data(tmp_path / "csv")
    finetuned = run_in_process(["--task", "csv", "--data_dir", str(csv),
                                "--text_a_column", "text", "--label_column", "label",
                                "--labels", "a,b", "--init_checkpoint", str(run), *SMALL_RUN,
                                "--model_dir", str(tmp_path / "cls")],
                               module="electra_tf.run_finetuning")
    assert finetuned.returncode == 0, finetuned.stderr[-3000:]
    assert f"vocab_file: {spm_data['model']}" in (tmp_path / "cls" / "config.yaml").read_text()
