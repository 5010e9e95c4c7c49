"""The batch-size guide: its runs, their settings, refusals, the report, and a tiny run end to end."""

import json

import pytest

from electra_tf.errors import UserError
from electra_tf.study import batch_sizes
from tests.run_helpers import one_layer_yaml, run_in_process

MODULE = "electra_tf.study.batch_sizes.__main__"


def test_every_larger_batch_gets_adamw_and_lamb_at_linear_and_sqrt_rates():
    variants = batch_sizes.plan_variants(32, 5e-4, [128, 512])
    assert [(v.batch, v.accumulation, v.optimizer, v.rule, v.learning_rate) for v in variants] == [
        (32, 1, "adamw", "recipe", 5e-4),
        (128, 4, "adamw", "linear", 2e-3), (128, 4, "adamw", "sqrt", 1e-3),
        (128, 4, "lamb", "linear", 2e-3), (128, 4, "lamb", "sqrt", 1e-3),
        (512, 16, "adamw", "linear", 8e-3), (512, 16, "adamw", "sqrt", 2e-3),
        (512, 16, "lamb", "linear", 8e-3), (512, 16, "lamb", "sqrt", 2e-3)]
    assert len({v.key for v in variants}) == len(variants)
    with pytest.raises(UserError, match="100 is not a multiple of the recipe's batch 32"):
        batch_sizes.plan_variants(32, 5e-4, [100])


def test_runs_see_the_same_sequences_warmup_share_and_held_out_set():
    variants = batch_sizes.plan_variants(32, 5e-4, [512])
    for variant in variants:
        overrides = dict(o.split("=", 1) for o in batch_sizes._run_overrides(
            variant, 49152, 0.05, 224))
        updates = int(overrides["optimizer.train_steps"])
        assert updates * variant.batch == 49152
        assert int(overrides["run.gradient_accumulation_steps"]) * 32 == variant.batch
        assert int(overrides["run.eval_every_steps"]) * 6 == updates
        assert int(overrides["run.eval_batches"]) * 32 == 224  # micro-batches of 32
        assert int(overrides["optimizer.warmup_steps"]) == round(0.05 * updates)


def test_report_tables_and_plots_the_results(tmp_path):
    records = [dict(name="B32 AdamW", key="b32_adamw_recipe", batch=32, accumulation=1,
                    optimizer="adamw", learning_rate=5e-4, rule="recipe", updates=12,
                    auc=[[64 * i, 0.5 + 0.05 * i] for i in range(1, 7)],
                    mlm_accuracy=[[64 * i, 0.1] for i in range(1, 7)]),
               dict(name="B64 LAMB lr x2", key="b64_lamb_linear", batch=64, accumulation=2,
                    optimizer="lamb", learning_rate=1e-3, rule="linear", updates=6,
                    auc=[[64 * i, 0.5 + 0.01 * i] for i in range(1, 7)],
                    mlm_accuracy=[[64 * i, 0.05] for i in range(1, 7)])]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    table, png = batch_sizes.write_report(str(tmp_path))
    assert "| B32 AdamW | 32 | 1 | AdamW | 0.0005 | 12 | 0.650 | **0.800** | 0.100 |" in table
    assert "| B64 LAMB lr x2 | 64 | 2 | LAMB | 0.001 | 6 | 0.530 | **0.560** | 0.050 |" in table
    assert (tmp_path / "table.md").read_text().strip() == table
    assert png and (tmp_path / "auc_vs_sequences.png").stat().st_size > 10000


def test_the_plot_gives_each_of_nine_runs_its_own_colour_and_keeps_the_legend_off_the_curves():
    from tests.plot_checks import assert_well_drawn

    records = [dict(name=f"B{v.batch} {v.optimizer} {v.rule}", key=v.key, batch=v.batch,
                    accumulation=v.accumulation, optimizer=v.optimizer,
                    learning_rate=v.learning_rate, rule=v.rule, updates=6,
                    auc=[[64 * i, 0.5 + 0.01 * i * k] for i in range(1, 7)],
                    mlm_accuracy=[[64 * i, 0.05 * k] for i in range(1, 7)])
               for k, v in enumerate(batch_sizes.plan_variants(32, 5e-4, [128, 512]))]
    assert len(records) == 9
    assert_well_drawn(batch_sizes.auc_figure(records))


def test_sequences_that_do_not_split_into_six_evaluations_are_refused(tmp_path):
    result = run_in_process(["--output_dir", tmp_path / "out", "--config", "pretrain/demo",
                             "--sequences", "1000", "--batches", "64"],
                            module=MODULE)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "error: --sequences 1000 must be a multiple of 6 x the largest batch (384)" in \
        result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_tiny_guide_runs_reports_and_resumes(tmp_path):
    # The demonstration's recipe on a one-layer encoder: five runs, each a fresh trace of its
    # train step, which the encoder's depth makes most of the test's time.
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(f"include: pretrain/demo\nmodel: {{{one_layer_yaml()}}}\n")
    args = ["--output_dir", tmp_path / "out", "--config", recipe, "--sequences", "384",
            "--batches", "64", "--held_out_sequences", "64"]
    result = run_in_process(args, module=MODULE)
    assert result.returncode == 0, result.stderr[-3000:]
    records = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").open()]
    assert [r["key"] for r in records] == ["b32_adamw_recipe", "b64_adamw_linear",
                                           "b64_adamw_sqrt", "b64_lamb_linear", "b64_lamb_sqrt"]
    for record in records:
        assert [s for s, _ in record["auc"]] == [64 * i for i in range(1, 7)]
        assert [s for s, _ in record["mlm_accuracy"]] == [64 * i for i in range(1, 7)]
        assert all(0.0 <= v <= 1.0 for _, v in record["auc"] + record["mlm_accuracy"])
    assert "| B64 LAMB lr x sqrt(2) | 64 | 2 | LAMB |" in result.stdout
    assert (tmp_path / "out" / "auc_vs_sequences.png").exists()
    again = run_in_process(args, module=MODULE)
    assert again.returncode == 0 and "[1/5]" not in again.stderr
