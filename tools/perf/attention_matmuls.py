r"""The attention's batched products of a training step, timed one at a time, TensorFlow against
torch: whether TensorFlow's kernels for them are oneDNN's or Eigen's shows here first.

For queries, keys and values [batch, heads, seq, d] and probabilities [batch, heads, seq, seq]
this prints one JSON line per product (the forward's scores Q K^T and context P V, and the
backward's dP = dC V^T and dV = P^T dC, the remaining two have these shapes): its GFLOP/s in
TensorFlow (`tf.matmul` with the transpose flags the step uses) and in torch where it is
installed, and `onednn`, whether this process's TensorFlow runs its oneDNN kernels
(`electra_tf.onednn`; `TF_ENABLE_ONEDNN_OPTS=0` for Eigen's).

Each timed call runs the product on `--chain` distinct pairs of inputs, one after the other, as a
step's layers do (inputs that stay in the caches would flatter the library that is called more
cheaply); TensorFlow's are one `tf.function` that returns a single element of each product, so
neither its per-call overhead nor a copy of the products to Python is counted, and torch's are a
loop of `torch.matmul`. The median of `--repeats` calls is reported.

  python -m tools.perf.attention_matmuls --batch 16 --seq 384
  TF_ENABLE_ONEDNN_OPTS=0 python -m tools.perf.attention_matmuls --batch 16 --seq 384
"""

import json
import os

from absl import app, flags

import electra_tf
from tools.perf.timing import gflop_per_s

FLAGS = flags.FLAGS
flags.DEFINE_integer("batch", 16, "Sequences (SQuAD's training batch: 16).")
flags.DEFINE_integer("seq", 384, "Sequence length (SQuAD: 384, pretraining: 128).")
flags.DEFINE_integer("heads", 4, "Attention heads (ELECTRA-Small: 4).")
flags.DEFINE_integer("head_size", 64, "Size of a head (ELECTRA: 64 at every size).")
flags.DEFINE_integer("repeats", 20, "Timed calls per product (the median is reported).")
flags.DEFINE_integer("chain", 8, "Products per timed call, each on its own inputs.")

# name -> (left operand, right operand, transpose_a, transpose_b); "s" is [seq, seq], "d" is
# [seq, head_size], each per sequence and head
PRODUCTS = {"scores Q K^T": ("d", "d", False, True),
            "context P V": ("s", "d", False, False),
            "probabilities' gradient dC V^T": ("d", "d", False, True),
            "values' gradient P^T dC": ("s", "d", True, False)}


def main(argv):
    del argv
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    import numpy as np
    import tensorflow as tf

    from electra_tf.onednn import onednn_enabled  # lazy: imports TensorFlow

    try:
        import torch
        torch.set_num_threads(os.cpu_count())
    except ImportError:
        torch = None
    rng = np.random.default_rng(0)
    lead = [FLAGS.batch, FLAGS.heads]
    shapes = {"s": lead + [FLAGS.seq, FLAGS.seq], "d": lead + [FLAGS.seq, FLAGS.head_size]}
    flops = 2 * FLAGS.batch * FLAGS.heads * FLAGS.seq * FLAGS.seq * FLAGS.head_size
    for name, (left, right, transpose_a, transpose_b) in PRODUCTS.items():
        pairs = [tuple(rng.normal(size=shapes[x]).astype(np.float32) for x in (left, right))
                 for _ in range(FLAGS.chain)]
        tf_pairs = [(tf.constant(a), tf.constant(b)) for a, b in pairs]

        @tf.function
        def products():
            return tf.stack([tf.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b)
                             [0, 0, 0, 0] for a, b in tf_pairs])

        record = {"product": name, "batch": FLAGS.batch, "heads": FLAGS.heads,
                  "seq": FLAGS.seq, "head_size": FLAGS.head_size, "chain": FLAGS.chain,
                  "onednn": onednn_enabled(),
                  "tf_gflop_per_s": gflop_per_s(FLAGS.chain * flops, lambda: products().numpy(),
                                                FLAGS.repeats)}
        if torch is not None:
            torch_pairs = [(torch.from_numpy(a), torch.from_numpy(b)) for a, b in pairs]
            torch_pairs = [(a.transpose(-1, -2) if transpose_a else a,
                            b.transpose(-1, -2) if transpose_b else b) for a, b in torch_pairs]
            record["torch_threads"] = torch.get_num_threads()
            record["torch_gflop_per_s"] = gflop_per_s(
                FLAGS.chain * flops, lambda: [torch.matmul(a, b) for a, b in torch_pairs],
                FLAGS.repeats)
        print(json.dumps(record), flush=True)


if __name__ == "__main__":
    electra_tf.tune_cpu()  # before TensorFlow starts, as the commands do
    app.run(main)
