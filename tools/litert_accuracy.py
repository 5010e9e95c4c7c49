"""Dev accuracy of a fine-tuning run's trials as the Keras model, as the SavedModel that
`export_savedmodel` writes (its serving_default) and as LiteRT files (float32, float16, dynamic
int8), with the largest and the mean logit difference from the SavedModel's.

For the no-flags demonstration (`python -m electra_tf.run_pretraining`, then
`python -m electra_tf.run_finetuning`, from the same working directory):

    python tools/litert_accuracy.py runs/electra_demo_finetune/electra runs/electra_demo_finetune/mlm

Each trial's dev pairs go through the run's own preprocessor, padded to its max_seq_length;
the files are written beside this process's working directory under litert_accuracy/.
"""

from __future__ import annotations

import glob
import os
import statistics
import sys
import tempfile

import numpy as np

from electra_tf import run_directory
from electra_tf.export.litert import QUANTIZATIONS, export_litert
from electra_tf.finetuning import demo
from electra_tf.loading import load

BATCH = 64


def trial_accuracies(trial: str, dev, labels) -> dict:
    from ai_edge_litert.interpreter import Interpreter

    model = load(trial)
    features = {name: np.asarray(value) for name, value in model.preprocessor(
        x=([e.text_a for e in dev], [e.text_b for e in dev])).items()}
    logits = {"keras": np.asarray(model.predict(features, verbose=0, batch_size=BATCH)),
              "savedmodel": savedmodel_logits(model, features)}
    for quantize in QUANTIZATIONS:
        path = export_litert(model, os.path.join("litert_accuracy", trial.replace(os.sep, "_")
                                                 + f".{quantize}.tflite"),
                             max_seq_length=model.preprocessor.sequence_length,
                             quantize=quantize)["path"]
        run = Interpreter(model_path=path).get_signature_runner()
        logits[quantize] = np.concatenate([
            run(**{name: value[i:i + BATCH] for name, value in features.items()})["logits"]
            for i in range(0, len(labels), BATCH)])
    return {name: (100 * float((value.argmax(-1) == labels).mean()),
                   float(np.abs(value - logits["savedmodel"]).max()),
                   float(np.abs(value - logits["savedmodel"]).mean()))
            for name, value in logits.items()}


def savedmodel_logits(model, features: dict) -> np.ndarray:
    """[examples, labels] logits of the classifier's serving_default, loaded back as TF Serving
    would load it."""
    import tensorflow as tf

    from electra_tf.export.classifier import export_classifier

    with tempfile.TemporaryDirectory() as directory:
        export_classifier(model, directory, task="accuracy", with_examples=False,
                          label_names=[str(i) for i in range(model.num_labels)])
        serve = tf.saved_model.load(directory).signatures["serving_default"]
        count = len(features["input_ids"])
        return np.concatenate([
            serve(**{name: tf.constant(value[i:i + BATCH]) for name, value in features.items()}
                  )["logits"].numpy() for i in range(0, count, BATCH)])


def main(run_dirs: list[str]) -> None:
    task = demo.coherence_task(run_directory.demo_data_dir("runs/electra_demo"))
    dev = task.eval_splits["dev"]
    labels = np.array([task.label_space.labels.index(e.label) for e in dev])
    for run_dir in run_dirs:
        by_trial = [trial_accuracies(t, dev, labels)
                    for t in sorted(glob.glob(os.path.join(run_dir, "trial_*"))) or [run_dir]]
        for name in by_trial[0]:
            accuracies = [trial[name][0] for trial in by_trial]
            print(f"{run_dir} {name}: dev accuracy median {statistics.median(accuracies):.2f} "
                  f"({', '.join(f'{a:.2f}' for a in accuracies)}); logits vs the SavedModel: max "
                  f"{max(t[name][1] for t in by_trial):.2e}, mean "
                  f"{statistics.mean(t[name][2] for t in by_trial):.2e}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
