r"""Two exported SavedModels' `serving_default`, loaded in one process and called alternately on
the same requests: which of two exports (two versions of the code, two export options) serves
faster, with the machine's drift shared by both.

Each round calls both signatures once, in turns of A-B then B-A, after three untimed calls of
each; the JSON line has each one's p50 latency and tokens/s over `--requests` rounds, B's speed
against A's (A's p50 over B's), and the largest difference between their first float output.
The requests are `--batch` sequences of `--seq` tokens (`tools.perf.serving_calls.
requests`), which any export of this project's models takes.

  python -m tools.perf.paired_exports --a exports/before --b exports/after \
      --batch 32 --threads 1 --requests 40
"""

import json

from absl import app, flags

import electra_tf

FLAGS = flags.FLAGS
flags.DEFINE_string("a", None, "The first SavedModel directory (the baseline).", required=True)
flags.DEFINE_string("b", None, "The second SavedModel directory.", required=True)
flags.DEFINE_integer("batch", 32, "Sequences per request.")
flags.DEFINE_integer("seq", 128, "Tokens per sequence.")
flags.DEFINE_integer("threads", 0, "TensorFlow intra-op threads (0: TensorFlow's default; 1: "
                     "TF Serving's --tensorflow_intra_op_parallelism=1).")
flags.DEFINE_integer("requests", 40, "Timed calls of each signature.")


def main(argv):
    del argv
    import statistics  # lazy: next to its only use

    import tensorflow as tf  # lazy: imported once the flags are parsed

    from electra_tf.benchmarks.machine import cpu_description  # lazy: reads /proc/cpuinfo
    from tools.perf.serving_calls import (first_float_output, requests,
                                          time_alternately)  # lazy: TensorFlow

    if FLAGS.threads:
        tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    signatures = [tf.saved_model.load(path).signatures["serving_default"]
                  for path in (FLAGS.a, FLAGS.b)]
    inputs = requests(signatures[0], FLAGS.batch, FLAGS.seq)
    first = [first_float_output(signature(**inputs)).numpy() for signature in signatures]
    calls = [lambda signature=signature: first_float_output(signature(**inputs)).numpy()
             for signature in signatures]
    times_a, times_b = time_alternately(*calls, FLAGS.requests)
    p50_a, p50_b = statistics.median(times_a), statistics.median(times_b)
    tokens = FLAGS.batch * FLAGS.seq
    print(json.dumps({
        **cpu_description(), "a": FLAGS.a, "b": FLAGS.b, "batch": FLAGS.batch,
        "seq": FLAGS.seq, "threads": FLAGS.threads or "default", "requests": FLAGS.requests,
        "a_p50_ms": round(1000 * p50_a, 2), "b_p50_ms": round(1000 * p50_b, 2),
        "a_tokens_per_s": round(tokens / p50_a), "b_tokens_per_s": round(tokens / p50_b),
        "b_speed_vs_a": round(p50_a / p50_b, 3),
        "max_abs_difference": float(abs(first[0] - first[1]).max())}))


if __name__ == "__main__":
    electra_tf.tune_cpu()  # before TensorFlow starts, as the commands do
    app.run(main)
