"""The tagging job: reading chunk / ner tasks (files, TFDS), the task default of 256 tokens,
refusals naming file and line, and a run that learns with its dev predictions file."""

import pytest

from electra_tf.task_data.classification_data import TaskDataError
from electra_tf.task_data.tagging import to_bioes
from electra_tf.evaluation.tagging_metrics import tagging_scores
from electra_tf.finetuning import api
from electra_tf.finetuning.tagging import load_tagging_task
from tests.finetuning.helpers import TINY_MODEL
from tests.tagging_helpers import VOCAB, topic_sentences, write_conll


@pytest.fixture
def conll_dir(tmp_path):
    directory = tmp_path / "conll"
    directory.mkdir()
    write_conll(directory / "train.txt", topic_sentences(640, 0), extra_columns=2)
    write_conll(directory / "dev.txt", topic_sentences(200, 1), extra_columns=2)
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    return directory


def test_tagging_tasks_read_windows_of_256_tokens_unless_overridden():
    assert api.resolve_finetune_config(task="chunk").finetune.max_seq_length == 256
    assert api.resolve_finetune_config(task="ner").finetune.max_seq_length == 256
    assert api.resolve_finetune_config(task="glue/rte").finetune.max_seq_length == 128
    overridden = api.resolve_finetune_config(task="ner", overrides=["finetune.max_seq_length=64"])
    assert overridden.finetune.max_seq_length == 64


@pytest.mark.slow
def test_files_give_bioes_tag_set_and_the_tag_column(conll_dir, tmp_path):
    task = api.load_task("ner", data_dir=str(conll_dir))
    assert (task.name, len(task.train), len(task.eval_splits["dev"])) == ("ner", 640, 200)
    assert task.tag_space.labels == ("B-A", "B-B", "E-A", "E-B", "I-A", "I-B", "O", "S-A", "S-B")
    assert task.train[0].tags == topic_sentences(1, 0)[0].tags
    # The tag in another column: column 1 holds the dummy "X", not a tag.
    with pytest.raises(TaskDataError, match="train.txt, line 3: tag 'X' is neither O"):
        api.load_task("chunk", data_dir=str(conll_dir), tag_column=1)
    with pytest.raises(TaskDataError, match="--do_predict needs a test file"):
        api.load_task("chunk", data_dir=str(conll_dir), with_test=True)
    write_conll(conll_dir / "test.txt", topic_sentences(5, 2), extra_columns=2)
    task = load_tagging_task("chunk", data_dir=str(conll_dir), with_test=True)
    assert task.test_splits["test"][0].tags is None  # predictions only


@pytest.mark.parametrize("case", ["columns", "unseen_tag", "no_dev"])
def test_bad_files_are_refused_with_file_and_line(conll_dir, case):
    dev = conll_dir / "dev.txt"
    if case == "columns":
        lines = dev.read_text().split("\n")
        lines[3] = lines[3] + " extra"  # the first sentence has at least 3 words: lines 3-5
        dev.write_text("\n".join(lines))
        match = r"dev.txt, line 4: 5 columns, but the first word line \(3\) has 4"
    elif case == "unseen_tag":
        dev.write_text(dev.read_text().replace(" O\n", " B-C\n", 2))  # -DOCSTART- and a word
        match = r"dev.txt, line \d+: tag 'B-C' has a type that the training data .* never uses"
    else:
        dev.unlink()
        match = "has no dev.txt .* it holds: train.txt"
    with pytest.raises(TaskDataError, match=match):
        api.load_task("ner", data_dir=str(conll_dir))


def test_tfds_conll2003_gives_the_task_its_tag_feature(tmp_path, no_network):
    import tensorflow_datasets as tfds

    from tests.task_data.test_tagging import conll_examples

    with tfds.testing.mock_data(as_dataset_fn=conll_examples, data_dir=str(tmp_path)):
        ner = api.load_task("ner", use_tfds=True, tfds_data_dir=str(tmp_path), with_test=True)
        chunk = api.load_task("chunk", use_tfds=True, tfds_data_dir=str(tmp_path))
    assert ner.train[0].tags == ["B-PER", "I-PER", "O"]
    assert "E-PER" in ner.tag_space.labels and ner.test_splits["test"][1].tags is None
    assert chunk.train[0].tags == ["O", "O", "O"]  # the mock's chunk ids are all 0: "O"


@pytest.mark.slow
def test_a_tagging_run_learns_and_writes_the_dev_predictions(conll_dir, tmp_path):
    model_dir = tmp_path / "run"
    report = api.finetune(
        "ner", data_dir=str(conll_dir), model_dir=str(model_dir),
        vocab_file=str(tmp_path / "vocab.txt"), export=False,
        overrides=TINY_MODEL + ["model.max_position_embeddings=48", "finetune.max_seq_length=48",
                                "finetune.num_train_epochs=20",
                                "optimizer.learning_rate=5e-3", "optimizer.layerwise_lr_decay=0",
                                "finetune.log_every_steps=1000"])
    trial = report["trial_results"][0]
    assert report["headline"] == "f1" and trial["steps"] == 400
    first, last = trial["history"][0]["dev"], trial["history"][-1]["dev"]
    # Seen: accuracy 67 after the first epoch, 90 at the end; span F1 (noisier: one E- or S-
    # confusion moves a span) 91 at the end.
    assert last["accuracy"] > 80.0 and last["accuracy"] > first["accuracy"] + 10, trial["history"]
    assert last["f1"] > 75.0, trial["history"]
    # predictions/dev/dev.txt: `word gold predicted`, the gold in BIOES, scored as reported
    # (48 tokens hold every sentence: no word is cut).
    lines = (model_dir / "predictions" / "dev" / "dev.txt").read_text().split("\n\n")
    sentences = [[line.split() for line in block.split("\n")] for block in lines if block.strip()]
    dev = topic_sentences(200, 1)
    assert [[w for w, _, _ in s] for s in sentences] == [s.words for s in dev]
    assert [[g for _, g, _ in s] for s in sentences] == [to_bioes(s.tags) for s in dev]
    scores = tagging_scores([[g for _, g, _ in s] for s in sentences],
                            [[p for _, _, p in s] for s in sentences])
    assert scores["f1"] == pytest.approx(last["f1"])
