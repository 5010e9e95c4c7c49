"""`python -m electra_tf.evaluate_squad`: the official keys and values for v1.1 and v2.0 files,
worked out by hand, and one `error:` line for bad inputs."""

import json
import subprocess
import sys

import pytest

from tests.run_helpers import run_in_process

MODULE = "electra_tf.evaluate_squad"


def _data(version, qas):
    return {"version": version, "data": [{"title": "t", "paragraphs": [
        {"context": "The cat sat on the mat.", "qas": qas}]}]}


def _qa(qid, *answers):
    return {"id": qid, "question": "?", "answers": [{"text": a, "answer_start": 0} for a in answers]}


def _run(tmp_path, data, predictions, null_odds=None, *extra, own_process=False):
    """The command on these files: its main in this process, or `python -m` in its own."""
    paths = {}
    for name, value in (("data", data), ("predictions", predictions), ("null_odds", null_odds)):
        if value is not None:
            paths[name] = tmp_path / f"{name}.json"
            paths[name].write_text(value if isinstance(value, str) else json.dumps(value))
    args = [f"--data_file={paths['data']}", f"--predictions_file={paths['predictions']}", *extra]
    if "null_odds" in paths:
        args.append(f"--null_odds_file={paths['null_odds']}")
    if own_process:
        return subprocess.run([sys.executable, "-m", MODULE, *args], capture_output=True,
                              text=True, timeout=120)
    return run_in_process(args, module=MODULE)


def test_v11_prints_exact_match_and_f1(tmp_path):
    data = _data("1.1", [_qa("q1", "the mat", "mat"), _qa("q2", "cat"), _qa("q3", "on the mat")])
    # q1: "Mat." normalizes to "mat": EM 1, F1 1. q2: "a big cat" -> ["big", "cat"] vs ["cat"]:
    # P 1/2, R 1, F1 2/3. q3: missing -> 0 (v1.1 counts it). EM 1/3, F1 (1 + 2/3) / 3.
    result = _run(tmp_path, data, {"q1": "Mat.", "q2": "a big cat"}, own_process=True)
    assert result.returncode == 0, result.stderr
    scores = json.loads(result.stdout)
    assert set(scores) == {"exact_match", "f1"}
    assert scores["exact_match"] == pytest.approx(100 / 3)
    assert scores["f1"] == pytest.approx(100 * (1 + 2 / 3) / 3)


def test_v20_with_null_odds_gives_thresholded_and_best_scores(tmp_path):
    data = _data("v2.0", [_qa("a1", "cat"), _qa("a2", "the mat"), _qa("n1"), _qa("n2")])
    predictions = {"a1": "cat", "a2": "sat", "n1": "mat", "n2": "cat"}
    null_odds = {"a1": -5.0, "a2": -1.0, "n1": 0.0, "n2": -4.0}
    # At -2.75: a1 answered (EM 1), a2 null (> -2.75) but answerable -> 0, n1 null -> 1,
    # n2 answered "cat" but unanswerable -> 0: exact = 2/4.
    # Sweep (ascending odds a1, n2, a2, n1) from the all-null score 2 (n1, n2): a1 +1 -> 3 (best,
    # at -5.0), n2 -1 -> 2, a2 +0 -> 2, n1 -1 -> 1. best_exact = 3/4 at -5.0; F1 the same.
    result = _run(tmp_path, data, predictions, null_odds)
    assert result.returncode == 0, result.stderr
    scores = json.loads(result.stdout)
    assert scores["exact"] == pytest.approx(50.0) and scores["f1"] == pytest.approx(50.0)
    assert scores["total"] == 4 and scores["HasAns_total"] == 2 and scores["NoAns_total"] == 2
    assert scores["HasAns_exact"] == pytest.approx(50.0) and scores["NoAns_exact"] == pytest.approx(50.0)
    assert scores["best_exact"] == pytest.approx(75.0) and scores["best_exact_thresh"] == -5.0
    assert scores["best_f1"] == pytest.approx(75.0) and scores["best_f1_thresh"] == -5.0
    # A threshold above every score answers everything: a1 right, the rest wrong.
    high = json.loads(_run(tmp_path, data, predictions, null_odds, "--null_threshold=1").stdout)
    assert high["exact"] == pytest.approx(25.0)


def test_v20_without_null_odds_scores_empty_predictions_as_no_answer(tmp_path):
    data = _data("v2.0", [_qa("a1", "cat"), _qa("n1")])
    scores = json.loads(_run(tmp_path, data, {"a1": "the cat", "n1": ""}).stdout)
    assert scores["exact"] == pytest.approx(100.0) and "best_exact" not in scores


@pytest.mark.parametrize("data, predictions, null_odds, message", [
    ({"version": "1.1"}, {}, None, 'no "data" list'),
    ({"version": "3", "data": []}, {}, None, "version '3'"),
    ("{not json", {}, None, "is not JSON"),
    (_data("1.1", [_qa("q", "x")]), ["x"], None, "not a predictions file"),
    (_data("1.1", [_qa("q", "x")]), {"q": "x"}, {"q": 1.0}, "null_odds_file is for v2.0"),
    (_data("v2.0", [_qa("q", "x")]), {"q": "x"}, {"other": 1.0}, "no score for 1"),
    ({"version": "1.1", "data": [{"title": "t"}]}, {"q": "x"}, None, "missing key 'paragraphs'"),
])
def test_bad_inputs_give_one_error_line(tmp_path, data, predictions, null_odds, message):
    result = _run(tmp_path, data, predictions, null_odds)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1].startswith("error:")
    assert message in result.stderr


def test_in_process_runs_leave_flags_and_modules_as_they_were(tmp_path):
    """run_in_process (above, and for the other commands' tests) puts absl's flags and the
    imported modules back, even across commands that define flags of the same names."""
    from absl import flags

    names, parsed = sorted(flags.FLAGS), flags.FLAGS.is_parsed()
    loaded = {m: sys.modules.get(m) for m in (MODULE, "electra_tf.export_savedmodel")}
    data = _data("1.1", [_qa("q1", "cat")])
    assert _run(tmp_path, data, {"q1": "cat"}).returncode == 0
    refused = run_in_process(["--model_dir", str(tmp_path / "missing")],
                             module="electra_tf.export_savedmodel")
    assert refused.returncode == 1 and "is not a directory" in refused.stderr
    again = _run(tmp_path, data, {"q1": "dog"})
    assert json.loads(again.stdout)["exact_match"] == 0.0
    assert sorted(flags.FLAGS) == names and flags.FLAGS.is_parsed() == parsed
    assert {m: sys.modules.get(m) for m in loaded} == loaded
    unknown = run_in_process(["--no_such_flag"], module=MODULE)
    assert unknown.returncode == 1 and "Unknown command line flag 'no_such_flag'" in unknown.stderr
