r"""The batch-size guide's command: `python -m electra_tf.study.batch_sizes --help`."""

from __future__ import annotations

import os
import sys

from absl import flags

from electra_tf import console
from electra_tf.errors import exit_on_user_error

console.setup(__name__)  # first: TensorFlow reads its C++ log level when it loads

from electra_tf.study import batch_sizes  # noqa: E402
from electra_tf.study.batch_sizes import RESULTS, run_batch_sizes, write_report  # noqa: E402

__doc__ = batch_sizes.__doc__  # what --help prints

FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", "runs/batch_sizes", "Where the runs, results.jsonl, "
                    "table.md and the plot go; rerunning with it resumes.")
flags.DEFINE_string("config", "pretrain/mini", "Recipe: its run.train_batch_size is the "
                    "micro-batch and the first batch size, its learning rate the one scaled.")
flags.DEFINE_integer("sequences", 49152, "Sequences every run trains on (a multiple of 6 x "
                     "the largest batch).")
flags.DEFINE_list("batches", ["128", "512"], "The larger global batch sizes, multiples of "
                  "the recipe's.")
flags.DEFINE_float("warmup_share", 0.05, "Warmup as a share of each run's updates.")
flags.DEFINE_integer("held_out_sequences", 224, "Held-out sequences per evaluation, the same "
                     "for every run (the demonstration corpus holds out 226).")
flags.DEFINE_integer("seed", 0, "objective.seed of every run.")


def main(argv):
    if len(argv) > 1:
        sys.exit(f"error: unexpected arguments {argv[1:]}; see --help")

    def run():
        run_batch_sizes(output_dir=FLAGS.output_dir, config=FLAGS.config,
                        sequences=FLAGS.sequences, batches=tuple(map(int, FLAGS.batches)),
                        warmup_share=FLAGS.warmup_share,
                        held_out_sequences=FLAGS.held_out_sequences, seed=FLAGS.seed)
        table, png = write_report(FLAGS.output_dir)
        print(table + f"\n\nresults: {os.path.join(FLAGS.output_dir, RESULTS)}"
              + (f"\nplot:    {png}" if png else ""), flush=True)
        return 0

    return exit_on_user_error(run)


if __name__ == "__main__":
    console.run(main)
