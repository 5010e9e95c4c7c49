r"""Exports a model as one LiteRT (TensorFlow Lite) file, float32 or quantized, for
`ai-edge-litert`'s interpreter on CPUs and devices (no TensorFlow in the serving process).

  python -m electra_tf.export_litert --model_dir runs/mnli/trial_0 --quantize int8_dynamic

reads any directory or file `electra_tf.load` reads (a fine-tuning trial: its classifier,
tagger or question answerer; a pretraining run: its discriminator; a keras-hub preset: its
encoder; a `.keras` file) and writes `<model_dir>/model.<quantize>.tflite` (or `--output`).
Inputs: int32 input_ids, input_mask, segment_ids [batch, max_seq_length], the length fixed at
export (a fine-tuning run's own by default); outputs as electra_tf/export/litert.py lists.
`--quantize float16` halves the file, `int8_dynamic` quarters it and runs XNNPACK's int8
kernels (docs/serving.md, "LiteRT").
"""

from __future__ import annotations

import os
import sys

from absl import flags

from electra_tf import console
from electra_tf.errors import UserError, exit_on_user_error

console.setup(__name__)  # first: TensorFlow reads its C++ log level when it loads

QUANTIZATIONS = ("none", "float16", "int8_dynamic")  # electra_tf.export.litert's, without TF

FLAGS = flags.FLAGS
flags.DEFINE_string("model_dir", None, "What to export: a fine-tuning trial directory, a "
                    "pretraining run, a keras-hub preset or a .keras file.")
flags.DEFINE_string("output", None, "The .tflite file. Default: <model_dir>/model.<quantize>"
                    ".tflite (beside a .keras file).")
flags.DEFINE_enum("quantize", "none", QUANTIZATIONS, "none: float32; float16: weights in "
                  "float16; int8_dynamic: weights in int8, activations quantized per request.")
flags.DEFINE_integer("max_seq_length", None, "The fixed input length. Default: a fine-tuning "
                     "run's max_seq_length, else 128 (at most the model's positions).")
flags.DEFINE_bool("overwrite", False, "Replace an existing --output file.")
flags.mark_flag_as_required("model_dir")


class ExportLiteRTError(UserError):
    """A command line that cannot be exported."""


def default_output(model_dir: str, quantize: str) -> str:
    base = model_dir if os.path.isdir(model_dir) else os.path.dirname(model_dir)
    return os.path.join(base, f"model.{quantize}.tflite")


def default_length(model_dir: str, positions: int) -> int:
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf import run_directory
    from electra_tf.config import FinetuneConfig, load_config

    located = run_directory.locate(model_dir)
    if located.kind == run_directory.FINETUNING:
        return load_config(located.config_path, base=FinetuneConfig()).finetune.max_seq_length
    return min(128, positions)


def run() -> int:
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf.export.litert import export_litert
    from electra_tf.loading import load

    output = FLAGS.output or default_output(FLAGS.model_dir, FLAGS.quantize)
    if os.path.exists(output) and not FLAGS.overwrite:
        raise ExportLiteRTError(f"{output} exists: pass --overwrite to replace it")
    model = load(FLAGS.model_dir)
    encoder = getattr(model, "encoder", model)
    length = FLAGS.max_seq_length or default_length(
        FLAGS.model_dir, encoder.embeddings.max_position_embeddings)
    written = export_litert(model, output, max_seq_length=length, quantize=FLAGS.quantize)
    print(f"wrote {written['path']}: the {written['kind']}, {written['quantize']}, length "
          f"{length}, {written['bytes'] / 2 ** 20:.2f} MiB", flush=True)
    return 0


def main(argv):
    if len(argv) > 1:
        sys.exit(f"error: unexpected arguments {argv[1:]}; see --help")
    return exit_on_user_error(run)


if __name__ == "__main__":
    console.run(main)
