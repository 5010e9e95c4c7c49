"""SQuAD fine-tuning end to end on a learnable synthetic task (official JSON files written here):
v1.1 learns to extract the answer, v2.0 learns to tell unanswerable questions; the prediction
files; the SavedModel's beam and serve_text against the Keras model and the Python path."""

import dataclasses
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.finetuning import runner
from electra_tf.finetuning.question_answering import answer, load_squad_task
from electra_tf.models.question_answers import BEAM_OUTPUTS
from tests.finetuning.helpers import write_vocab
from tests.finetuning.squad_helpers import qa_config, write_squad
from tests.run_helpers import run_in_process
from electra_tf.export.question_answerer import export_question_answerer
from tests.test_export import BLOCK_NON_TF_IMPORTS, forbidden_ops, savedmodel_ops


@pytest.fixture(scope="module")
def v11_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("squad11")
    vocab = write_vocab(root / "vocab.txt")
    task = load_squad_task("squad/v1.1", data_dir=write_squad(root / "data", 400, 100, "1.1"))
    config = qa_config(vocab)
    report = runner.run_trials(task, config, str(root / "run"), with_tokenizer=True)
    return root, vocab, config, report


@pytest.mark.slow
def test_v11_synthetic_task_reaches_exact_match_90(v11_run):
    root, _, _, report = v11_run
    trial = report["trial_results"][0]
    assert trial["status"] == "finished"
    last = trial["dev"]["dev"]["last"]
    assert last["exact_match"] >= 90.0, trial["history"]
    assert last["f1"] >= 95.0
    # the window count shows contexts longer than one window were split
    assert trial["train_examples"] > 400


@pytest.mark.slow
def test_v11_prediction_files_have_the_official_layout(v11_run):
    root = v11_run[0]
    directory = root / "run" / "predictions" / "dev"
    predictions = json.loads((directory / "predictions.json").read_text())
    nbest = json.loads((directory / "nbest_predictions.json").read_text())
    assert not (directory / "null_odds.json").exists()  # v1.1
    assert len(predictions) == 100 and set(nbest) == set(predictions)
    entries = nbest[next(iter(nbest))]
    assert entries[0]["text"] == predictions[next(iter(nbest))]
    assert set(entries[0]) == {"text", "probability", "start_log_prob", "end_log_prob"}
    assert sum(e["probability"] for e in entries) == pytest.approx(1.0)
    # and the evaluation command agrees with the run's own scores
    result = run_in_process([f"--data_file={root / 'data' / 'dev.json'}",
                             f"--predictions_file={directory / 'predictions.json'}"],
                            module="electra_tf.evaluate_squad")
    assert json.loads(result.stdout)["exact_match"] == pytest.approx(
        v11_run[3]["trial_results"][0]["dev"]["dev"]["last"]["exact_match"])


@pytest.mark.slow
def test_v20_learns_to_tell_unanswerable_questions(tmp_path):
    vocab = write_vocab(tmp_path / "vocab.txt")
    task = load_squad_task("squad/v2.0", data_dir=write_squad(tmp_path / "data", 400, 100, "v2.0"))
    report = runner.run_trials(task, qa_config(vocab, "finetune.num_train_epochs=6"),
                               str(tmp_path / "run"), export=False)
    last = report["trial_results"][0]["dev"]["dev"]["last"]
    assert {"exact", "f1", "HasAns_exact", "NoAns_exact", "best_exact", "best_f1_thresh"} <= set(last)
    null_odds = json.loads((tmp_path / "run" / "predictions" / "dev" / "null_odds.json").read_text())
    dev = json.loads((tmp_path / "data" / "dev.json").read_text())
    truth = {p["qas"][0]["id"]: p["qas"][0]["is_impossible"] for p in dev["data"][0]["paragraphs"]}
    # the answerability logit separates the two kinds: accuracy at its natural threshold 0
    accuracy = np.mean([(null_odds[q] > 0) == impossible for q, impossible in truth.items()])
    assert accuracy >= 0.8, (accuracy, last)
    assert last["best_exact"] >= 80.0
    assert (tmp_path / "run" / "predictions" / "dev" / "predictions_at_threshold.json").exists()


SERVE = BLOCK_NON_TF_IMPORTS + textwrap.dedent("""
    import numpy as np
    import tensorflow as tf

    export_dir, inputs_path, outputs_path = sys.argv[1:4]
    data = np.load(inputs_path)
    loaded = tf.saved_model.load(export_dir)
    out = loaded.signatures["serving_default"](
        **{name: tf.constant(data[name]) for name in ("input_ids", "input_mask", "segment_ids")})
    blocked = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    np.savez(outputs_path, loaded=np.array(blocked + ["-"]), task=np.array(loaded.task.numpy().decode()),
             **{k: v.numpy() for k, v in out.items()})
""")


def _trained_model(root, config):
    from electra_tf.models.question_answerer import ElectraQuestionAnswerer
    from electra_tf.training.checkpointing import restore_weights

    qa = ElectraQuestionAnswerer(config.model, beam_size=config.qa.beam_size)
    restore_weights(qa, tf.train.latest_checkpoint(str(root / "run" / "checkpoints")))
    return qa


@pytest.mark.slow
def test_exported_beam_equals_keras_in_a_tensorflow_only_process(v11_run, tmp_path):
    root, _, config, report = v11_run
    model = _trained_model(root, config)
    # the run's export has serve_text (tensorflow-text ops); the server-side one has not
    export_dir = export_question_answerer(model, str(tmp_path / "export"), task="squad/v1.1")
    assert forbidden_ops(savedmodel_ops(export_dir)) == []
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 45, (3, 40)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[1, 30:] = 0
    segments = np.zeros_like(ids)
    segments[:, 6:] = 1
    segments *= mask
    ids *= mask
    np.savez(tmp_path / "inputs.npz", input_ids=ids, input_mask=mask, segment_ids=segments)
    (tmp_path / "serve.py").write_text(SERVE)
    result = subprocess.run(
        [sys.executable, str(tmp_path / "serve.py"), export_dir, str(tmp_path / "inputs.npz"),
         str(tmp_path / "out.npz")], capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=""))
    assert result.returncode == 0, result.stderr[-3000:]
    out = np.load(tmp_path / "out.npz")
    assert list(out["loaded"]) == ["-"] and str(out["task"]) == "squad/v1.1"
    expected = model({"input_ids": ids, "input_mask": mask, "segment_ids": segments})
    for name in BEAM_OUTPUTS:
        if name.endswith("index"):
            np.testing.assert_array_equal(out[name], expected[name])
        else:
            np.testing.assert_allclose(out[name], expected[name], atol=1e-4)
    assert out["end_top_index"].shape == (3, 8, 8)


@pytest.mark.slow
def test_serve_text_answers_as_the_python_path_on_single_window_inputs(v11_run):
    root, vocab, config, report = v11_run
    model = _trained_model(root, config)
    loaded = tf.saved_model.load(report["trial_results"][0]["export"])
    dev = json.loads((root / "data" / "dev.json").read_text())
    paragraphs = [p for p in dev["data"][0]["paragraphs"] if len(p["context"].split()) < 35][:12]
    questions = [p["qas"][0]["question"] for p in paragraphs]
    contexts = [p["context"] for p in paragraphs]
    served = loaded.signatures["serve_text"](question=tf.constant(questions),
                                             context=tf.constant(contexts))
    python = answer(model, vocab, questions, contexts, max_seq_length=48, max_query_length=4,
                    doc_stride=16, max_answer_length=30)
    served_answers = [a.decode() for a in served["answer"].numpy()]
    assert served_answers == [p["answer"] for p in python]
    np.testing.assert_allclose(served["score"], [p["score"] for p in python], atol=1e-4)
    np.testing.assert_allclose(served["answerable_logit"],
                               [p["answerable_logit"] for p in python], atol=1e-4)
    for text, context in zip(served_answers, contexts):
        assert text and text in context


@pytest.mark.slow
def test_training_windows_are_reused_only_for_the_same_data_and_settings(tmp_path):
    vocab = write_vocab(tmp_path / "vocab.txt")
    data = write_squad(tmp_path / "data", 40, 10, "1.1")
    task = load_squad_task("squad/v1.1", data_dir=data)
    config = qa_config(vocab)
    first = runner.featurize_task(task, config, vocab, str(tmp_path / "run"))
    record = tmp_path / "run" / "features" / "train.tfrecord"  # rewritten = a new inode (rename)
    written = record.stat().st_ino
    assert runner.featurize_task(task, config, vocab, str(tmp_path / "run")).num_train == first.num_train
    assert record.stat().st_ino == written  # reused
    changed = dataclasses.replace(task, train=task.train[:-1] + [
        dataclasses.replace(task.train[-1], question_text="alpha2 alpha1")])
    runner.featurize_task(changed, config, vocab, str(tmp_path / "run"))
    assert record.stat().st_ino != written  # same count, different data: rewritten
    written = record.stat().st_ino
    runner.featurize_task(task, qa_config(vocab, "qa.doc_stride=8"), vocab, str(tmp_path / "run"))
    assert record.stat().st_ino != written  # other settings: rewritten


def as_mrqa_lines(squad_json: dict) -> str:
    """The same paragraphs in MRQA 2019's JSON Lines: header, then `qid`, `answers` (texts) and
    `detected_answers` with inclusive character spans."""
    lines = [{"header": {"dataset": "synthetic", "split": "train"}}]
    for article in squad_json["data"]:
        for paragraph in article["paragraphs"]:
            qas = [{"qid": qa["id"], "question": qa["question"],
                    "answers": [a["text"] for a in qa["answers"]],
                    "detected_answers": [
                        {"text": a["text"],
                         "char_spans": [[a["answer_start"],
                                         a["answer_start"] + len(a["text"]) - 1]]}
                        for a in qa["answers"]]} for qa in paragraph["qas"]]
            lines.append({"context": paragraph["context"], "qas": qas})
    return "".join(json.dumps(line) + "\n" for line in lines)


def test_mrqa_files_give_the_same_task_and_scores_as_squad_v11(tmp_path):
    import gzip

    from electra_tf.task_data.classification_data import TaskDataError
    from electra_tf.task_data.squad import SquadDataError
    from electra_tf.evaluation.squad_metrics import evaluate_v1
    from electra_tf.finetuning import api

    data = write_squad(tmp_path / "squad", 30, 20, "1.1")
    mrqa = tmp_path / "mrqa"
    mrqa.mkdir()
    for split in ("train", "dev"):
        text = as_mrqa_lines(json.loads((tmp_path / "squad" / f"{split}.json").read_text()))
        if split == "dev":  # as distributed: gzipped
            (mrqa / "dev.jsonl.gz").write_bytes(gzip.compress(text.encode()))
        else:
            (mrqa / "train.jsonl").write_text(text)
    squad_task = api.load_task("squad/v1.1", data_dir=data)
    mrqa_task = api.load_task("mrqa", data_dir=str(mrqa))
    assert (mrqa_task.name, mrqa_task.version, mrqa_task.directory_name) == ("mrqa", "v1.1", "mrqa")
    assert mrqa_task.train == squad_task.train and mrqa_task.dev == squad_task.dev
    # MRQA's official script is SQuAD v1.1's: the same scores for any predictions.
    predictions = {e.qas_id: " ".join(e.doc_tokens[i % 3:i % 3 + 2])
                   for i, e in enumerate(squad_task.dev)}
    predictions[squad_task.dev[0].qas_id] = squad_task.dev_json["data"][0]["paragraphs"][0][
        "qas"][0]["answers"][0]["text"]
    scores = evaluate_v1(mrqa_task.dev_json["data"], predictions)
    assert scores == evaluate_v1(squad_task.dev_json["data"], predictions)
    assert scores["exact_match"] >= 100 / 20
    with pytest.raises(SquadDataError, match="not --tfds"):
        api.load_task("mrqa", use_tfds=True)
    (mrqa / "dev.jsonl.gz").write_text("not gzip")
    with pytest.raises(TaskDataError, match="dev.jsonl.gz ends in .gz but is not gzip"):
        api.load_task("mrqa", data_dir=str(mrqa))
