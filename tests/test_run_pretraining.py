"""run_pretraining end to end: checkpoints, exact resume after SIGKILL, SIGTERM, Mirrored, init.

The runs whose subject is the process (a real command, SIGKILL, SIGTERM, --deterministic,
--cpu_devices) are `python -m electra_tf.run_pretraining`; the others call its main in this
process (tests.run_helpers.run_in_process), which behaves the same without a TensorFlow import.
"""

import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from tests.run_helpers import (MARKED_REPLACEMENT, REPO, cli_args, run_cli, run_command,
                               run_in_process, start_up_lines, two_chains_by_default,
                               write_records, write_vocab)


@pytest.fixture(scope="module")
def fixture_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    return write_records(root / "records"), write_vocab(root / "vocab.txt")


def _variables(checkpoint_dir):
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(checkpoint_dir))
    names = [n for n in reader.get_variable_to_shape_map() if n.startswith(("weights/", "batches"))]
    return {n: reader.get_tensor(n) for n in names}


@pytest.mark.slow
def test_run_writes_checkpoints_events_config_and_savedmodel(fixture_data, tmp_path):
    """A run's files; killed while its final SavedModel is written, it leaves no numbered
    version (a model server would load a half-written one), and the rerun writes it whole."""
    data, vocab = fixture_data
    run = tmp_path / "run"
    export = run / "export"
    with open(tmp_path / "stderr.txt", "w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "electra_tf.run_pretraining",
             *cli_args(data, vocab, run, 20, "--cpu_chains", "2")],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=stderr,
            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
        while process.poll() is None and not any(
                name.startswith(".tmp-") for name in (os.listdir(export) if export.exists() else [])):
            time.sleep(0.005)
        process.kill()
        assert process.wait() == -signal.SIGKILL, "the run ended before its export was written"
    killed = (tmp_path / "stderr.txt").read_text()
    assert tf.train.latest_checkpoint(str(run / "checkpoints")).endswith("ckpt-20")
    assert (run / "checkpoints" / "ckpt-10.index").exists()
    assert (run / "config.yaml").read_text().count("max_seq_length: 32") == 1
    assert list((run / "tensorboard").glob("events.out.tfevents.*"))
    assert not [name for name in os.listdir(export) if name.isdigit()]
    assert "step 20/20" in killed and "disc_auc" in killed
    # --cpu_chains 2 on any CPU (the default's pick: on the README demo's run)
    assert "2 chains side by side" in killed

    again = run_in_process(cli_args(data, vocab, run, 20))
    assert again.returncode == 0 and "already at step 20" in again.stderr, again.stderr[-3000:]
    assert "SavedModel:" in again.stdout and "finished at step 20" in again.stdout
    assert (export / "20" / "saved_model.pb").exists()
    assert os.listdir(export) == ["20"]  # the killed export's staging removed


@pytest.mark.slow
def test_sigterm_saves_and_exits_cleanly(fixture_data, tmp_path):
    """SIGTERM (a preemption notice, often 30 s): a checkpoint, then the process ends at once,
    without the seconds an orderly teardown of TensorFlow's input threads takes (5-10 s
    here before; 0.1 s now, held to the second that was asked for)."""
    data, vocab = fixture_data
    run_dir = tmp_path / "run"
    args = cli_args(data, vocab, run_dir, 100000, "--override", "run.save_checkpoints_steps=100000")
    process = subprocess.Popen([sys.executable, "-m", "electra_tf.run_pretraining", *args],
                               cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    lines, saved_at = [], None
    for line in process.stderr:  # the progress lines come every 5 steps
        lines.append(line)
        if " step 20/" in line:
            process.send_signal(signal.SIGTERM)
        if "saved checkpoint" in line:
            saved_at = time.perf_counter()
    process.wait(timeout=60)
    stderr = "".join(lines)
    assert process.returncode == 0 and saved_at is not None, stderr[-3000:]
    exited_after = time.perf_counter() - saved_at
    assert "preempted: saved" in stderr
    assert exited_after < 1.0, f"exited {exited_after:.1f} s after its checkpoint"
    latest = tf.train.latest_checkpoint(str(run_dir / "checkpoints"))
    step = int(latest.rsplit("-", 1)[1])
    assert 20 <= step < 100000
    assert not (run_dir / "export").exists()
    assert not (run_dir / "curves.png").exists()  # drawn when the run finishes, not before
    assert not (run_dir / "run.lock").exists()


@pytest.mark.slow
def test_mirrored_run_trains_accumulates_micro_batches_and_checkpoints(fixture_data, tmp_path):
    data, vocab = fixture_data
    mirrored = ["--strategy", "mirrored", "--cpu_devices", "2", "--noexport"]
    refused = run_cli(cli_args(data, vocab, tmp_path / "refused", 10, *mirrored, "--override",
                               "run.train_batch_size=12", "--override",
                               "run.gradient_accumulation_steps=4"))
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert ("run.gradient_accumulation_steps 4 does not divide the batch on each of 2 replicas: "
            "run.train_batch_size 12 must be a multiple of 8") in refused.stderr
    assert not (tmp_path / "refused").exists()

    result = run_cli(cli_args(data, vocab, tmp_path / "run", 10, *mirrored, "--override",
                              "run.gradient_accumulation_steps=2"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "on 2 replica(s), global batch 8 (2 micro-batches of 4 per update)" in result.stderr
    assert "step 10/10" in result.stderr  # steps are updates
    assert tf.train.latest_checkpoint(str(tmp_path / "run" / "checkpoints")).endswith("ckpt-10")


@pytest.mark.slow
def test_init_checkpoint_continues_from_existing_weights(fixture_data, tmp_path):
    data, vocab = fixture_data
    first = run_in_process(cli_args(data, vocab, tmp_path / "first", 10, "--noexport"))
    assert first.returncode == 0, first.stderr[-3000:]
    # One step whose learning rate is 0 (warmup starts at 0) leaves the weights as loaded.
    second = run_in_process(cli_args(data, vocab, tmp_path / "second", 1, "--noexport",
                                     "--init_checkpoint", str(tmp_path / "first" / "checkpoints")))
    assert second.returncode == 0, second.stderr[-3000:]
    assert "initialised weights from" in second.stderr
    before, after = _variables(str(tmp_path / "first" / "checkpoints")), _variables(
        str(tmp_path / "second" / "checkpoints"))
    trained = [n for n in before if "embeddings" in n or "kernel" in n]
    assert trained
    for name in trained:
        np.testing.assert_array_equal(after[name], before[name], err_msg=name)


@pytest.mark.slow
def test_default_demo_runs_and_its_discriminator_learns_held_out_text(tmp_path):
    """The README's first command, unchanged and as a user runs it (no TF_CPP_MIN_LOG_LEVEL):
    corpus, vocabulary, data with a held-out split, 600 steps (about 90 s), export, the console's
    lines; and a discriminator that rises and stays well above chance.

    Held-out AUC measured 0.861 -> 0.832 (seed 0), 0.868 -> 0.838 and 0.867 -> 0.836 (seeds 1
    and 2), 0.862 -> 0.832 with oneDNN off (the kernels of CPUs without AVX-512); the settings
    it replaced stayed at 0.55 throughout.
    """
    result = run_command("electra_tf.run_pretraining", cwd=tmp_path, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    # The console, as a user sees it: no TensorFlow start-up lines, no Keras warnings about our
    # own calls, progress with an ETA; two chains of ops where the CPU has two cores.
    assert start_up_lines(result) == []
    assert "UserWarning" not in result.stderr
    assert "ETA" in result.stderr
    assert ("2 chains side by side" in result.stderr) == two_chains_by_default()
    run = tmp_path / "runs" / "electra_demo"
    vocabulary = (run / "data" / "vocab.txt").read_text().split("\n")
    assert vocabulary[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] and len(vocabulary) > 1000
    assert list((run / "data" / "tfrecords").glob("*.tfrecord*"))
    assert tf.train.latest_checkpoint(str(run / "checkpoints")).endswith("ckpt-600")
    assert list((run / "tensorboard").glob("events.out.tfevents.*"))
    config = (run / "config.yaml").read_text()
    assert f"vocab_size: {len([t for t in vocabulary if t])}" in config
    assert (run / "export" / "600" / "saved_model.pb").exists()
    assert "step 600/600" in result.stderr and "SavedModel:" in result.stdout
    # Every 10th document is held out: its own records, evaluated every 100 steps.
    assert list((run / "data" / "heldout_tfrecords").glob("*.tfrecord*"))
    held_out_text = (run / "data" / "heldout_text").glob("*.txt")
    train_text = "".join(p.read_text() for p in (run / "data" / "text").glob("*.txt"))
    assert all(p.read_text().split("\n\n")[0] not in train_text for p in held_out_text)
    assert "held-out at step 600: disc_auc" in result.stderr
    assert list((run / "tensorboard" / "heldout").glob("events.out.tfevents.*"))
    summary = [line for line in result.stdout.splitlines()
               if line.startswith("held-out discriminator AUC: ")][0]
    curve = [(int(item.split("(step ")[1].rstrip(")")), float(item.split(" ")[0]))
             for item in summary.split(": ")[1].split(", ")]
    print(curve)
    assert [step for step, _ in curve] == [100, 200, 300, 400, 500, 600]
    assert all(auc > 0.75 for _, auc in curve), curve
    # Its last word: the generator's replacements in held-out sentences, marked.
    showcase = result.stdout.split("replaced tokens in held-out examples at step 600:\n", 1)[1]
    assert showcase.startswith("legend: [original→sample p]")
    assert re.search(r"^1\. ", showcase, re.MULTILINE) and re.search(r"^3\. ", showcase,
                                                                   re.MULTILINE)
    assert MARKED_REPLACEMENT.search(showcase)
    assert re.search(r"^replaced tokens: \d+, mean p [01]\.\d\d, \d+ above 0\.5; other tokens: ",
                     showcase, re.MULTILINE)


@pytest.mark.slow
def test_eval_data_is_evaluated_every_eval_every_steps(fixture_data, tmp_path):
    data, vocab = fixture_data
    result = run_in_process(cli_args(data, vocab, tmp_path / "run", 10, "--noexport",
                                     "--eval_data", data, "--override", "run.eval_every_steps=4",
                                     "--override", "run.eval_batches=2"))
    assert result.returncode == 0, result.stderr[-3000:]
    steps = [line.split("held-out at step ")[1].split(":")[0]
             for line in result.stderr.splitlines() if "held-out at step " in line]
    assert steps == ["4", "8", "10"]  # every 4 steps and the last
    summary = [line for line in result.stdout.splitlines() if line.startswith("held-out")][0]
    aucs = [float(part.split(" ")[0]) for part in summary.split(": ")[1].split(", ")]
    assert len(aucs) == 3 and all(0.0 <= auc <= 1.0 for auc in aucs)
    assert list((tmp_path / "run" / "tensorboard" / "heldout").glob("events.out.tfevents.*"))
    # The training and held-out curves, drawn from those events at the end.
    curves = tmp_path / "run" / "curves.png"
    assert f"curves:         {curves}" in result.stdout.splitlines()
    assert curves.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and curves.stat().st_size > 10_000


@pytest.mark.slow
def test_eval_data_smaller_than_a_batch_is_refused(fixture_data, tmp_path):
    data, vocab = fixture_data
    small = tmp_path / "small.tfrecord"
    with tf.io.TFRecordWriter(str(small)) as writer:
        for record in tf.data.TFRecordDataset(tf.io.gfile.glob(data)).take(3):
            writer.write(record.numpy())
    result = run_in_process(cli_args(data, vocab, tmp_path / "run", 10, "--noexport",
                                     "--eval_data", str(small)))
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last == ("error: --eval_data holds 3 records, fewer than one held-out batch of 8 "
                    "(run.train_batch_size / run.gradient_accumulation_steps): give more "
                    "held-out records or a smaller batch")
    assert not (tmp_path / "run" / "checkpoints").exists()

    # With accumulation the held-out batches are micro-batches: 4 x 2 needs 2 records.
    accumulated = run_in_process(cli_args(data, vocab, tmp_path / "accumulated", 2, "--noexport",
                                          "--eval_data", str(small), "--override",
                                          "run.gradient_accumulation_steps=4"))
    assert accumulated.returncode == 0, accumulated.stderr[-3000:]
    assert "held-out at step 2: disc_auc" in accumulated.stderr


def test_vocab_file_without_data_is_refused(tmp_path):
    result = run_in_process(["--vocab_file", str(tmp_path / "vocab.txt"), "--model_dir",
                             str(tmp_path)])
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1].startswith("error: --vocab_file without --data")


@pytest.mark.slow
@pytest.mark.parametrize("masking", ["whole_word", "span"])
def test_whole_word_and_span_masking_train_from_the_runs_vocabulary(tmp_path, masking):
    data = write_records(tmp_path / "records", num_files=1)
    plain = write_vocab(tmp_path / "plain.txt")
    result = run_in_process(cli_args(data, plain, tmp_path / "refused", 2, "--noexport",
                                     "--override", f"objective.masking={masking}"))
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1].startswith(
        f"error: {plain} has no '##' continuation pieces, so whole words cannot be found")
    tokens = [line.strip() for line in open(plain)]
    pieces = write_vocab(tmp_path / "pieces.txt", tokens[:5] + [
        f"##w{i}" if i % 3 == 2 else f"w{i}" for i in range(len(tokens) - 5)])
    result = run_in_process(cli_args(data, pieces, tmp_path / "run", 4, "--noexport",
                                     "--override", f"objective.masking={masking}"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"masking: {masking}" in (tmp_path / "run" / "config.yaml").read_text()
    assert "finished at step 4" in result.stdout


@pytest.mark.slow
def test_a_gdes_run_trains_the_residual_and_the_shared_table(fixture_data, tmp_path):
    from electra_tf.loading import load_pretrainer

    data, vocab = fixture_data
    result = run_in_process(cli_args(data, vocab, tmp_path / "run", 4, "--noexport",
                                     "--override", "model.embedding_sharing=gdes"))
    assert result.returncode == 0, result.stderr[-3000:]
    pretrainer = load_pretrainer(str(tmp_path / "run"))
    residual = pretrainer.discriminator.embeddings.residual_word_embeddings.embeddings.numpy()
    assert np.abs(residual).max() > 1e-5  # trained away from zero by the RTD loss
