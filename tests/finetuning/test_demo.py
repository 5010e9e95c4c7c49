"""The pieces of the fine-tuning demonstration that do not need the pretraining demo's runs."""

import pytest

from electra_tf.config import load_config
from electra_tf.pretraining_data.masking import max_predictions_per_seq
from electra_tf.finetuning import demo
from electra_tf.training.flops import pretraining_step_flops


def test_coherence_pairs_are_balanced_and_built_as_described():
    documents = [[f"doc{d} line{i}" for i in range(12)] for d in range(30)]
    examples = demo.coherence_pairs(documents, seed=0)
    assert len(examples) == 30 * 11
    nexts = [e for e in examples if e.label == "next"]
    assert 0.4 < len(nexts) / len(examples) < 0.6
    for e in examples:
        doc_a, line_a = e.text_a.split()
        doc_b, line_b = e.text_b.split()
        if e.label == "next":
            assert doc_a == doc_b and int(line_b[4:]) == int(line_a[4:]) + 1
        else:
            assert doc_a != doc_b
    assert demo.coherence_pairs(documents, seed=0) == examples  # deterministic
    assert len(demo.coherence_pairs(documents, seed=0, limit=50)) == 50


def test_mlm_baseline_gets_the_flops_of_the_electra_run(tmp_path):
    config = load_config("pretrain/demo", overrides=["model.vocab_size=1669"])
    (tmp_path / "config.yaml").write_text(config.to_yaml())
    steps = demo._mlm_steps(str(tmp_path))
    predictions = max_predictions_per_seq(0.15, 128)
    electra = pretraining_step_flops(config.model, 32, 128, predictions, electra=True)
    mlm = pretraining_step_flops(config.model, 32, 128, predictions, electra=False)
    assert steps * mlm == pytest.approx(600 * electra, abs=mlm)  # equal to within one step
    assert steps > 600  # the MLM model alone is cheaper per step than generator + discriminator


def test_mlm_baseline_is_the_electra_runs_own_config_as_an_mlm(monkeypatch):
    commands = []

    class Finished:
        returncode = 0

    monkeypatch.setattr(demo.subprocess, "run", lambda command: commands.append(command) or Finished)
    demo._pretrain_mlm_baseline(786)
    command = commands[0]
    assert command[command.index("--config") + 1] == f"{demo.ELECTRA_DIR}/config.yaml"
    assert command[command.index("--model_dir") + 1] == demo.MLM_DIR
    assert command[command.index("--train_steps") + 1] == "786"
    assert "objective.electra_objective=false" in command


def test_table_lists_every_row_the_majority_class_and_electras_gaps():
    values = {"values": [70.0, 72.0, 71.0], "median": 71.0}
    mlm = {"values": [73.0, 72.5, 74.0], "median": 73.0}
    none = {"values": [71.5, 72.0, 71.0], "median": 71.5}
    table = demo.format_table([("ELECTRA", values), ("MLM baseline", mlm),
                               ("no pretraining", none)], 51.8, 600, 791, 4000, 1649, 1.2e-3,
                              pretraining_flops=2.65e12)
    assert "| ELECTRA (600 pretraining steps) | 71.0 | 70.0-72.0 | 70.0 72.0 71.0 |" in table
    assert "| MLM baseline (791 steps, same FLOPs) | 73.0 |" in table
    assert "| no pretraining | 71.5 |" in table
    assert "| majority class | 51.8 | | |" in table and "lr 0.0012" in table
    assert ("ELECTRA's median: -0.5 points against no pretraining, -2.0 points against MLM "
            "baseline.") in table
    assert "This pretraining is 2.6e+12 FLOPs" in table and "at 2.65e+14 (100x;" in table


def test_the_demo_recipe_takes_the_learning_rate_of_the_tiny_models_width():
    from electra_tf.finetuning.api import resolve_finetune_config

    config = resolve_finetune_config(None, "finetune/demo", ["model.hidden_size=64", "model.num_heads=1",
                                                    "model.intermediate_size=256"])
    assert config.optimizer.learning_rate == 1.2e-3 and config.finetune.max_seq_length == 64


def test_a_pretraining_recipe_without_dropout_fine_tunes_with_it():
    import dataclasses

    from electra_tf.finetuning.api import resolve_finetune_config
    from tests.models.helpers import tiny_model_config

    pretrained = tiny_model_config(hidden_dropout=0.0, attention_dropout=0.0)
    config = resolve_finetune_config(None, "finetune/demo", model_config=pretrained)
    assert (config.model.hidden_dropout, config.model.attention_dropout) == (0.1, 0.1)
    assert dataclasses.replace(config.model, hidden_dropout=0.0, attention_dropout=0.0) == (
        dataclasses.replace(pretrained, max_position_embeddings=config.model.max_position_embeddings))
    chosen = resolve_finetune_config(None, "finetune/demo", ["model.hidden_dropout=0.05"],
                                     model_config=pretrained)
    assert chosen.model.hidden_dropout == 0.05  # the fine-tuning recipe's word is the last
