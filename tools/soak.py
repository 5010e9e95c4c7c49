"""Soak test of resume: kill a pretraining run N times at random moments, rerun it each time,
and compare what it ends with to a run that was never interrupted.

    python tools/soak.py --kills 5 --work_dir /tmp/soak
    python tools/soak.py --kills 10 --data 'shards/*.tfrecord*' --vocab_file vocab.txt \\
        --train_steps 400 -- --override run.train_batch_size=32

Both runs are `python -m electra_tf.run_pretraining ... --deterministic --noexport`, so an
exact resume ends with the very same variables: every weight, every optimizer slot, the step
and the input position (max abs difference 0). About a third of the kills land while a
checkpoint is being written (the moment TensorFlow's `ckpt-<n>_temp/` exists), the rest at a random
moment after a random step past the checkpoint the rerun resumes from (the log lines' steps). Every killed run's lock is stale; the rerun takes it over.

Without --data it trains a tiny model on synthetic records written to work_dir (a few minutes
for five kills on two cores). Prints one line per kill and a verdict; exit status 0 when the
variables are identical, 1 when they differ, 2 when a run failed.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import re
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:  # run as a script from anywhere: the tests' fixture writers
    sys.path.insert(0, REPO)

STEP_LINE = re.compile(r" step (\d+)/\d+ ")  # the progress lines: "... step 20/600  loss ..."
TINY = ["--config", "pretrain/demo", "--override", "run.max_seq_length=32",
        "--override", "run.train_batch_size=8", "--override", "run.log_every_steps=5",
        "--override", "run.save_checkpoints_steps=10",
        "--override", "model.max_position_embeddings=64"]


def command(args, model_dir: str) -> list[str]:
    """The run_pretraining command line of both runs."""
    flags = TINY if args.synthetic else ["--config", args.config]
    return [sys.executable, "-m", "electra_tf.run_pretraining", *flags, "--data", args.data,
            "--vocab_file", args.vocab_file, "--model_dir", model_dir,
            "--train_steps", str(args.train_steps), "--deterministic", "--noexport",
            *args.extra]


def run_to_end(cmd: list[str]) -> list[int]:
    """Runs `cmd` to its end; returns the steps of its progress lines."""
    result = subprocess.run(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=_env())
    if result.returncode != 0:
        print(f"a run failed with status {result.returncode}:\n{result.stderr[-3000:]}",
              file=sys.stderr)
        sys.exit(2)
    return [int(match.group(1)) for match in STEP_LINE.finditer(result.stderr)]


def _env():
    return dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")


def checkpoint_step(checkpoint_dir: str) -> int:
    """The step of the newest published checkpoint (0: none), from the state file alone."""
    try:
        with open(os.path.join(checkpoint_dir, "checkpoint")) as f:
            first = f.readline()
    except FileNotFoundError:
        return 0
    return int(first.strip().rsplit("-", 1)[1].rstrip('"'))


def kill_once(cmd: list[str], checkpoint_dir: str, during_save: bool, target_step: int,
              delay: float) -> str:
    """Starts the run and SIGKILLs it: once a checkpoint is being written (`during_save`), or
    after its progress line reached `target_step` and `delay` (a fraction) of the time between
    two progress lines more. Returns how the kill landed (a run that finishes first is left to
    finish)."""
    process = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, env=_env())
    progress = {"step": 0, "at": []}  # the latest step logged; when the last two lines came

    def follow():
        for line in process.stderr:
            match = STEP_LINE.search(line)
            if match:
                progress["step"] = int(match.group(1))
                progress["at"] = progress["at"][-1:] + [time.time()]

    threading.Thread(target=follow, daemon=True).start()
    reached_at = None
    while process.poll() is None:
        if during_save:
            if progress["step"] and any(n.endswith("_temp") for n in _listdir(checkpoint_dir)):
                process.kill()
                process.wait()
                return f"killed while a checkpoint was written (after step {progress['step']})"
        else:
            if reached_at is None and progress["step"] >= target_step:
                times = progress["at"][-2:]
                reached_at = times[-1] + delay * (times[-1] - times[0])  # one line: at once
            if reached_at is not None and time.time() >= reached_at:
                process.kill()
                process.wait()
                return f"killed in training (after step {progress['step']})"
        time.sleep(0.002)
    return "finished before the kill"


def _listdir(directory: str) -> list[str]:
    try:
        return os.listdir(directory)
    except FileNotFoundError:
        return []


def variables(checkpoint_dir: str) -> dict:
    import tensorflow as tf  # lazy: only the comparison needs it

    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(checkpoint_dir))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if name != "_CHECKPOINTABLE_OBJECT_GRAPH"}


def max_difference(expected: dict, actual: dict) -> tuple[float, str]:
    """The largest absolute difference over all variables, and the variable it is in."""
    import numpy as np

    if sorted(expected) != sorted(actual):
        return float("inf"), f"variables differ: {sorted(set(expected) ^ set(actual))[:5]}"
    worst = max(((float(np.max(np.abs(np.asarray(actual[name], np.float64)
                                      - np.asarray(expected[name], np.float64))))
                  if np.asarray(expected[name]).size else 0.0, name)
                 for name in expected if np.asarray(expected[name]).dtype.kind in "fiu"),
                default=(0.0, ""))
    return worst


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--kills", type=int, default=5, help="how many times to kill the run")
    parser.add_argument("--work_dir", default="/tmp/electra_tf_soak",
                        help="where both runs (and the synthetic data) go; emptied first")
    parser.add_argument("--data", default="", help="TFRecord shards (default: synthetic)")
    parser.add_argument("--vocab_file", default="", help="the data's vocab.txt")
    parser.add_argument("--config", default="pretrain/demo", help="recipe, with --data")
    parser.add_argument("--train_steps", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0, help="of the kill moments")
    parser.add_argument("extra", nargs="*", help="more run_pretraining flags, after --")
    args = parser.parse_args(argv)
    if args.kills < 1:
        parser.error("--kills must be at least 1")
    if bool(args.data) != bool(args.vocab_file):
        parser.error("give --data and --vocab_file together (or neither: synthetic data)")
    shutil.rmtree(args.work_dir, ignore_errors=True)
    os.makedirs(args.work_dir)
    args.synthetic = not args.data
    if args.synthetic:
        from tests.run_helpers import write_records, write_vocab

        args.data = write_records(os.path.join(args.work_dir, "records"))
        args.vocab_file = write_vocab(os.path.join(args.work_dir, "vocab.txt"))

    straight_dir, killed_dir = (os.path.join(args.work_dir, name) for name in ("straight", "killed"))
    started = time.time()
    logged_steps = run_to_end(command(args, straight_dir))
    print(f"uninterrupted run: {args.train_steps} steps in {time.time() - started:.0f} s",
          flush=True)

    rng = random.Random(args.seed)
    checkpoints = os.path.join(killed_dir, "checkpoints")
    for k in range(args.kills):
        resumes_at = checkpoint_step(checkpoints)
        # a progress line past the resume point and before the last, so the kill lands in between
        targets = [step for step in logged_steps[:-1] if step > resumes_at] or [args.train_steps]
        target = rng.choice(targets)
        how = kill_once(command(args, killed_dir), checkpoints, during_save=k % 3 == 1,
                        target_step=target, delay=rng.random())
        print(f"kill {k + 1}/{args.kills}: {how}; newest checkpoint: step "
              f"{checkpoint_step(checkpoints)}", flush=True)
    run_to_end(command(args, killed_dir))
    difference, name = max_difference(variables(os.path.join(straight_dir, "checkpoints")),
                                      variables(checkpoints))
    same = difference == 0
    print(f"{'identical' if same else 'DIFFERENT'}: max abs difference {difference:g} over every "
          f"variable of the final checkpoints{'' if same else f' (largest in {name})'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
