"""Does an int8 or bfloat16 SavedModel pay under TensorFlow's own runtime (what a stock model
server runs)? ELECTRA-Small's classifier (random weights, 3 labels, length 128) exported three
ways, timed alternately in one process:

- float32: `export_classifier` as `export_savedmodel` writes it;
- bfloat16: `--serving_dtype bfloat16` (`precision.serving_copy`);
- int8: the float32 SavedModel through TensorFlow's post-training quantizer
  (`tf.quantization.experimental.quantize_saved_model`, METHOD_DYNAMIC_RANGE_INT8: int8
  weights, activations quantized per request, as ONNX Runtime's and LiteRT's dynamic int8).

    python tools/savedmodel_int8.py [--steps 30]

Prints per variant: the SavedModel's size, batch 1 latency with one intra-op thread (the model
server flag docs/serving.md recommends), batch 32 tokens/s with the cores, and the largest
logit difference from float32.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

from electra_tf.cpu_tuning import tune_cpu

LENGTH = 128


def _size_mib(directory: str) -> float:
    return sum(os.path.getsize(os.path.join(root, name))
               for root, _, names in os.walk(directory) for name in names) / 2 ** 20


def export_variants(directory: str) -> dict[str, str]:
    import tensorflow as tf
    from tensorflow.compiler.mlir.quantization.tensorflow import quantization_options_pb2

    from electra_tf.config import load_config
    from electra_tf.export.classifier import export_classifier
    from electra_tf.export.precision import serving_copy
    from electra_tf.models.classifier import ElectraClassifier

    model = ElectraClassifier(load_config("pretrain/electra_small").model, num_labels=3)
    paths = {name: os.path.join(directory, name) for name in ("float32", "bfloat16", "int8")}
    for dtype in ("float32", "bfloat16"):
        export_classifier(serving_copy(model, dtype), paths[dtype], task="benchmark",
                          label_names=("a", "b", "c"), with_examples=False)
    method = quantization_options_pb2.QuantizationMethod.PresetMethod.METHOD_DYNAMIC_RANGE_INT8
    tf.quantization.experimental.quantize_saved_model(
        paths["float32"], paths["int8"],
        quantization_options=tf.quantization.experimental.QuantizationOptions(
            signature_keys=["serving_default"], tags={"serve"},
            quantization_method=tf.quantization.experimental.QuantizationMethod(
                preset_method=method)))
    return paths


def _inputs(batch: int):
    import numpy as np
    import tensorflow as tf

    ids = np.random.default_rng(batch).integers(5, 30000, size=(batch, LENGTH)).astype(np.int32)
    ids[:, 0], ids[:, -1] = 2, 3
    return {"input_ids": tf.constant(ids), "input_mask": tf.ones_like(ids),
            "segment_ids": tf.zeros_like(ids)}


def time_alternately(serves: dict, inputs: dict, steps: int) -> dict[str, float]:
    """Median seconds of one call per variant, the variants called in turn each round."""
    for serve in serves.values():
        for _ in range(3):
            serve(**inputs)["logits"].numpy()
    times = {name: [] for name in serves}
    for _ in range(steps):
        for name, serve in serves.items():
            start = time.perf_counter()
            serve(**inputs)["logits"].numpy()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=30, help="timed calls per variant at "
                        "batch 1 (batch 32: a fifth of them)")
    steps = parser.parse_args(argv).steps
    tune_cpu()
    import numpy as np
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)  # the server flag for batch 1
    with tempfile.TemporaryDirectory() as directory:
        paths = export_variants(directory)
        serves = {name: tf.saved_model.load(path).signatures["serving_default"]
                  for name, path in paths.items()}
        single = time_alternately(serves, _inputs(1), steps)
        batch = _inputs(32)
        logits = {name: serve(**batch)["logits"].numpy() for name, serve in serves.items()}
        print("batch 32 below runs with one intra-op thread too (TensorFlow fixes it per "
              "process)", flush=True)
        many = time_alternately(serves, batch, max(3, steps // 5))
        for name in paths:
            print(f"{name:9s} {_size_mib(paths[name]):6.1f} MiB   batch 1: "
                  f"{1000 * single[name]:6.1f} ms ({single['float32'] / single[name]:.2f}x "
                  f"float32)   batch 32: {32 * LENGTH / many[name]:7.0f} tokens/s   logits vs "
                  f"float32: max {np.abs(logits[name] - logits['float32']).max():.3f}",
                  flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
