r"""The same oneDNN matmul primitive timed inside TensorFlow and inside torch: whether a gap
between their products is the library's kernel or what calls it.

TensorFlow and torch each link their own oneDNN (TensorFlow 2.21 bundles v3.7.3, torch 2.13
v3.12.0), and for bfloat16 both run `torch.matmul`/`tf.matmul` as oneDNN matmul primitives.
This runs the products of an ELECTRA encoder layer (`tools.perf.small_matmuls`'s
forms) in alternating rounds, TensorFlow's then torch's, in one child process with
`ONEDNN_VERBOSE=1`, and reads each primitive's own execution time from oneDNN's log: the time
inside the library, without TensorFlow's executor or torch's dispatch. Per product it prints one
JSON line: each library's oneDNN version, the implementation each chose (for example
`brg_matmul:avx10_1_512_amx`), whether both saw the same memory layouts, and each round's
GFLOP/s inside the primitive (the first round is a warm-up and not counted).

torch computes float32 products with MKL, not oneDNN, so with `--dtype float32` only
TensorFlow's side has primitive times.

  python -m tools.perf.onednn_primitives --rows 4096 --threads 1
  python -m tools.perf.onednn_primitives --rows 4096 --threads 2 --gradients
"""

import json
import os
import subprocess
import sys

from absl import app, flags

import electra_tf
from tools.perf.matmul_forms import layer_products, products_of, tf_chain, torch_chain
from tools.perf.onednn_log import LIBRARIES, parse_log, summarize

flags.DEFINE_integer("rows", 4096, "m: tokens of the products (batch x sequence length).")
flags.DEFINE_integer("hidden", 256, "Hidden size H (ELECTRA-Small 256, Base 768).")
flags.DEFINE_integer("intermediate", 1024, "Feed-forward size (ELECTRA-Small 1024, Base 3072).")
flags.DEFINE_integer("threads", 1, "Intra-op threads of both libraries (one op at a time).")
flags.DEFINE_integer("chain", 12, "Products per call (TensorFlow's in one tf.function).")
flags.DEFINE_integer("calls", 4, "Calls per product and round.")
flags.DEFINE_integer("rounds", 6, "Alternating rounds, TensorFlow's then torch's; the first "
                     "is a warm-up.")
flags.DEFINE_bool("gradients", False, "Also time each product's input gradient dy @ W^T and "
                  "kernel gradient x^T @ dy.")
flags.DEFINE_enum("dtype", "bfloat16", ["float32", "bfloat16"], "The products' dtype.")
FLAGS = flags.FLAGS

CHILD_ENV = "ELECTRA_TF_ONEDNN_PRIMITIVES_CHILD"


def main(argv):
    del argv  # the child takes sys.argv as given
    if os.environ.get(CHILD_ENV):
        return _run_rounds()
    env = dict(os.environ, ONEDNN_VERBOSE="1", **{CHILD_ENV: "1"})
    # The flags as given (absl hands main only what it did not parse).
    child = subprocess.run([sys.executable, "-m", __spec__.name, *sys.argv[1:]], env=env,
                           capture_output=True, text=True)
    if child.returncode:
        sys.stderr.write(child.stderr[-4000:])
        sys.exit(f"the timed child process failed with exit status {child.returncode}")
    lines = child.stdout.splitlines()
    forms = [json.loads(line[len("FORMS "):]) for line in lines if line.startswith("FORMS ")][0]
    versions, times, primitives = parse_log(lines)
    if not times:
        print("oneDNN logged no matmul primitive: this TensorFlow build does not run these "
              "products through oneDNN on this CPU (TF_ENABLE_ONEDNN_OPTS=0, or a CPU without "
              "the AVX-512 features oneDNN's default needs)", file=sys.stderr)
    for record in summarize(forms, versions, times, primitives, FLAGS.calls * FLAGS.chain):
        record.update(dtype=FLAGS.dtype, threads=FLAGS.threads)
        print(json.dumps(record), flush=True)


def _run_rounds():
    """The child: every form's products, TensorFlow's then torch's, `--rounds` times, a
    `FORM round library index` line before each; oneDNN's log goes to the same stdout."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    import tensorflow as tf
    try:
        import torch
    except ImportError:
        torch = None

    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    if torch is not None:
        torch.set_num_threads(FLAGS.threads)
    m = FLAGS.rows
    calls = []
    for what, k, n, xs, dys, w in layer_products(FLAGS.hidden, FLAGS.intermediate, m,
                                                 FLAGS.chain):
        for name, shape, kernel, tf_product, torch_product in products_of(
                what, m, k, n, w, torch, FLAGS.dtype, gradients=FLAGS.gradients):
            calls.append((name, shape, tf_chain(xs, dys, kernel, tf_product, FLAGS.dtype),
                          None if torch is None else torch_chain(
                              torch, xs, dys, kernel, torch_product, FLAGS.dtype)))
    _say("FORMS " + json.dumps([(name, shape) for name, shape, _, _ in calls]))
    for round_ in range(FLAGS.rounds):
        for library in LIBRARIES:
            for index, (_, _, tf_call, torch_call) in enumerate(calls):
                call = tf_call if library == "tf" else torch_call
                if call is None:
                    continue
                _say(f"FORM {round_} {library} {index}")
                for _ in range(FLAGS.calls):
                    call()


def _say(line):
    """A marker line on stdout, in order with oneDNN's own (unbuffered) writes there."""
    sys.stdout.flush()
    os.write(1, (line + "\n").encode())


if __name__ == "__main__":
    electra_tf.tune_cpu()  # before TensorFlow starts, as the commands do
    app.run(main)
