"""tools/heldout_eval.py: a pretraining run's newest checkpoint evaluated on held-out records
masked one way for every run."""

import importlib.util
import os

import pytest

import electra_tf
from tests.run_helpers import REPO, SPECIALS, VOCAB_SIZE, cli_args, write_records, write_vocab


def _tool():
    spec = importlib.util.spec_from_file_location(
        "heldout_eval", os.path.join(REPO, "tools", "heldout_eval.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_evaluates_the_runs_checkpoint_the_same_way_each_time(tmp_path, monkeypatch):
    data = write_records(tmp_path / "records")
    held_out = write_records(tmp_path / "heldout", num_files=1, seed=1)
    # every third piece continues a word, so that whole-word masking has words to choose
    vocab = write_vocab(tmp_path / "vocab.txt", SPECIALS + [
        f"##w{i}" if i % 3 == 2 else f"w{i}" for i in range(VOCAB_SIZE - len(SPECIALS))])
    args = cli_args(data, vocab, tmp_path / "run", 6)
    overrides = [args[i + 1] for i, a in enumerate(args) if a == "--override"]
    electra_tf.pretrain(config="pretrain/demo", data=data, vocab_file=vocab,
                        model_dir=str(tmp_path / "run"), train_steps=6,
                        overrides=overrides + ["optimizer.learning_rate=3e-3"], export=False)
    tool = _tool()
    files = tool.pipeline.list_shards(held_out)

    first = tool.evaluate_run(str(tmp_path / "run"), files, "token", batches=3)
    assert set(first) == set(tool.METRICS) and 0.0 <= first["disc_auc"] <= 1.0
    assert tool.evaluate_run(str(tmp_path / "run"), files, "token", batches=3) == first
    # --masking reaches the data: whole words are other positions than single pieces.
    assert tool.evaluate_run(str(tmp_path / "run"), files, "whole_word", batches=3) != first
    # Without the checkpoint's weights the same evaluation gives other numbers.
    monkeypatch.setattr(tool.checkpointing, "restore_weights", lambda model, path: None)
    assert tool.evaluate_run(str(tmp_path / "run"), files, "token", batches=3) != first
