"""`python -m electra_tf.run_finetuning`: GLUE and CSV runs from a converted checkpoint, trials,
submission files, resume, and one `error:` line for every kind of bad input."""

import json
import os
import random
import re
import socket
import subprocess
import sys

import pytest
import tensorflow as tf

from electra_tf.convert_checkpoint import write_electra_tf
from electra_tf.models import ElectraPretrainer
from tests.models.helpers import objective, tiny_model_config
from tests.run_helpers import REPO, SPECIALS, run_cli, run_in_process, two_chains_by_default
from tests.training.test_bfloat16_advice import stop_at_the_check

WORDS = [f"w{i}" for i in range(40)]
TOKENS = SPECIALS + WORDS
SMALL_RUN = ["--override", "finetune.train_batch_size=8", "--override", "finetune.eval_batch_size=8",
             "--override", "finetune.max_seq_length=16", "--override", "finetune.num_train_epochs=1"]


@pytest.fixture(scope="module")
def init_dir(tmp_path_factory):
    """An output of convert_checkpoint: config.yaml, checkpoints/ and vocab.txt."""
    root = tmp_path_factory.mktemp("converted")
    vocab = root / "vocab.txt"
    vocab.write_text("".join(t + "\n" for t in TOKENS))
    pretrainer = ElectraPretrainer(tiny_model_config(vocab_size=len(TOKENS)),
                                   objective(cls_token_id=2, sep_token_id=3, mask_token_id=4))
    write_electra_tf(pretrainer, str(root), str(vocab))
    return str(root)


def sentence(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def write_rte(directory, n_train=24, n_dev=10, n_test=6, labels=("entailment", "not_entailment")):
    """RTE (or WNLI: labels 0/1) in the GLUE download layout: index, sentence1, sentence2, label."""
    rng = random.Random(0)
    os.makedirs(directory, exist_ok=True)
    header = "index\tsentence1\tsentence2\tlabel\n"
    for split, n in (("train", n_train), ("dev", n_dev)):
        with open(os.path.join(directory, f"{split}.tsv"), "w") as f:
            f.write(header + "".join(
                f"{i}\t{sentence(rng, 5)}\t{sentence(rng, 3)}\t"
                f"{rng.choice(labels)}\n" for i in range(n)))
    with open(os.path.join(directory, "test.tsv"), "w") as f:
        f.write("index\tsentence1\tsentence2\n" + "".join(
            f"{i}\t{sentence(rng, 5)}\t{sentence(rng, 3)}\n" for i in range(n_test)))
    return str(directory)


def finetune_cli(*args, timeout=300):
    """`python -m electra_tf.run_finetuning args`, in its own process."""
    return run_cli(list(args), timeout=timeout, module="electra_tf.run_finetuning")


def finetune_main(*args, cwd=REPO):
    """The same command's main in this process (its flags, output and exit status)."""
    return run_in_process(list(args), module="electra_tf.run_finetuning", cwd=cwd)


@pytest.mark.slow
def test_glue_rte_with_trials_predictions_and_export(init_dir, tmp_path):
    data = write_rte(tmp_path / "glue" / "RTE")
    model_dir = tmp_path / "rte"
    result = finetune_cli("--task", "glue/rte", "--data_dir", str(tmp_path / "glue"),
                          "--init_checkpoint", init_dir, "--model_dir", str(model_dir),
                          "--num_trials", "2", "--do_predict", *SMALL_RUN)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "\ndev accuracy:" in result.stdout and "median" in result.stdout
    assert "recipe for a " in result.stderr and "layer-wise decay 0.8" in result.stderr
    assert re.search(r"\] dev at step \d+: accuracy ", result.stderr) and "dev dev" not in (
        result.stdout + result.stderr)
    # without --cpu_chains: two chains of ops where the CPU has two cores
    assert ("2 chains side by side" in result.stderr) == two_chains_by_default()
    report = json.loads((model_dir / "report.json").read_text())
    assert report["status"] == "finished" and len(report["dev"]["dev"]["values"]) == 2
    for k in range(2):
        trial = json.loads((model_dir / f"trial_{k}" / "results.json").read_text())
        assert trial["steps"] == 3 and trial["train_examples"] == 24  # ceil(24 / 8) x 1 epoch
        assert trial["init_checkpoint"].startswith(init_dir)
        assert os.path.exists(os.path.join(trial["export"], "saved_model.pb"))
        submission = (model_dir / f"trial_{k}" / "predictions" / "RTE.tsv").read_text().splitlines()
        assert submission[0] == "id\tlabel" and len(submission) == 7
        assert {line.split("\t")[1] for line in submission[1:]} <= {"entailment", "not_entailment"}
        assert [line.split("\t")[0] for line in submission[1:]] == [str(i) for i in range(6)]
    # Rerunning the finished command keeps the results instead of training again.
    again = finetune_main("--task", "glue/rte", "--data_dir", data, "--init_checkpoint", init_dir,
                          "--model_dir", str(model_dir), "--num_trials", "2", *SMALL_RUN)
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stderr.count("is finished; keeping its results") == 2
    assert "fine-tuning glue/rte" not in again.stderr and "fine-tuning glue/rte" in result.stderr
    assert json.loads((model_dir / "report.json").read_text())["dev"] == report["dev"]


@pytest.mark.slow
def test_glue_rte_with_cpu_chains(init_dir, tmp_path):
    write_rte(tmp_path / "glue" / "RTE")
    result = finetune_cli("--task", "glue/rte", "--data_dir", str(tmp_path / "glue"),
                          "--init_checkpoint", init_dir, "--model_dir", str(tmp_path / "rte"),
                          "--cpu_chains", "2", "--noexport", *SMALL_RUN)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "batch 8, warmup 10%, 2 chains side by side" in result.stderr
    assert "\ndev accuracy:" in result.stdout
    trial = json.loads((tmp_path / "rte" / "results.json").read_text())
    assert trial["steps"] == 3


@pytest.mark.slow
def test_top_layer_reinitialisation_is_an_override_and_too_many_layers_is_one_error_line(
        init_dir, tmp_path):
    data = write_rte(tmp_path / "glue" / "RTE")
    args = ["--task", "glue/rte", "--data_dir", str(tmp_path / "glue"), "--init_checkpoint",
            init_dir, "--noexport", *SMALL_RUN]
    result = finetune_main(*args, "--model_dir", str(tmp_path / "one"), "--override",
                           "finetune.reinit_top_layers=1")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "the top 1 transformer blocks start from a fresh initialisation" in result.stderr
    too_many = finetune_main(*args, "--model_dir", str(tmp_path / "three"), "--override",
                             "finetune.reinit_top_layers=3")
    assert too_many.returncode == 1 and "Traceback" not in too_many.stderr
    assert too_many.stderr.strip().splitlines()[-1] == (
        "error: finetune.reinit_top_layers: cannot re-initialise the top 3 blocks of an encoder "
        "of 2")
    negative = finetune_main(*args, "--model_dir", str(tmp_path / "negative"), "--override",
                             "finetune.reinit_top_layers=-1")
    assert negative.returncode == 1
    assert "finetune.reinit_top_layers must be >= 0, got -1" in negative.stderr


@pytest.mark.slow
def test_several_tasks_run_one_after_the_other(init_dir, tmp_path):
    write_rte(tmp_path / "glue" / "RTE")
    write_rte(tmp_path / "glue" / "WNLI", labels=("0", "1"))
    result = finetune_main("--task", "glue/rte,glue/wnli", "--data_dir", str(tmp_path / "glue"),
                           "--init_checkpoint", init_dir, "--model_dir", str(tmp_path / "out"),
                           "--noexport", *SMALL_RUN)
    assert result.returncode == 0, result.stderr[-3000:]
    for name in ("glue_rte", "glue_wnli"):
        results = json.loads((tmp_path / "out" / name / "results.json").read_text())
        assert results["task"] == name.replace("_", "/") and results["status"] == "finished"
        assert "export" not in results
    assert result.stdout.index("glue/rte:") < result.stdout.index("glue/wnli:")


@pytest.mark.slow
def test_csv_regression_from_scratch_and_jsonl(init_dir, tmp_path):
    rng = random.Random(1)
    data = tmp_path / "data"
    data.mkdir()
    for split, n in (("train", 16), ("dev", 8)):
        with open(data / f"{split}.jsonl", "w") as f:
            for _ in range(n):
                f.write(json.dumps({"text": sentence(rng, 4), "score": rng.uniform(1, 3)}) + "\n")
    result = finetune_main("--task", "csv", "--data_dir", str(data), "--text_a_column", "text",
                           "--label_column", "score", "--regression", "--label_range", "1,3",
                           "--vocab_file", os.path.join(init_dir, "vocab.txt"),
                           "--override", "model.vocab_size=45", "--override", "model.num_layers=1",
                           "--override", "model.hidden_size=16", "--override", "model.num_heads=1",
                           "--override", "model.embedding_size=16",
                           "--override", "model.intermediate_size=32",
                           "--model_dir", str(tmp_path / "out"), *SMALL_RUN)
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["init_checkpoint"] is None and results["headline"] == "spearman"
    assert set(results["dev"]["dev"]["last"]) >= {"pearson", "spearman", "mse"}


def assert_one_line_error(result, *fragments):
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def write_csv(path, rows):
    path.write_text("".join(",".join(row) + "\n" for row in rows))


@pytest.fixture
def csv_dir(tmp_path):
    data = tmp_path / "csv"
    data.mkdir()
    rows = [["text", "label"]] + [[f"w{i} w{i + 1}", "pos" if i % 2 else "neg"] for i in range(20)]
    write_csv(data / "train.csv", rows)
    write_csv(data / "dev.csv", rows[:9])
    return data


CSV_ARGS = ["--task", "csv", "--text_a_column", "text", "--label_column", "label",
            "--labels", "neg,pos"]


@pytest.mark.parametrize("case", [
    "unknown_glue_task", "unknown_task", "missing_files", "missing_column", "unknown_label",
    "regression_not_a_number", "empty_split", "not_utf8", "too_long", "size_mismatch",
    "zero_trials"])
def test_bad_input_is_one_error_line_and_nothing_is_overwritten(case, init_dir, csv_dir, tmp_path):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "config.yaml").write_text("previous run\n")
    args = ["--init_checkpoint", init_dir, "--model_dir", str(model_dir), "--data_dir", str(csv_dir),
            "--override", "finetune.max_seq_length=16"]
    fragments = ()
    if case == "unknown_glue_task":
        args += ["--task", "glue/foo"]
        fragments = ("unknown GLUE task 'glue/foo'", "mnli")
    elif case == "unknown_task":
        args += ["--task", "squad9"]
        fragments = ("unknown task 'squad9'", "glue/mnli", "csv")
    elif case == "missing_files":
        empty = tmp_path / "empty"
        empty.mkdir()
        args = ["--init_checkpoint", init_dir, "--model_dir", str(model_dir), "--task",
                "glue/rte", "--data_dir", str(empty), "--override", "finetune.max_seq_length=16"]
        fragments = ("train.tsv",)
    elif case == "missing_column":
        args += [*CSV_ARGS[:2], "--text_a_column", "sentence", "--label_column", "label",
                 "--labels", "neg,pos"]
        fragments = ("sentence", "text", "label")
    elif case == "unknown_label":
        write_csv(csv_dir / "dev.csv", [["text", "label"], ["w1 w2", "neg"], ["w2", "neutral"]])
        args += CSV_ARGS
        fragments = ("neutral", "dev.csv", "line 3")
    elif case == "regression_not_a_number":
        write_csv(csv_dir / "train.csv", [["text", "label"]] + [["w1 w2", "0.5"]] * 20)
        write_csv(csv_dir / "dev.csv", [["text", "label"], ["w1 w2", "0.5"], ["w2", "high"]])
        args += CSV_ARGS[:6] + ["--regression"]
        fragments = ("high", "dev.csv", "line 3")
    elif case == "empty_split":
        write_csv(csv_dir / "dev.csv", [["text", "label"]])
        args += CSV_ARGS
        fragments = ("dev.csv", "no examples")
    elif case == "not_utf8":
        (csv_dir / "train.csv").write_bytes(b"text,label\nw1 caf\xe9,neg\n")
        args += CSV_ARGS
        fragments = ("train.csv", "UTF-8", "byte offset 17")
    elif case == "too_long":
        args += CSV_ARGS + ["--override", "finetune.max_seq_length=128"]
        fragments = ("max_seq_length 128", "max_position_embeddings 64")
    elif case == "size_mismatch":
        args += CSV_ARGS + ["--override", "model.hidden_size=64", "--override", "model.num_heads=2"]
        fragments = ("model.hidden_size 32", "64")
    elif case == "zero_trials":
        args += CSV_ARGS + ["--num_trials", "0"]
        fragments = ("--num_trials",)
    assert_one_line_error(finetune_main(*args), *fragments)
    assert (model_dir / "config.yaml").read_text() == "previous run\n"
    assert sorted(os.listdir(model_dir)) == ["config.yaml"]


def test_a_run_directory_in_use_is_refused_naming_its_holder(init_dir, csv_dir, tmp_path):
    """As in pretraining (tests/test_run_lock.py): a live holder's run.lock refuses a second
    fine-tuning run before it writes anything."""
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        lock = {"host": socket.gethostname(), "pid": holder.pid, "started": "2026-12-06T09:00:00"}
        (model_dir / "run.lock").write_text(json.dumps(lock))
        result = finetune_main("--init_checkpoint", init_dir, "--model_dir", str(model_dir),
                               "--data_dir", str(csv_dir), *CSV_ARGS, "--override",
                               "finetune.max_seq_length=16")
    finally:
        holder.kill()
        holder.wait()
    assert_one_line_error(result, f"{model_dir} is in use by process {holder.pid} on "
                                  f"{socket.gethostname()}")
    assert os.listdir(model_dir) == ["run.lock"]


def test_cpu_chains_that_do_not_divide_the_batch(init_dir, tmp_path, monkeypatch):
    # As `--cpu_chains 3` leaves it, without changing this process's intra-op threads.
    from electra_tf.models.replicated import ReplicatedModel

    monkeypatch.setattr(ReplicatedModel, "parallel_chains", 3)
    write_rte(tmp_path / "glue" / "RTE")
    result = finetune_main("--task", "glue/rte", "--data_dir", str(tmp_path / "glue"),
                           "--init_checkpoint", init_dir, "--model_dir", str(tmp_path / "rte"),
                           *SMALL_RUN)
    assert_one_line_error(result, "--cpu_chains 3 does not divide each micro-batch: "
                                  "finetune.train_batch_size 8")
    assert not (tmp_path / "rte").exists()


def test_demo_without_the_pretraining_demo_says_what_to_run(tmp_path):
    # The demo reads runs/ relative to the working directory: run it from an empty one.
    assert_one_line_error(finetune_main(cwd=tmp_path), "python -m electra_tf.run_pretraining",
                          "first")


def test_demo_takes_the_overrides_and_the_trials_given(tmp_path, monkeypatch):
    from electra_tf.finetuning import demo

    calls = []
    monkeypatch.setattr(demo, "run_demo", lambda **kwargs: calls.append(kwargs) or 0)
    assert finetune_main(cwd=tmp_path).returncode == 0
    assert finetune_main("--num_trials", "1", "--override", "finetune.num_train_epochs=1",
                         cwd=tmp_path).returncode == 0
    assert calls == [{"trials": demo.TRIALS, "overrides": []},
                     {"trials": 1, "overrides": ["finetune.num_train_epochs=1"]}]


def write_squad_files(directory, version="1.1", n=24):
    """Official-layout SQuAD JSON over the test vocabulary: the answer is the run of w30-w39."""
    rng = random.Random(0)
    directory.mkdir(parents=True, exist_ok=True)
    for split in ("train", "dev"):
        paragraphs = []
        for i in range(n):
            words = [rng.choice(WORDS[5:30]) for _ in range(rng.randint(16, 40))]
            answer = [rng.choice(WORDS[30:])]
            at = rng.randint(0, len(words))
            words[at:at] = answer
            start = len(" ".join(words[:at])) + (1 if at else 0)
            qa = {"id": f"{split}{i}", "question": "w1 w2",
                  "answers": [{"text": answer[0], "answer_start": start}]}
            if version == "v2.0":
                qa["is_impossible"] = False
            paragraphs.append({"context": " ".join(words), "qas": [qa]})
        (directory / f"{split}.json").write_text(json.dumps(
            {"version": version, "data": [{"title": "t", "paragraphs": paragraphs}]}))
    return directory


SQUAD_RUN = SMALL_RUN[:-4] + ["--override", "finetune.max_seq_length=32", "--override",
                              "finetune.num_train_epochs=1", "--override", "qa.doc_stride=8",
                              "--override", "qa.max_query_length=4", "--override", "qa.beam_size=8"]


@pytest.mark.slow
def test_squad_v20_from_official_files_writes_prediction_files_and_scores(init_dir, tmp_path):
    data = write_squad_files(tmp_path / "squad", "v2.0")
    model_dir = tmp_path / "squad_run"
    result = finetune_main("--task", "squad/v2.0", "--train_file", str(data / "train.json"),
                           "--predict_file", str(data / "dev.json"), "--init_checkpoint", init_dir,
                           "--model_dir", str(model_dir), "--with_tokenizer", *SQUAD_RUN)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "\ndev f1:" in result.stdout
    results = json.loads((model_dir / "results.json").read_text())
    assert {"exact", "f1", "best_exact", "best_f1_thresh"} <= set(results["dev"]["dev"]["last"])
    assert results["train_examples"] > 24  # windows: contexts longer than one window
    predictions = model_dir / "predictions" / "dev"
    for name in ("predictions", "nbest_predictions", "null_odds", "predictions_at_threshold"):
        assert len(json.loads((predictions / f"{name}.json").read_text())) == 24
    config = (model_dir / "config.yaml").read_text()
    assert "max_seq_length: 32" in config and "beam_size: 8" in config
    assert json.loads((model_dir / "task.json").read_text())["kind"] == "qa"
    loaded = tf.saved_model.load(results["export"])
    served = loaded.signatures["serve_text"](question=tf.constant(["w1 w2"]),
                                             context=tf.constant(["w5 w6 w31 w7"]))
    assert served["answer"].numpy()[0].decode() in "w5 w6 w31 w7"


@pytest.mark.parametrize("case", ["not_squad", "v2_as_v1", "stride", "query"])
def test_squad_bad_input_is_one_error_line(case, init_dir, tmp_path):
    data = write_squad_files(tmp_path / "squad", "v2.0" if case == "v2_as_v1" else "1.1")
    task, extra, fragments = "squad/v1.1", [], []
    if case == "not_squad":
        (data / "train.json").write_text(json.dumps({"version": "1.1", "data": [{"title": "t"}]}))
        fragments = ["paragraphs"]
    elif case == "v2_as_v1":
        fragments = ["squad/v2.0"]
    elif case == "stride":
        extra, fragments = ["--override", "qa.doc_stride=100"], ["doc_stride"]
    else:
        extra, fragments = ["--override", "qa.max_query_length=40"], ["max_query_length"]
    model_dir = tmp_path / "run"
    result = finetune_main("--task", task, "--data_dir", str(data), "--init_checkpoint", init_dir,
                           "--model_dir", str(model_dir), *SQUAD_RUN, *extra)
    assert_one_line_error(result, *fragments)
    assert not (model_dir / "checkpoints").exists()


def write_conll_files(directory, n=24):
    """CoNLL-2003 layout (word POS chunk tag) over the test vocabulary: w30-w39 runs are ENT."""
    rng = random.Random(0)
    directory.mkdir(parents=True, exist_ok=True)
    for split in ("train", "dev", "test"):
        blocks = ["-DOCSTART- -X- -X- O"]
        for _ in range(n):
            lines = []
            for _ in range(rng.randint(3, 8)):
                if rng.random() < 0.3:
                    lines += [f"w{rng.randint(30, 39)} NN B-NP {tag}-ENT" for tag in "BI"]
                lines.append(f"w{rng.randint(5, 29)} VB B-VP O")
            blocks.append("\n".join(lines))
        (directory / f"{split}.txt").write_text("\n\n".join(blocks) + "\n")
    return directory


TAGGING_RUN = SMALL_RUN[:-2] + ["--override", "finetune.num_train_epochs=1"]


@pytest.mark.slow
def test_ner_from_conll_files_with_predictions_and_both_exports(init_dir, tmp_path):
    data = write_conll_files(tmp_path / "conll")
    model_dir = tmp_path / "ner"
    result = finetune_main("--task", "ner", "--data_dir", str(data), "--init_checkpoint", init_dir,
                           "--model_dir", str(model_dir), "--with_tokenizer", "--do_predict",
                           *TAGGING_RUN)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "\ndev f1:" in result.stdout
    results = json.loads((model_dir / "results.json").read_text())
    assert {"precision", "recall", "f1", "accuracy"} <= set(results["dev"]["dev"]["last"])
    card = json.loads((model_dir / "task.json").read_text())
    assert card == {"task": "ner", "kind": "tagging",
                    "tags": ["B-ENT", "E-ENT", "O"]}
    dev_lines = (model_dir / "predictions" / "dev" / "dev.txt").read_text().splitlines()
    assert all(len(line.split()) == 3 for line in dev_lines if line)  # word gold predicted
    test_lines = (model_dir / "predictions" / "test.txt").read_text().splitlines()
    words = [line.split() for line in test_lines if line]
    assert len(words) == sum(1 for line in (data / "test.txt").read_text().splitlines()
                             if line and not line.startswith("-DOCSTART-"))
    assert all(len(w) == 2 and w[1] in card["tags"] for w in words)
    served = tf.saved_model.load(results["export"]).signatures["serve_text"](
        text=tf.constant(["w5 w31 w32 w6"]))
    assert [w.decode() for w in served["words"].numpy()[0]] == ["w5", "w31", "w32", "w6"]
    assert all(t.decode() in card["tags"] for t in served["tags"].numpy()[0])
    # export_savedmodel rebuilds the tagger from the run directory.
    exported = run_in_process(["--model_dir", str(model_dir), "--output_dir",
                               str(tmp_path / "served")], module="electra_tf.export_savedmodel")
    assert exported.returncode == 0, exported.stderr[-3000:]
    loaded = tf.saved_model.load(str(tmp_path / "served" / str(results["steps"])))
    assert [t.decode() for t in loaded.tag_names.numpy()] == card["tags"]


@pytest.mark.parametrize("case", ["columns", "unseen_tag", "tag_column"])
def test_tagging_bad_input_is_one_error_line(case, init_dir, tmp_path):
    data = write_conll_files(tmp_path / "conll")
    extra = []
    if case == "columns":
        (data / "dev.txt").write_text("w1 NN B-NP O\nw2 NN O\n")
        fragments = ["dev.txt, line 2", "3 columns", "has 4"]
    elif case == "unseen_tag":
        (data / "dev.txt").write_text("w1 NN B-NP O\nw2 NN I-NP B-PER\n")
        fragments = ["dev.txt, line 2", "B-PER", "never uses"]
    else:
        extra, fragments = ["--tag_column", "7"], ["train.txt", "no tag column 7"]
    model_dir = tmp_path / "run"
    result = finetune_main("--task", "ner", "--data_dir", str(data), "--init_checkpoint", init_dir,
                           "--model_dir", str(model_dir), *TAGGING_RUN, *extra)
    assert_one_line_error(result, *fragments)
    assert not model_dir.exists()


def test_bf16_is_checked_against_the_cpu_before_training(init_dir, tmp_path, monkeypatch):
    # tests/training/test_bfloat16_advice.py tests the check; here: run_finetuning makes it.
    calls = stop_at_the_check(monkeypatch)
    write_rte(tmp_path / "glue" / "RTE")
    result = finetune_main("--task", "glue/rte", "--data_dir", str(tmp_path / "glue"),
                           "--init_checkpoint", init_dir, "--model_dir", str(tmp_path / "rte"),
                           "--mixed_precision", "bf16", *SMALL_RUN)
    assert result.returncode == 1 and "_Stop" in result.stderr, result.stderr[-2000:]
    assert [precision for _, precision in calls] == ["bf16"]
    assert not (tmp_path / "rte").exists() or not any((tmp_path / "rte").rglob("ckpt-*"))
