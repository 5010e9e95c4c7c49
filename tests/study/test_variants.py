"""The pretraining-variants command: each variant pretrained and fine-tuned on the demo, a table."""

import json

import pytest

from tests.run_helpers import ONE_LAYER, run_in_process


@pytest.mark.slow
def test_variants_are_pretrained_fine_tuned_and_tabled_and_a_rerun_resumes(tmp_path):
    args = ["--output_dir", tmp_path / "variants", "--train_steps", 3, "--trials", 1,
            "--train_pairs", 40, "--variants", "electra,span,gdes",
            *(f"--override=model.{size}" for size in ONE_LAYER)]  # each run's trace: the time
    result = run_in_process(args, module="electra_tf.study.variants")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [json.loads(line) for line in (tmp_path / "variants" / "results.jsonl").open()]
    assert [row["name"] for row in rows] == ["electra", "span", "gdes", "no pretraining"]
    for row in rows[:3]:
        assert row["steps"] == 3 and 0.0 <= row["held_out_disc_auc"] <= 1.0
        assert 0.0 <= row["held_out_mlm_accuracy"] <= 1.0
        assert len(row["values"]) == 1 and 0.0 <= row["median"] <= 100.0
    config = (tmp_path / "variants" / "gdes" / "config.yaml").read_text()
    assert "embedding_sharing: gdes" in config
    assert "masking: span" in (tmp_path / "variants" / "span" / "config.yaml").read_text()
    table = (tmp_path / "variants" / "results.md").read_text()
    assert table.splitlines()[0].startswith("| encoder | pretraining steps | held-out disc AUC |")
    assert "| no pretraining | 0 | - | - |" in table and table in result.stdout + "\n"

    again = run_in_process(args, module="electra_tf.study.variants")
    assert again.returncode == 0 and "electra:" not in again.stdout  # nothing run again
    assert len((tmp_path / "variants" / "results.jsonl").read_text().splitlines()) == 4


def test_unknown_variants_are_refused():
    result = run_in_process(["--variants", "electra,bpe"], module="electra_tf.study.variants")
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1] == (
        "error: unknown variants bpe (known: electra, whole_word, span, gdes)")
