"""MultiWorkerMirroredStrategy from TF_CONFIG: two worker processes on 127.0.0.1, bounded in time."""

import json
import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from tests.run_helpers import REPO, cli_args, write_records, write_vocab

pytestmark = pytest.mark.slow

DEADLINE = 600  # seconds for both workers together: catches a hang, not a slow machine


def _free_ports(count):
    """Distinct free TCP ports on 127.0.0.1 (all sockets held open until every port is known)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _tail(path, lines=40):
    text = path.read_text(errors="replace") if path.exists() else ""
    wanted = [l for l in text.splitlines() if not l.lstrip().startswith(("[", "array("))
              and not l.strip()[:1].isdigit()]  # skip tensor dumps
    return "\n".join(wanted[-lines:])


def _variables(checkpoint_prefix):
    reader = tf.train.load_checkpoint(checkpoint_prefix)
    names = [n for n in reader.get_variable_to_shape_map() if n.startswith(("weights/", "batches"))]
    return {n: reader.get_tensor(n) for n in names}


def test_two_workers_train_with_multi_worker_mirrored_strategy(tmp_path):
    data = write_records(tmp_path / "records")
    vocab = write_vocab(tmp_path / "vocab.txt")
    model_dir = tmp_path / "run"
    cluster = {"worker": [f"127.0.0.1:{port}" for port in _free_ports(2)]}
    args = ["--strategy", "multi_worker", *cli_args(data, vocab, model_dir, 10)]

    logs, processes = [tmp_path / f"worker_{i}.log" for i in range(2)], []
    try:
        for index, log in enumerate(logs):
            tf_config = {"cluster": cluster, "task": {"type": "worker", "index": index}}
            env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_CONFIG=json.dumps(tf_config))
            with open(log, "w") as out:
                processes.append(subprocess.Popen(
                    [sys.executable, "-m", "electra_tf.run_pretraining", *args], cwd=REPO,
                    env=env, stdout=out, stderr=subprocess.STDOUT))
        deadline = time.time() + DEADLINE
        for process in processes:
            try:
                process.wait(timeout=max(1.0, deadline - time.time()))
            except subprocess.TimeoutExpired:
                pass
        timed_out = [i for i, p in enumerate(processes) if p.poll() is None]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=30)

    report = "\n".join(f"---- worker {i} (exit {p.returncode}):\n{_tail(log)}"
                       for i, (p, log) in enumerate(zip(processes, logs)))
    assert not timed_out, f"workers {timed_out} still running after {DEADLINE} s\n{report}"
    assert [p.returncode for p in processes] == [0, 0], report

    chief_log, worker_log = (log.read_text() for log in logs)
    for log in (chief_log, worker_log):
        assert "on 2 replica(s)" in log, report
        assert "finished at step 10" in log, report

    # The chief (worker 0) keeps the run: checkpoints, config and the SavedModel export.
    checkpoints = model_dir / "checkpoints"
    assert tf.train.latest_checkpoint(str(checkpoints)).endswith("ckpt-10"), report
    assert (model_dir / "config.yaml").exists()
    assert (model_dir / "export" / "10" / "saved_model.pb").exists(), report
    assert not (model_dir / "workers" / "worker_0").exists()
    # The other worker writes its share of the collective save under workers/, nothing else.
    worker_checkpoints = model_dir / "workers" / "worker_1" / "checkpoints"
    assert tf.train.latest_checkpoint(str(worker_checkpoints)).endswith("ckpt-10"), report
    assert not (model_dir / "workers" / "worker_1" / "export").exists()
    assert str(worker_checkpoints / "ckpt-10") in worker_log

    # Synchronous training: both workers hold the same weights after the same 10 global batches.
    chief, worker = _variables(str(checkpoints / "ckpt-10")), _variables(
        str(worker_checkpoints / "ckpt-10"))
    assert set(chief) == set(worker) and len(chief) > 10
    assert int(chief["batches_seen/.ATTRIBUTES/VARIABLE_VALUE"]) == 10
    for name in chief:
        np.testing.assert_array_equal(worker[name], chief[name], err_msg=name)

    # The export serves.
    loaded = tf.saved_model.load(str(model_dir / "export" / "10"))
    assert "serving_default" in loaded.signatures
