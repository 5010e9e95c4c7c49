"""`python -m electra_tf.study`: the plan's rules (epochs, equal-FLOPs checkpoints, subsets), the
report from a hand-written results.jsonl, and a whole study at tiny size, run twice (the second
run resumes and runs nothing)."""

import json
import math
import os
import random

import pytest

from electra_tf.study import plan, report, results
from tests.run_helpers import one_layer_overrides, run_cli, run_in_process

MODULE = "electra_tf.study.__main__"
LABELS = ("sports", "cooking", "music")
TOPIC_WORDS = {
    "sports": "football goal team match player coach score league ball stadium".split(),
    "cooking": "recipe oven butter flour kitchen sauce bake salt onion pan".split(),
    "music": "guitar song melody concert band piano rhythm singer album drum".split(),
}
COMMON = "the a of and to in is was with for on that it this by from we they".split()
VERBS = "liked watched made heard saw found played cooked loved wrote".split()


def _sentence(rng, topic):
    words = [rng.choice(COMMON), rng.choice(TOPIC_WORDS[topic]), rng.choice(VERBS),
             rng.choice(COMMON), rng.choice(COMMON), rng.choice(TOPIC_WORDS[topic]),
             rng.choice(COMMON), rng.choice(TOPIC_WORDS[topic])]
    return " ".join(words).capitalize() + "."


def _documents(rng, count):
    documents = []
    for _ in range(count):
        topic = rng.choice(LABELS)
        documents.append([_sentence(rng, topic) for _ in range(rng.randint(4, 8))])
    return documents


def _write_documents(path, documents):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n\n".join("\n".join(doc) for doc in documents) + "\n")


def write_data_dir(root, train=60, dev=30, test=30):
    """A data directory of the study's layout: made-up sentences with topic words per label
    (corpus about 300 lines, held-out about 50), and the task's three splits."""
    rng = random.Random(0)
    _write_documents(os.path.join(root, "corpus", "made_up.txt"), _documents(rng, 50))
    _write_documents(os.path.join(root, "heldout", "made_up.txt"), _documents(rng, 10))
    os.makedirs(os.path.join(root, "sections"))
    for split, count in (("train", train), ("dev", dev), ("test", test)):
        with open(os.path.join(root, "sections", f"{split}.tsv"), "w") as f:
            f.write("text\tlabel\tpackage\n")
            for i in range(count):
                label = LABELS[i % len(LABELS)]
                f.write(f"{_sentence(rng, label)} {_sentence(rng, label)}\t{label}\tp{i}\n")
    with open(os.path.join(root, "sections", "labels.txt"), "w") as f:
        f.write("\n".join(LABELS) + "\n")
    return str(root)


# ---------------------------------------------------------------------------------------------
# The plan


def test_epochs_reach_the_minimum_steps_for_small_label_counts():
    assert plan.finetune_epochs(100, 32, 100) == math.ceil(100 * 32 / 100)  # 32 epochs
    assert plan.finetune_epochs(300, 32, 100) == 11
    assert plan.finetune_epochs(1000, 32, 100) == 4
    assert plan.finetune_epochs(5000, 32, 100) == 3  # at least the original's 3
    assert plan.finetune_epochs(plan.ALL, 32, 100) == 3
    for n in (100, 300, 1000):  # steps = ceil(n / batch) * epochs >= the minimum
        assert math.ceil(n / 32) * plan.finetune_epochs(n, 32, 100) >= 100


def test_mlm_checkpoints_are_at_electras_flops():
    checkpoints = (500, 2000, 8000)
    electra, mlm = 1.3e9, 1.0e9
    run = plan.mlm_plan(checkpoints, electra, mlm)
    assert run.train_steps == 10400 and run.save_every == 650
    assert run.encoder_steps == (650, 2600, 10400)  # the same fractions of the run
    for ours, theirs in zip(checkpoints, run.encoder_steps):
        assert run.flops(theirs) == pytest.approx(ours * electra, rel=1e-3)
    assert run.keep >= run.train_steps // run.save_every  # every encoder survives
    # an inexact ratio: the last at round(last * ratio), the others at multiples of the first
    run = plan.mlm_plan(checkpoints, 1.3137e9, 1.0e9)
    assert run.encoder_steps == (657, 2628, round(8000 * 1.3137))
    assert abs(run.flops(run.encoder_steps[-1]) - 8000 * 1.3137e9) <= 0.5 * mlm
    electra_run = plan.electra_plan(checkpoints, electra)
    assert (electra_run.train_steps, electra_run.save_every, electra_run.keep) == (8000, 500, 17)


def test_a_longer_schedule_stops_both_runs_at_the_last_checkpoint():
    checkpoints = (500, 2000, 8000)
    electra, mlm = 1.3e9, 1.0e9
    electra_run = plan.electra_plan(checkpoints, electra, 32000)
    assert (electra_run.train_steps, electra_run.schedule_steps) == (8000, 32000)
    mlm_run = plan.mlm_plan(checkpoints, electra, mlm, 32000)
    assert mlm_run.encoder_steps == (650, 2600, 10400)  # as without the longer schedule
    assert (mlm_run.train_steps, mlm_run.schedule_steps) == (10400, 41600)
    assert plan.electra_plan(checkpoints, electra).schedule_steps == 8000
    assert plan.mlm_plan(checkpoints, electra, mlm).schedule_steps == 10400
    assert plan.parse_schedule_steps(None, checkpoints) == 8000
    assert plan.parse_schedule_steps("16000", checkpoints) == 16000
    for bad in ("4000", "many"):
        with pytest.raises(plan.StudyError, match="schedule_steps"):
            plan.parse_schedule_steps(bad, checkpoints)


def test_flag_values_are_checked():
    assert plan.parse_checkpoints(["5", "10", "40"]) == (5, 10, 40)
    for bad in (["10", "15"], ["10", "5"], [], ["0"]):
        with pytest.raises(plan.StudyError):
            plan.parse_checkpoints(bad)
    assert plan.parse_label_counts(["all", "300", "100"]) == (100, 300, "all")
    with pytest.raises(plan.StudyError, match="'many'"):
        plan.parse_label_counts(["many"])
    assert plan.parse_objectives(["mlm", "electra"]) == ("electra", "mlm")
    with pytest.raises(plan.StudyError):
        plan.parse_objectives(["bert"])
    assert [plan.format_lr(x) for x in (3e-4, 1e-3, 0.003, 2.5e-5)] == ["3e-4", "1e-3", "3e-3",
                                                                        "2.5e-5"]


def test_training_subsets_depend_only_on_label_count_and_seed():
    train = list(range(100))
    assert plan.training_subset(train, 10, 0) == plan.training_subset(train, 10, 0)
    assert plan.training_subset(train, 10, 0) != plan.training_subset(train, 10, 1)
    assert len(set(plan.training_subset(train, 10, 1))) == 10
    assert plan.training_subset(train, plan.ALL, 3) == train


# ---------------------------------------------------------------------------------------------
# The report from results.jsonl alone


def _record(encoder, objective, step, flops, n, lr, seed, dev, test):
    return {"encoder": encoder, "objective": objective, "pretraining_step": step, "flops": flops,
            "n": n, "train_examples": 100 if n == 100 else 1000, "lr": lr, "seed": seed,
            "dev": dev, "test": test, "majority_dev": 30.0, "majority_test": 31.0 + seed,
            "epochs": 32 if n == 100 else 3, "steps": 100, "seconds": 1.0}


def test_write_report_from_a_hand_written_results_file(tmp_path):
    lines = []
    for encoder, objective, step, flops, base in (("random", "none", 0, 0.0, 40),
                                                  ("electra@500", "electra", 500, 1e12, 50),
                                                  ("electra@2000", "electra", 2000, 4e12, 60),
                                                  ("mlm@650", "mlm", 650, 1e12, 45)):
        for n in (100, "all"):
            # seed 0 at three rates: 1e-3 has the best dev accuracy
            for lr, dev in ((3e-4, base), (1e-3, base + 5), (3e-3, base - 5)):
                lines.append(_record(encoder, objective, step, flops, n, lr, 0, dev, base + 1))
            for seed in (1, 2):
                lines.append(_record(encoder, objective, step, flops, n, 1e-3, seed, base,
                                     base + 1 + seed))
    # the MLM's seed 0 at 3e-3 and its seed 2 diverged (non-finite loss) at n=100
    for line in lines:
        if (line["encoder"], line["n"], line["seed"]) == ("mlm@650", 100, 2) or (
                line["encoder"], line["n"], line["seed"], line["lr"]) == ("mlm@650", 100, 0, 3e-3):
            line.update(dev=None, test=None, diverged=True)
    with open(tmp_path / "results.jsonl", "w") as f:
        f.write("".join(json.dumps(line) + "\n" for line in lines))
        f.write('{"encoder": "cut short')  # an interrupted write
    paths = report.write_report(str(tmp_path))

    summary = json.loads((tmp_path / "summary.json").read_text())
    cell = summary["encoders"]["electra@2000"]["cells"]["100"]
    assert cell["lr"] == 1e-3 and cell["seeds"] == [0, 1, 2]
    assert cell["test"] == {"values": [61, 62, 63], "median": 62, "min": 61, "max": 63,
                            "std": 1.0, "diverged": 0}
    assert list(summary["encoders"]) == ["random", "electra@500", "electra@2000", "mlm@650"]
    assert summary["majority"]["100"]["test"]["median"] == 32.0
    mlm = summary["encoders"]["mlm@650"]["cells"]["100"]
    assert mlm["lr"] == 1e-3 and mlm["test"]["values"] == [46, 47, None]
    assert mlm["test"]["median"] == 46.5 and mlm["test"]["diverged"] == 1
    assert mlm["test"]["std"] == pytest.approx(0.5 ** 0.5)  # of 46 and 47: the diverged left out
    table = (tmp_path / "table.md").read_text()
    assert "| electra@2000 | 4e+12 | 62.0 (61.0-63.0) lr 1e-3 | 62.0 (61.0-63.0) lr 1e-3 |" in table
    assert "| mlm@650 | 1e+12 | 46.5 (46.0-47.0), 1 diverged lr 1e-3 |" in table
    assert "| no pretraining | 0 |" in table and "| majority class | |" in table
    assert paths["plot"] and open(paths["plot"], "rb").read(8) == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("counts", [(100,), (100, 300, "all")])
def test_the_accuracy_plot_keeps_its_text_inside_and_labels_a_log_axis_within_a_decade(counts):
    from tests.plot_checks import assert_well_drawn, drawn_tick_labels

    records = [_record(encoder, objective, step, flops, n, 1e-3, seed, 50, 50 + seed + step / 1e3)
               for encoder, objective, step, flops in (("random", "none", 0, 0.0),
                                                       ("electra@1000", "electra", 1000, 1.5e13),
                                                       ("electra@4000", "electra", 4000, 6e13),
                                                       ("mlm@1000", "mlm", 1000, 1.5e13),
                                                       ("mlm@4000", "mlm", 4000, 6e13))
               for n in counts for seed in (0, 1, 2)]
    figure = report.accuracy_figure(results.summarize(records))
    assert_well_drawn(figure)
    for ax in (ax for ax in figure.axes if ax.get_visible()):
        flops_labels = [t.get_text() for t in drawn_tick_labels(ax, "x") if t.get_text()]
        assert len(flops_labels) >= 2, flops_labels  # 1.5e13 .. 6e13: 2e13 and 5e13 at least


def test_a_partial_results_file_gives_a_partial_report(tmp_path):
    results.append_result(str(tmp_path), _record("random", "none", 0, 0.0, 100, 1e-3, 0, 40, 41))
    report.write_report(str(tmp_path))
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["encoders"]["random"]["cells"]["100"]["test"]["median"] == 41
    assert (tmp_path / "accuracy_vs_flops.png").exists()


def test_a_study_directory_of_other_settings_is_refused_before_anything_runs(tmp_path):
    from electra_tf.study import run_study

    output_dir = tmp_path / "study"
    output_dir.mkdir()
    (output_dir / "study.json").write_text(json.dumps({"settings": {"checkpoints": [5, 10]}}))
    with pytest.raises(plan.StudyError, match="checkpoints"):
        run_study(data_dir=str(tmp_path / "no_data"), output_dir=str(output_dir),
                  checkpoints=[10, 20])
    assert sorted(os.listdir(tmp_path)) == ["study"]  # nothing built, not even the data


def _write_study(directory, records, **settings):
    directory.mkdir(parents=True, exist_ok=True)
    base = {"data_dir": "/data/debian", "pretrain_config": "pretrain/study",
            "overrides": ["run.max_seq_length=128"], "finetune_config": "finetune/small",
            "finetune_overrides": [], "min_finetune_steps": 100, "finetune_max_seq_length": 128}
    base.update(settings)
    (directory / "study.json").write_text(json.dumps({"settings": base}))
    for record in records:
        results.append_result(str(directory), record)
    return base


def test_random_from_copies_the_other_studys_random_trials_once(tmp_path):
    from electra_tf.study import reuse

    other = tmp_path / "base"
    _write_study(other, [
        dict(_record("random", "none", 0, 0.0, 100, 1e-3, 0, 40, 41),
             directory="finetune/random/100/lr1e-3_seed0"),
        _record("random", "none", 0, 0.0, 100, 1e-3, 1, 42, 43),
        _record("electra@3000", "electra", 3000, 5e13, 100, 1e-3, 0, 50, 51)])
    mine = tmp_path / "lr2e-3"
    settings = _write_study(mine, [_record("random", "none", 0, 0.0, 100, 1e-3, 1, 42, 43)],
                            overrides=["run.max_seq_length=128",
                                       "optimizer.learning_rate=2e-3"])
    assert reuse.reuse_random_trials(str(mine), str(other), settings) == 1  # seed 1 was there
    copied = results.read_records(str(mine))[-1]
    assert (copied["encoder"], copied["seed"], copied["test"]) == ("random", 0, 41)
    assert copied["reused_from"] == str(other)
    assert copied["directory"] == os.path.join("..", "base", "finetune", "random", "100",
                                               "lr1e-3_seed0")
    assert all(r["encoder"] == "random" for r in results.read_records(str(mine)))
    assert reuse.reuse_random_trials(str(mine), str(other), settings) == 0  # nothing twice
    assert len(results.read_records(str(mine))) == 2


@pytest.mark.parametrize("change, named", [
    ({"overrides": ["run.max_seq_length=128", "model.num_layers=4"]}, "model overrides"),
    ({"finetune_overrides": ["finetune.train_batch_size=16"]}, "finetune_overrides"),
    ({"data_dir": "/data/other"}, "data_dir"),
    ({"pretrain_config": "pretrain/mini"}, "pretrain_config"),
])
def test_random_from_refuses_a_study_whose_random_trials_differ(tmp_path, change, named):
    from electra_tf.study import reuse

    other = tmp_path / "other"
    _write_study(other, [_record("random", "none", 0, 0.0, 100, 1e-3, 0, 40, 41)], **change)
    settings = _write_study(tmp_path / "mine", [])
    with pytest.raises(plan.StudyError, match=named):
        reuse.reuse_random_trials(str(tmp_path / "mine"), str(other), settings)
    assert results.read_records(str(tmp_path / "mine")) == []


def test_random_from_compares_only_the_fine_tuned_encoders_sizes():
    from electra_tf.study import reuse

    assert reuse.model_overrides(["model.b=1", "optimizer.learning_rate=2e-3", "model.a=2",
                                  "model.generator_fraction=0.5",
                                  "model.untied_generator_embeddings=true",
                                  "model.embedding_sharing=gdes",
                                  "model.hidden_dropout=0", "model.attention_dropout=0",
                                  "model.pre_layer_norm=true"]) == [
        "model.a=2", "model.b=1", "model.pre_layer_norm=true"]


def test_random_from_a_directory_without_a_study_is_refused_before_anything_runs(tmp_path):
    from electra_tf.study import run_study

    with pytest.raises(plan.StudyError, match="not a study directory"):
        run_study(data_dir=str(tmp_path / "no_data"), output_dir=str(tmp_path / "study"),
                  random_from=str(tmp_path))
    assert not (tmp_path / "no_data").exists()


@pytest.mark.parametrize("change, named", [
    ({"overrides": ["run.max_seq_length=128", "optimizer.learning_rate=2e-3"]}, "overrides"),
    ({"schedule_steps": 16000}, "schedule_steps"),
    ({"data_dir": "/data/other"}, "data_dir"),
    ({"pretrain_config": "pretrain/mini"}, "pretrain_config"),
    ({"max_seq_length": 256}, "max_seq_length"),
    ({"checkpoints": [1000, 2000]}, "no checkpoints 4000"),
    ({"objectives": ["electra"]}, "no objectives mlm"),
])
def test_pretraining_from_refuses_a_study_whose_encoders_differ(tmp_path, change, named):
    from electra_tf.study import reuse

    pretraining = {"checkpoints": [1000, 2000, 4000], "schedule_steps": 4000,
                   "max_seq_length": 128, "objectives": ["electra", "mlm"]}
    other = _write_study(tmp_path / "other", [], **{**pretraining, **change})
    mine = _write_study(tmp_path / "mine", [], **pretraining,
                        finetune_overrides=["optimizer.bias_correction=true"])
    same = _write_study(tmp_path / "same", [], **pretraining)  # another fine-tuning only
    reuse.check_pretraining_compatible(same, mine, "same")
    with pytest.raises(plan.StudyError, match=named):
        reuse.check_pretraining_compatible(other, mine, "other")


def test_pretraining_from_a_study_whose_pretraining_is_unfinished_is_refused(tmp_path):
    from electra_tf.study import pretraining

    run = plan.electra_plan((10, 20), 1e9, None, None)
    finished = tmp_path / "other" / "pretrain" / "electra" / "checkpoints"
    finished.mkdir(parents=True)
    (finished / "ckpt-10.index").write_text("")
    with pytest.raises(plan.StudyError, match="lacks the electra checkpoints of steps 20"):
        pretraining.pretrain_all([run], "pretrain/demo", [], None, str(tmp_path / "mine"), None,
                                 pretraining_from=str(tmp_path / "other"))
    (finished / "ckpt-20.index").write_text("")  # finished: read from there, nothing trained
    encoders = pretraining.pretrain_all([run], "pretrain/demo", [], None, str(tmp_path / "mine"),
                                        None, pretraining_from=str(tmp_path / "other"))
    assert [e.checkpoint for e in encoders] == [str(finished / f"ckpt-{s}") for s in (10, 20)]
    assert not (tmp_path / "mine").exists()


def test_help_documents_every_flag():
    result = run_cli(["--help"], module="electra_tf.study", timeout=120)
    assert result.returncode == 0 and "Traceback" not in result.stderr
    assert "tensorflow" not in result.stderr.lower()  # --help does not start TensorFlow
    for flag in ("data_dir", "output_dir", "pretrain_config", "override", "checkpoints", "labels",
                 "seeds", "learning_rates", "finetune_config", "finetune_override",
                 "min_finetune_steps", "finetune_max_seq_length", "objectives", "vocab_size",
                 "max_seq_length", "[no]pretrain_only", "random_from", "pretraining_from"):
        assert f"--{flag}:" in result.stdout, flag


# ---------------------------------------------------------------------------------------------
# A whole study, tiny


STUDY_ARGS = [
    "--pretrain_config", "pretrain/demo", "--max_seq_length", "32", "--vocab_size", "300",
    "--checkpoints", "10,40", "--labels", "16", "--seeds", "2",
    "--learning_rates", "1e-3,3e-3", "--min_finetune_steps", "2",
    "--finetune_max_seq_length", "32",
    "--override", "run.train_batch_size=8", "--override", "run.eval_batches=1",
    "--override", "optimizer.warmup_steps=2", "--override", "run.log_every_steps=20",
    "--override", "model.max_position_embeddings=64",
    # a one-layer encoder: most of the test's time is the trace of each run and trial
    *one_layer_overrides(),
    "--finetune_override", "finetune.train_batch_size=8",
    "--finetune_override", "finetune.eval_batch_size=32",
    "--finetune_override", "finetune.log_every_steps=100",
]


@pytest.mark.slow
def test_a_tiny_study_runs_end_to_end_and_resumes(tmp_path):
    data_dir = write_data_dir(tmp_path / "data")
    output_dir = tmp_path / "study"
    args = ["--data_dir", data_dir, "--output_dir", str(output_dir), *STUDY_ARGS]
    result = run_in_process(args, module=MODULE)
    assert result.returncode == 0, result.stderr[-5000:]

    for name in ("vocab.txt", "records32/metadata.json", "heldout32/metadata.json"):
        assert os.path.exists(os.path.join(data_dir, name)), name
    for name in ("results.jsonl", "summary.json", "table.md", "accuracy_vs_flops.png",
                 "study.json"):
        assert (output_dir / name).exists(), name
    assert (output_dir / "accuracy_vs_flops.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| majority class |" in result.stdout and "accuracy_vs_flops.png" in result.stdout
    assert "[15/15]" in result.stderr  # the progress line of the last trial

    records = results.read_records(str(output_dir))
    encoders = {r["encoder"] for r in records}
    electra = sorted((r for r in records if r["objective"] == "electra"),
                     key=lambda r: r["pretraining_step"])
    mlm = sorted((r for r in records if r["objective"] == "mlm"),
                 key=lambda r: r["pretraining_step"])
    assert {r["pretraining_step"] for r in electra} == {10, 40}
    assert len(encoders) == 5 and "random" in encoders  # 2 ELECTRA, 2 MLM, random
    # 5 encoders x 1 label count x (2 rates at seed 0 + 1 more seed at the chosen rate); the
    # "all" label count is test_training_subsets_depend_only_on_label_count_and_seed's
    assert len(records) == 5 * 3
    assert electra[-1]["flops"] == pytest.approx(mlm[-1]["flops"], rel=0.01)
    assert mlm[-1]["pretraining_step"] > 40  # an MLM step costs less than an ELECTRA step
    for encoder in encoders:
        for n in (16,):
            cell = [r for r in records if r["encoder"] == encoder and r["n"] == n]
            seed_zero = {r["lr"]: r["dev"] for r in cell if r["seed"] == 0}
            assert set(seed_zero) == {1e-3, 3e-3}
            chosen = max(seed_zero, key=seed_zero.get)
            assert [r["lr"] for r in cell if r["seed"] == 1] == [chosen]
            assert all(0 <= r["test"] <= 100 and 0 <= r["dev"] <= 100 for r in cell)
            assert {r["train_examples"] for r in cell} == {16}
    # epochs rule: n=16 at batch 8 for 2 steps -> 3 epochs; trials evaluated once, at their end
    assert {r["epochs"] for r in records} == {3}
    trial_dir = output_dir / "finetune" / "electra_40" / "16" / "lr1e-3_seed0"
    trial = json.loads((trial_dir / "results.json").read_text())
    assert [h["step"] for h in trial["history"]] == [trial["steps"]]
    assert not (trial_dir / "checkpoints").exists()

    # The same command again: nothing new is trained or recorded.
    before = (output_dir / "results.jsonl").read_text()
    mtime = os.path.getmtime(trial_dir / "results.json")
    again = run_in_process(args, module=MODULE)
    assert again.returncode == 0, again.stderr[-5000:]
    assert (output_dir / "results.jsonl").read_text() == before
    assert os.path.getmtime(trial_dir / "results.json") == mtime
    assert "/15]" not in again.stderr and "pretraining is finished" in again.stderr
    assert "| majority class |" in again.stdout

    # Interrupted after the runner finished two trials but before they were recorded: the rerun
    # records them from their results.json, without training them again.
    lines = before.splitlines(keepends=True)
    (output_dir / "results.jsonl").write_text("".join(lines[:-2]))
    last = output_dir / json.loads(lines[-1])["directory"] / "results.json"
    mtime = os.path.getmtime(last)
    again = run_in_process(args, module=MODULE)
    assert again.returncode == 0, again.stderr[-5000:]
    assert "[14/15]" in again.stderr and "[15/15]" in again.stderr
    restored = (output_dir / "results.jsonl").read_text().splitlines(keepends=True)
    assert [json.loads(line)["test"] for line in restored] == [json.loads(line)["test"]
                                                              for line in lines]
    assert os.path.getmtime(last) == mtime

    # Another pretraining setting in the same directory is refused before anything runs.
    changed = run_in_process([*args, "--checkpoints", "10,20"], module=MODULE)
    assert changed.returncode == 1 and "checkpoints" in changed.stderr

    # A study of another fine-tuning on the same pretraining fine-tunes this study's encoders.
    tuned = tmp_path / "bias_correction"
    reused = run_in_process(
        ["--data_dir", data_dir, "--output_dir", str(tuned), *STUDY_ARGS, "--objectives",
         "electra", "--checkpoints", "40", "--schedule_steps", "40", "--seeds", "1",
         "--learning_rates", "1e-3", "--pretraining_from",
         str(output_dir), "--finetune_override", "optimizer.bias_correction=true"],
        module=MODULE)
    assert reused.returncode == 0, reused.stderr[-5000:]
    assert not (tuned / "pretrain").exists()
    assert f"electra pretraining is finished ({output_dir / 'pretrain' / 'electra'})" in (
        reused.stderr)
    tuned_records = results.read_records(str(tuned))
    assert sorted(r["encoder"] for r in tuned_records) == ["electra@40", "random"]
    assert all(r["lr"] == 1e-3 and r["seed"] == 0 for r in tuned_records)
    # ... and refuses a checkpoint that study does not have, before anything runs
    missing = run_in_process(
        ["--data_dir", data_dir, "--output_dir", str(tmp_path / "longer"), *STUDY_ARGS,
         "--checkpoints", "10,20", "--schedule_steps", "40", "--pretraining_from",
         str(output_dir)], module=MODULE)
    assert missing.returncode == 1 and "it has no checkpoints 20" in missing.stderr
    assert not (tmp_path / "longer").exists()


def test_gap_trends_fit_the_gap_to_random_init_in_log_flops():
    from electra_tf.study.report import _format_trend, gap_trends

    def cell(median):
        return {"test": {"median": median}}

    summary = {"label_counts": ["100", "all"], "encoders": {
        "random": {"objective": "none", "flops": 0.0, "cells": {"100": cell(60.0),
                                                                "all": cell(80.0)}},
        "electra@1": {"objective": "electra", "flops": 1e13, "cells": {"100": cell(40.0),
                                                                       "all": cell(81.0)}},
        "electra@2": {"objective": "electra", "flops": 1e14, "cells": {"100": cell(50.0),
                                                                       "all": cell(82.0)}},
        "mlm@1": {"objective": "mlm", "flops": 1e13, "cells": {"100": cell(45.0)}}}}
    trends = gap_trends(summary)
    assert [(t["objective"], t["n"]) for t in trends] == [("electra", "100"), ("electra", "all")]
    closing, ahead = trends
    assert closing["gaps"] == [-20.0, -10.0]
    assert closing["per_doubling"] == pytest.approx(10 * math.log(2) / math.log(10))
    assert closing["crossing_flops"] == pytest.approx(1e15)  # 10 more points, one more decade
    assert "reaches 0 at 1e+15 FLOPs (10x the largest budget)" in _format_trend(closing)
    assert ahead["crossing_flops"] is None and "ahead at the largest budget" in _format_trend(ahead)
    del summary["encoders"]["random"]
    assert gap_trends(summary) == []


def test_a_growing_batch_counts_its_flops_per_sequence_and_the_mlm_grows_alike():
    """While the batch grows, a step costs its batch's share of the full batch's FLOPs; the
    MLM's batch grows over the same share of its run, so encoders stay at equal FLOPs."""
    from electra_tf.pretraining_data.batch_growth import BatchGrowth

    checkpoints = (500, 2000, 8000)
    electra, mlm = 1.3e9, 1.0e9
    growth = BatchGrowth(micro_batch=32, initial=1, final=4, steps=1000)  # 32 -> 128
    electra_run = plan.electra_plan(checkpoints, electra, growth=growth)
    # the first 1000 steps: 250 each at 1/4, 2/4, 3/4 and 4/4 of the full batch's FLOPs
    assert electra_run.flops(1000) == pytest.approx(250 * (1 + 2 + 3 + 4) / 4 * electra)
    assert electra_run.flops(8000) == pytest.approx((625 + 7000) * electra)
    assert electra_run.flops(500) == pytest.approx(250 * (1 + 2) / 4 * electra)
    mlm_run = plan.mlm_plan(checkpoints, electra, mlm, growth=growth)
    assert mlm_run.growth.steps == 1300
    for step, theirs in zip(checkpoints, mlm_run.encoder_steps):
        assert mlm_run.flops(theirs) == pytest.approx(electra_run.flops(step), rel=2e-3)
