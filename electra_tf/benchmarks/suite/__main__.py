"""`python -m electra_tf.benchmarks.suite`: the command line of `electra_tf.benchmarks.suite`."""

import os
import sys

from absl import flags

from electra_tf import console

console.setup(__name__)  # first: TensorFlow reads its C++ log level when it loads

from electra_tf.benchmarks.machine import cpu_description  # noqa: E402
from electra_tf.benchmarks.suite import ROWS, default_rows, run_suite  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_string("reference_dir", None, "Folder with torch_reference_step.py and "
                    "onnxruntime_serving.py (not part of this package); without it only our "
                    "own numbers are measured.")
flags.DEFINE_list("rows", None, f"Rows to run: {', '.join(ROWS)}. Default: all, but the bf16 "
                  "ones only on a CPU with AVX-512 BF16 or AMX (elsewhere bfloat16 is "
                  "emulated, slower than float32, and torch's autocast step takes minutes).")
flags.DEFINE_string("size", "small", "Model size of every row (the README's table: small; "
                    "ONNX Runtime's anchor is ELECTRA-Small only).")
flags.DEFINE_string("output", None, "Also write the Markdown table to this file.")
flags.DEFINE_integer("timeout", 900, "Seconds each command may run.")
flags.DEFINE_integer("rounds", 1, "Run the rows this many times over and report each ratio as "
                     "the median of the rounds' ratios with their range: the machine's speed "
                     "drifts by several percent over minutes, so one pair of runs says little "
                     "about a ratio near a goal.", lower_bound=1)


def main(argv):
    del argv
    names = FLAGS.rows
    if not names:
        names, left_out = default_rows(cpu_description())
        if left_out:
            print(f"Leaving out {', '.join(left_out)}: this CPU lacks bfloat16 instructions "
                  f"(AVX-512 BF16 or AMX) or AVX-512; name them in --rows to run them anyway.",
                  flush=True)
    unknown = sorted(set(names) - set(ROWS))
    if unknown:
        sys.exit(f"error: unknown --rows {', '.join(unknown)} (known: {', '.join(ROWS)})")
    reference = FLAGS.reference_dir
    if reference and not os.path.isfile(os.path.join(reference, "torch_reference_step.py")):
        sys.exit(f"error: {reference} has no torch_reference_step.py")
    text = run_suite(names, reference, FLAGS.size, FLAGS.timeout, FLAGS.rounds)
    print(text)
    if FLAGS.output:
        with open(FLAGS.output, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    console.run(main)
