"""Does full-integer (static) int8 pay in LiteRT, against the dynamic int8 that
`electra_tf.export_litert --quantize int8_dynamic` writes? ELECTRA-Small's classifier (random
weights, length 128): the converter with a representative dataset (20 random requests; ops
without int8 kernels fall back to float), both files timed in turn at batch 1 by the
interpreter with two threads, and each file's largest logit difference from the Keras model.

    python tools/litert_static_int8.py
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time

import numpy as np

LENGTH = 128


def _request(rng) -> dict:
    ids = rng.integers(5, 30000, size=(1, LENGTH)).astype(np.int32)
    ids[:, 0], ids[:, -1] = 2, 3
    return {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)}


def main() -> None:
    from electra_tf.cpu_tuning import tune_cpu

    tune_cpu()
    import tensorflow as tf
    from ai_edge_litert.interpreter import Interpreter

    from electra_tf.config import load_config
    from electra_tf.export.litert import _outputs, export_litert
    from electra_tf.export.savedmodel import INPUT_NAMES, new_archive
    from electra_tf.models.classifier import ElectraClassifier

    model = ElectraClassifier(load_config("pretrain/electra_small").model, num_labels=3)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as directory:
        paths = {"dynamic int8": os.path.join(directory, "dynamic.tflite"),
                 "static int8": os.path.join(directory, "static.tflite")}
        export_litert(model, paths["dynamic int8"], max_seq_length=LENGTH,
                      quantize="int8_dynamic")
        _, outputs = _outputs(model)
        model.encoder.inference_chains = 1  # as export_litert traces it
        archive = new_archive(model)
        archive.add_endpoint("serving_default", outputs, input_signature=[
            tf.TensorSpec([None, LENGTH], tf.int32, name=n) for n in INPUT_NAMES])
        archive.write_out(os.path.join(directory, "savedmodel"), verbose=False)
        converter = tf.lite.TFLiteConverter.from_saved_model(os.path.join(directory,
                                                                          "savedmodel"))
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = lambda: (_request(rng) for _ in range(20))
        with open(paths["static int8"], "wb") as f:
            f.write(converter.convert())

        request = _request(rng)
        expected = model(request, training=False).numpy()
        runners = {name: Interpreter(model_path=path, num_threads=2).get_signature_runner()
                   for name, path in paths.items()}
        times = {name: [] for name in runners}
        for _ in range(40):
            for name, run in runners.items():
                start = time.perf_counter()
                run(**request)
                times[name].append(time.perf_counter() - start)
        for name, run in runners.items():
            print(f"{name}: {os.path.getsize(paths[name]) / 2 ** 20:.1f} MiB, batch 1 "
                  f"{1000 * statistics.median(times[name]):.1f} ms, logits vs Keras max "
                  f"{np.abs(run(**request)['logits'] - expected).max():.4f} (their spread "
                  f"{expected.std():.3f})", flush=True)


if __name__ == "__main__":
    main()
