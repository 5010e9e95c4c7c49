r"""The matrix products of a single request, timed one shape at a time: why batch-1 serving
depends on the CPU's L2 cache size.

TensorFlow's oneDNN matmul kernels run a product on one thread when its operands fit in the L2
cache of a core: 4 (m n + k (m + n)) bytes in float32 under the L2 size (`ExecuteSingleThreadedGemm`
in TensorFlow's mkl_matmul_ops_common.h). For each [m, k] @ [k, n] product of an ELECTRA
encoder layer at `--rows` tokens (query/key/value and output projections, the feed-forward
pair), this prints one JSON line: the operands' size, this machine's L2 per core, whether the rule
makes the product single-threaded, and the GFLOP/s of `--chain` such products in one tf.function,
run one op at a time (and, with torch installed, of `torch.addmm` on as many threads as
TensorFlow's intra-op pool).

  python -m electra_tf.benchmarks.small_matmuls --rows 128
  python -m electra_tf.benchmarks.small_matmuls --rows 128 --threads 1
"""

import json
import os
import statistics
import time

from absl import app, flags

flags.DEFINE_integer("rows", 128, "m: tokens of the request (batch x sequence length).")
flags.DEFINE_integer("hidden", 256, "Hidden size H (ELECTRA-Small 256, Base 768).")
flags.DEFINE_integer("intermediate", 1024, "Feed-forward size (ELECTRA-Small 1024, Base 3072).")
flags.DEFINE_integer("threads", 0, "TensorFlow intra-op threads (0: TensorFlow's default).")
flags.DEFINE_integer("chain", 24, "Products per timed call.")
flags.DEFINE_integer("repeats", 30, "Timed calls per shape (the median is reported).")
FLAGS = flags.FLAGS


def operand_bytes(m, k, n, itemsize=4):
    """Bytes of a [m, k] @ [k, n] product's three matrices, as TensorFlow's rule counts them."""
    return itemsize * (m * n + k * (m + n))


def single_threaded_by_rule(m, k, n, l2_bytes, itemsize=4):
    """Whether TensorFlow's oneDNN kernels run this product on one thread (operands < L2,
    times the rule's 1.01 margin)."""
    return operand_bytes(m, k, n, itemsize) < 1.01 * l2_bytes


def l2_bytes_per_core(path="/sys/devices/system/cpu/cpu0/cache"):
    """The L2 cache size of cpu0 in bytes from sysfs, or None where it is not listed."""
    try:
        for index in sorted(os.listdir(path)):
            with open(os.path.join(path, index, "level")) as f:
                if f.read().strip() != "2":
                    continue
            with open(os.path.join(path, index, "size")) as f:
                size = f.read().strip()
            units = {"K": 2 ** 10, "M": 2 ** 20}
            return int(size[:-1]) * units[size[-1]] if size[-1] in units else int(size)
    except OSError:
        return None
    return None


def _median_seconds(call, repeats):
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv):
    del argv
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    import numpy as np
    import tensorflow as tf

    # One op at a time, as in a request whose products each wait for the one before.
    tf.config.threading.set_inter_op_parallelism_threads(1)
    if FLAGS.threads:
        tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    try:
        import torch
        torch.set_num_threads(FLAGS.threads or os.cpu_count())
    except ImportError:
        torch = None
    l2 = l2_bytes_per_core()
    h, f, m = FLAGS.hidden, FLAGS.intermediate, FLAGS.rows
    rng = np.random.default_rng(0)
    for what, k, n in (("query/key/value or output projection", h, h),
                       ("feed-forward in", h, f), ("feed-forward out", f, h)):
        xs = [tf.constant(rng.normal(size=(m, k)).astype(np.float32))
              for _ in range(FLAGS.chain)]  # distinct inputs: grappler merges equal products
        w = tf.Variable((rng.normal(size=(k, n)) / np.sqrt(k)).astype(np.float32))
        chain = tf.function(lambda w=w, xs=xs: [tf.matmul(x, w) for x in xs])

        flops = 2 * m * k * n * FLAGS.chain
        record = {"product": f"[{m}, {k}] @ [{k}, {n}]", "what": what,
                  "operand_mib": round(operand_bytes(m, k, n) / 2 ** 20, 2),
                  "l2_mib_per_core": round(l2 / 2 ** 20, 2) if l2 else None,
                  "single_threaded_by_rule": single_threaded_by_rule(m, k, n, l2) if l2 else None,
                  "tf_threads": FLAGS.threads or "default",
                  "tf_gflop_per_s": round(flops / _median_seconds(
                      chain, FLAGS.repeats) / 1e9, 1)}
        if torch is not None:
            xts = [torch.from_numpy(x.numpy()) for x in xs]
            wt, bias = torch.from_numpy(w.numpy()), torch.zeros(n)

            def torch_chain():
                with torch.no_grad():
                    for xt in xts:
                        torch.addmm(bias, xt, wt)

            record["torch_threads"] = torch.get_num_threads()
            record["torch_gflop_per_s"] = round(
                flops / _median_seconds(torch_chain, FLAGS.repeats) / 1e9, 1)
        print(json.dumps(record), flush=True)


if __name__ == "__main__":
    app.run(main)
