"""`PretrainJob`: the recipe read once into every phase's validated config, the refusals made
before anything is written, and `pretrain(job)` running what the job says."""

import pytest

from electra_tf import config as config_lib
from electra_tf.config import ConfigError
from electra_tf.errors import UserError
from electra_tf.training import pretrain as pretrain_module
from electra_tf.training.device_flags import DeviceOptions
from electra_tf.training.pretrain_job import resolve_pretrain_job
from tests.run_helpers import write_records, write_vocab

TWO_PHASES = """
include: pretrain/demo
model: {max_position_embeddings: 64}
run: {train_batch_size: 8}
phases:
  - run: {max_seq_length: 32}
    optimizer: {learning_rate: 1e-3, warmup_steps: 5, train_steps: 20}
  - run: {max_seq_length: 64, train_batch_size: 4, gradient_accumulation_steps: 2}
    optimizer: {learning_rate: 5e-4, warmup_steps: 2, train_steps: 10}
"""


@pytest.fixture
def file_reads(monkeypatch):
    reads = []
    real_read = config_lib._read_file
    monkeypatch.setattr(config_lib, "_read_file", lambda path, including: (
        reads.append(path), real_read(path, including))[1])
    return reads


@pytest.fixture
def recipe(tmp_path):
    path = tmp_path / "two_phases.yaml"
    path.write_text(TWO_PHASES)
    return str(path)


def test_every_phase_is_built_from_one_read_of_the_recipe(recipe, file_reads, tmp_path):
    job = resolve_pretrain_job(config=recipe, data="short/*", phase_data={2: "long/*"},
                               model_dir=str(tmp_path / "run"),
                               overrides=["optimizer.weight_decay=0.02"])
    assert file_reads == [recipe, "pretrain/demo", "model/tiny"]
    first, second = job.stages
    assert (first.label, second.label) == ("phase 1 of 2", "phase 2 of 2")
    assert (first.data, second.data) == ("short/*", "long/*")
    assert first.model_dir == str(tmp_path / "run" / "phases" / "1")
    assert second.model_dir == str(tmp_path / "run")
    # the phase's values over the recipe's, the user's override over both
    assert (first.config.run.max_seq_length, second.config.run.max_seq_length) == (32, 64)
    assert (first.micro_batch, second.micro_batch) == (8, 2)
    assert (first.config.optimizer.learning_rate, second.config.optimizer.learning_rate) == (
        1e-3, 5e-4)
    assert first.config.optimizer.weight_decay == second.config.optimizer.weight_decay == 0.02
    assert job.devices == DeviceOptions()


def test_a_user_override_wins_over_a_phases_value(recipe, tmp_path):
    job = resolve_pretrain_job(config=recipe, data="short/*", model_dir=str(tmp_path),
                               overrides=["optimizer.learning_rate=2e-3"])
    assert [stage.config.optimizer.learning_rate for stage in job.stages] == [2e-3, 2e-3]


@pytest.mark.parametrize("options, error, message", [
    (dict(overrides=["run.train_batch_size=0"]), ConfigError, "run.train_batch_size must be positive"),
    (dict(overrides=["model.num_layer=2"]), ConfigError, "unknown config key 'model.num_layer'"),
    (dict(data=None, vocab_file="v.txt"), UserError, "--vocab_file without --data"),
    (dict(model_dir=None), UserError, "--model_dir is required with --data"),
    (dict(stop_at_step=0), UserError, "stop_at_step must be a positive step"),
    (dict(phase_data={2: "x"}), UserError, "has no phases"),
])
def test_what_cannot_work_is_refused_when_the_job_is_resolved(options, error, message, tmp_path):
    arguments = dict(config="pretrain/demo", data="records/*", model_dir=str(tmp_path / "run"))
    with pytest.raises(error, match=message):
        resolve_pretrain_job(**{**arguments, **options})
    assert not (tmp_path / "run").exists()


def test_pretrain_runs_the_job_it_is_given_reading_the_recipe_once(recipe, file_reads,
                                                                     monkeypatch, tmp_path):
    records = {"short": write_records(tmp_path / "records32", seq_len=32),
               "long": write_records(tmp_path / "records64", seq_len=64, seed=1)}
    vocab = write_vocab(tmp_path / "vocab.txt")
    trained = []

    def train(stage, job, strategy, init_checkpoint, export, preemption, started):
        trained.append((stage, init_checkpoint, export))
        return pretrain_module.PretrainResult(stage.model_dir, "finished", 0, None, None,
                                              stage.config, {}, [], 0.0)

    monkeypatch.setattr(pretrain_module, "_train", train)
    monkeypatch.setattr(pretrain_module.distribution, "use_cpu_chains",
                        lambda chains, strategy, tpu, micro_batches: None)
    job = resolve_pretrain_job(config=recipe, data=records["short"],
                               phase_data={2: records["long"]}, vocab_file=vocab,
                               model_dir=str(tmp_path / "run"), init_checkpoint="init/ckpt",
                               devices=DeviceOptions(strategy="one_device"))
    result = pretrain_module.pretrain(job)
    assert file_reads == [recipe, "pretrain/demo", "model/tiny"]  # none while running it
    assert [(stage.label, stage.config.run.max_seq_length, init, export)
            for stage, init, export in trained] == [
        ("phase 1 of 2", 32, "init/ckpt", False),
        ("phase 2 of 2", 64, str(tmp_path / "run" / "phases" / "1" / "checkpoints"), True)]
    # the data's vocabulary in every phase's config, the recipe's placeholder gone
    vocab_size = sum(1 for _ in open(vocab))
    assert {stage.config.model.vocab_size for stage, _, _ in trained} == {vocab_size}
    assert result.model_dir == str(tmp_path / "run")  # the last phase's result
    with pytest.raises(TypeError, match="takes no other options"):
        pretrain_module.pretrain(job, train_steps=5)
