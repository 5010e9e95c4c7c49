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

`--gradients` adds each product's two gradients as training computes them, the input's dy @ W^T
and the kernel's x^T @ dy (`torch.matmul` on transposed views for torch): at a training batch's
`--rows` (4096 for 32 x 128) they compare TensorFlow's oneDNN kernels with torch's own on the
shapes of a training step. `--written_transposes` adds the gradient forms that take the
transposed operand written out by an XLA kernel (dy @ (W^T), (x^T) @ dy and (dy^T @ x)^T), the
transpose timed with the product, as `electra_tf.models.transformer._training_dense` can take
them. `--dtype bfloat16` times everything in bfloat16 (torch too).

  python -m tools.perf.small_matmuls --rows 128
  python -m tools.perf.small_matmuls --rows 128 --threads 1
  python -m tools.perf.small_matmuls --rows 64 --threads 1 --transposed_kernels
  python -m tools.perf.small_matmuls --rows 4096 --gradients --chain 12
  python -m tools.perf.small_matmuls --rows 4096 --gradients --written_transposes \
      --chain 12 --dtype bfloat16
"""

import json
import os

from absl import app, flags

import electra_tf
from tools.perf.matmul_forms import layer_products, products_of, tf_chain, torch_chain
from tools.perf.timing import gflop_per_s

flags.DEFINE_integer("rows", 128, "m: tokens of the request (batch x sequence length).")
flags.DEFINE_integer("hidden", 256, "Hidden size H (ELECTRA-Small 256, Base 768).")
flags.DEFINE_integer("intermediate", 1024, "Feed-forward size (ELECTRA-Small 1024, Base 3072).")
flags.DEFINE_integer("threads", 0, "TensorFlow intra-op threads (0: TensorFlow's default).")
flags.DEFINE_integer("chain", 24, "Products per timed call.")
flags.DEFINE_bool("gradients", False, "Also time each product's input gradient dy @ W^T and "
                  "kernel gradient x^T @ dy.")
flags.DEFINE_bool("transposed_kernels", False, "Also time each product with its kernel stored "
                  "transposed, [n, k], multiplied as x @ W^T (export_savedmodel "
                  "--transposed_feedforward does this for the feed-forward input).")
flags.DEFINE_bool("written_transposes", False, "With --gradients, also time each gradient "
                  "with its transposed operand written out by an XLA kernel, the transpose "
                  "included: dy @ (W^T), (x^T) @ dy and (dy^T @ x)^T.")
flags.DEFINE_enum("dtype", "float32", ["float32", "bfloat16"], "The products' dtype.")
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


def main(argv):
    del argv
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
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
    m = FLAGS.rows
    for what, k, n, xs, dys, w in layer_products(FLAGS.hidden, FLAGS.intermediate, m,
                                                 FLAGS.chain):
        products = products_of(what, m, k, n, w, torch, FLAGS.dtype,
                               transposed_kernels=FLAGS.transposed_kernels,
                               gradients=FLAGS.gradients,
                               written_transposes=FLAGS.written_transposes)
        for name, shape, kernel, tf_product, torch_product in products:
            print(json.dumps(_timed(name, shape, l2, xs, dys, kernel, tf_product, torch_product,
                                    tf, torch)), flush=True)


def _timed(what, shape, l2, xs, dys, w, tf_product, torch_product, tf, torch):
    """One JSON record: `--chain` products [m, k] @ [k, n] (`shape`) of `tf_product` over the
    inputs `xs`, `dys` and the kernel `w`, timed in one tf.function, and `torch_product`'s."""
    m, k, n = shape
    itemsize = tf.as_dtype(FLAGS.dtype).size
    chain = tf_chain(xs, dys, w, tf_product, FLAGS.dtype)
    flops = 2 * m * k * n * FLAGS.chain
    record = {"product": f"[{m}, {k}] @ [{k}, {n}]", "what": what, "dtype": FLAGS.dtype,
              "operand_mib": round(operand_bytes(m, k, n, itemsize) / 2 ** 20, 2),
              "l2_mib_per_core": round(l2 / 2 ** 20, 2) if l2 else None,
              "single_threaded_by_rule": (single_threaded_by_rule(m, k, n, l2, itemsize)
                                          if l2 else None),
              "tf_threads": FLAGS.threads or "default",
              "tf_gflop_per_s": gflop_per_s(flops, chain, FLAGS.repeats)}
    if torch is not None:
        record["torch_threads"] = torch.get_num_threads()
        record["torch_gflop_per_s"] = gflop_per_s(
            flops, torch_chain(torch, xs, dys, w, torch_product, FLAGS.dtype), FLAGS.repeats)
    return record


if __name__ == "__main__":
    electra_tf.tune_cpu()  # before TensorFlow starts, as the commands do
    app.run(main)
