"""Evaluates pretraining runs on one held-out yardstick: the same records, masked the same way.

    python tools/heldout_eval.py --data 'data/debian/heldout128/*.tfrecord*' --masking token \
        electra=runs/variants/electra/pretrain/electra whole_word=runs/variants/whole_word/...

A run's own held-out evaluation masks held-out text as that run masks its training data, so a
whole-word or span run's AUC answers a different question than plain ELECTRA's. This restores
each run's newest checkpoint and evaluates it with `--masking` (default `token`, the
original's) on the first `--batches` batches of `--data`, every run on the same masked
positions (the masking is deterministic at evaluation), and prints a Markdown table of the
discriminator's AUC and loss and the generator's MLM accuracy. Each run still samples the
replacements with its own generator, so a better generator makes its discriminator's task
harder.
"""

import argparse
import os

from electra_tf import config as config_lib
from electra_tf import run_directory
from electra_tf.models.pretrainer_factory import build_pretrainer
from electra_tf.pretraining_data import pipeline, word_masking
from electra_tf.training import checkpointing
from electra_tf.training.pretrain import held_out_batch_size

METRICS = ("disc_auc", "disc_loss", "mlm_accuracy")


def evaluate_run(run_dir: str, files: list[str], masking: str, batches: int) -> dict:
    """The held-out metrics of `run_dir`'s newest checkpoint on `files` masked by `masking`."""
    config = config_lib.load_config(run_directory.config_file(run_dir),
                                    overrides=[f"objective.masking={masking}"])
    is_continuation = None
    if masking != "token":
        is_continuation = word_masking.continuation_pieces_of(config.run.vocab_file)
    dataset = pipeline.make_held_out_dataset(
        files, held_out_batch_size(config.run), config.run.max_seq_length, config.objective,
        batches or config.run.eval_batches, is_continuation=is_continuation)
    model = build_pretrainer(config.model, config.objective)
    model.compile()
    model.evaluate(dataset.take(1), verbose=0)  # builds the weights before they are restored
    checkpointing.restore_weights(model, run_directory.checkpoints_dir(run_dir))
    values = model.evaluate(dataset, verbose=0, return_dict=True)
    return {name: float(values[name]) for name in METRICS}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="label=pretraining run directory")
    parser.add_argument("--data", required=True, help="held-out TFRecord shards (a glob)")
    parser.add_argument("--masking", default="token", help="token, whole_word or span")
    parser.add_argument("--batches", type=int, default=0,
                        help="batches to evaluate (default: each run's run.eval_batches)")
    args = parser.parse_args()
    files = pipeline.list_shards(args.data)
    print(f"held-out {args.data}, masking {args.masking}")
    print("| run | held-out disc AUC | disc loss | MLM accuracy |")
    print("|---|---|---|---|")
    for spec in args.runs:
        label, run_dir = spec.split("=", 1)
        if not os.path.isdir(run_dir):
            raise SystemExit(f"error: {run_dir} is not a directory")
        values = evaluate_run(run_dir, files, args.masking, args.batches)
        print(f"| {label} | {values['disc_auc']:.3f} | {values['disc_loss']:.4f} | "
              f"{values['mlm_accuracy']:.3f} |", flush=True)


if __name__ == "__main__":
    main()
