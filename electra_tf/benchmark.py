r"""Times one ELECTRA pretraining step and prints a JSON line (tokens/s, model GFLOP/s).

  python -m electra_tf.benchmark --size small --batch 32 --seq 128 --steps 10

The line has the same fields as ../shared/bench/torch_reference_step.py, and model FLOPs are
counted the same way (matmuls only, backward = 2x forward, generator head at masked positions
only), so the two can be run one after the other on the same machine and compared.
"""

import json
import os
import statistics
import time

from absl import app, flags

from electra_tf.training.flops import pretraining_step_flops

FLAGS = flags.FLAGS
flags.DEFINE_string("size", "small", "Model config: tiny, small, base, large, or a YAML path.")
flags.DEFINE_integer("batch", 32, "Global batch size (sequences).")
flags.DEFINE_integer("seq", 128, "Sequence length.")
flags.DEFINE_integer("steps", 10, "Timed steps; the median is reported.")
flags.DEFINE_integer("warmup", 2, "Untimed steps after compilation.")
flags.DEFINE_enum("precision", "float32", ["float32", "bf16", "fp16"],
                  "Keras dtype policy: float32, mixed_bfloat16 or mixed_float16.")
flags.DEFINE_bool("jit_compile", None, "Compile the train step with XLA (default: only when a "
                  "GPU is present; on CPU it measured slower than TensorFlow's own kernels).")
flags.DEFINE_integer("threads", 0, "TensorFlow intra-op threads (0: TensorFlow's default).")
flags.DEFINE_multi_string("override", [], "Config overrides, section.key=value.")

POLICIES = {"float32": "float32", "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}


def main(argv):
    del argv
    import keras
    import numpy as np
    import tensorflow as tf

    if FLAGS.threads:
        tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    from electra_tf.config import load_config
    from electra_tf.data.masking import mask_tokens, max_predictions_per_seq
    from electra_tf.models import ElectraPretrainer
    from electra_tf.training.optimizer import create_optimizer

    size = FLAGS.size if os.path.sep in FLAGS.size else f"model/{FLAGS.size}"
    config = load_config(size, overrides=FLAGS.override)
    keras.mixed_precision.set_dtype_policy(POLICIES[FLAGS.precision])
    keras.utils.set_random_seed(0)
    objective = config.objective
    num_predictions = max_predictions_per_seq(objective.mask_prob, FLAGS.seq)

    vocab_size = config.model.vocab_size
    ids = np.random.default_rng(0).integers(  # above BERT's special ids when the vocab allows
        min(104, vocab_size // 2), vocab_size, size=(FLAGS.batch, FLAGS.seq)).astype(np.int32)
    ids[:, 0], ids[:, -1] = objective.cls_token_id, objective.sep_token_id
    mask = np.ones_like(ids)
    batch = mask_tokens(ids, mask, tf.constant([0, 0]), mask_prob=objective.mask_prob,
                        max_predictions=num_predictions, mask_token_id=objective.mask_token_id,
                        special_token_ids=[objective.cls_token_id, objective.sep_token_id,
                                           objective.mask_token_id])
    batch.update(input_mask=tf.constant(mask), segment_ids=tf.zeros_like(ids))

    model = ElectraPretrainer(config.model, objective)
    jit_compile = FLAGS.jit_compile
    if jit_compile is None:
        jit_compile = bool(tf.config.list_physical_devices("GPU"))
    model.compile(optimizer=create_optimizer(config.optimizer), jit_compile=jit_compile)
    start = time.perf_counter()
    model.train_on_batch(batch)
    compile_s = time.perf_counter() - start
    for _ in range(FLAGS.warmup):
        model.train_on_batch(batch)
    times = []
    for _ in range(FLAGS.steps):
        start = time.perf_counter()
        model.train_on_batch(batch)
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    flops = pretraining_step_flops(config.model, FLAGS.batch, FLAGS.seq, num_predictions,
                                   objective.electra_objective)
    print(json.dumps({
        "impl": f"electra_tf keras {keras.__version__} tf {tf.__version__}"
                + (" xla" if jit_compile else ""),
        "size": FLAGS.size, "batch": FLAGS.batch, "seq": FLAGS.seq,
        "precision": FLAGS.precision, "threads": FLAGS.threads or "default",
        "median_step_s": round(median, 4), "compile_s": round(compile_s, 1),
        "tokens_per_s": round(FLAGS.batch * FLAGS.seq / median, 1),
        "model_gflop_per_s": round(flops / median / 1e9, 1),
    }))


if __name__ == "__main__":
    app.run(main)
