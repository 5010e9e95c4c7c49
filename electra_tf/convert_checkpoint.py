r"""Converts ELECTRA checkpoints between Google's TF1 release, Hugging Face and electra_tf.

  # Google's release (electra_small/ with its checkpoint and vocab.txt) -> electra_tf
  python -m electra_tf.convert_checkpoint --from google --input electra_small/ \
      --vocab_file electra_small/vocab.txt --output_dir converted/small
  # continue pretraining from it, or fine-tune from it
  python -m electra_tf.run_pretraining --init_checkpoint converted/small/checkpoints ...
  # Hugging Face directories (save_pretrained) -> electra_tf, and electra_tf -> Hugging Face
  python -m electra_tf.convert_checkpoint --from hf --input disc/ --generator gen/ --output_dir out
  python -m electra_tf.convert_checkpoint --from electra_tf --input runs/small --to hf --output_dir hf/

An electra_tf output holds checkpoints/ (weights keyed by Keras path), config.yaml (the resolved
config) and vocab.txt (when given). A Hugging Face output holds discriminator/ and generator/
directories that `ElectraForPreTraining` / `ElectraForMaskedLM.from_pretrained` load. A keras_hub
output is a keras-hub preset: the discriminator as an `ElectraBackbone` (keras-hub's encoder uses
the tanh GELU and has an untrained pooler; see electra_tf/convert/keras_hub.py for what that
costs) and, when the vocabulary is known, an `ElectraTokenizer` over it, so
`keras_hub.models.ElectraTokenizer.from_preset(dir)` and `ElectraBackbone.from_preset(dir)` load it.
The vocabulary is --vocab_file, else the input's own (see the flag). A SentencePiece model
(`.model`) is copied under its own name, and a Hugging Face output gets a fast tokenizer over it
(tokenizer.json; `AutoTokenizer.from_pretrained` loads it; electra_tf/convert/hf_sentencepiece.py);
keras-hub's tokenizer is WordPiece only, so --to keras_hub refuses one. A fine-tuning run's
classifier (`--from electra_tf --input runs/small_sst2 --to keras_hub`, one trial) becomes a whole
preset of `electra_tf.keras_hub_tasks.ElectraTextClassifier`: backbone, tokenizer, head and
preprocessor, which `keras_hub.models.TextClassifier.from_preset` loads once
`electra_tf.keras_hub_tasks` is imported; a fine-tuned tagger becomes one of
`ElectraTokenClassifier` (`ElectraTokenClassifier.from_preset` loads it).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys

from absl import flags, logging

from electra_tf import console
from electra_tf.config import ElectraConfig, RunConfig, load_config
from electra_tf.errors import UserError

console.setup(__name__)  # first: TensorFlow reads its C++ log level when it loads

FLAGS = flags.FLAGS
flags.DEFINE_enum("from", None, ["google", "hf", "keras_hub", "electra_tf"], "Input format.")
flags.DEFINE_enum("to", "electra_tf", ["electra_tf", "hf", "keras_hub"], "Output format.")
flags.DEFINE_string("input", None, "google: TF1 checkpoint prefix or directory; hf: an "
                    "ElectraForPreTraining (or ElectraModel) directory; electra_tf: a run directory "
                    "(config.yaml + checkpoints/) or a converted output directory; keras_hub: a local "
                    "ElectraBackbone preset directory (save_to_preset).")
flags.DEFINE_string("generator", None, "hf: the ElectraForMaskedLM directory of the generator.")
flags.DEFINE_string("output_dir", None, "Where to write the converted model.")
flags.DEFINE_string("vocab_file", None, "vocab.txt (or a SentencePiece .model) to copy beside "
                    "the output; keras_hub output: also the preset's tokenizer (WordPiece "
                    "only); hf output with a .model: a tokenizer.json that AutoTokenizer loads. "
                    "Default: the input's own, the first present of <input>/vocab.txt; "
                    "electra_tf: <input>/data/vocab.txt (the demo's), run.vocab_file of its "
                    "config.yaml; keras_hub: the preset's assets/tokenizer/vocabulary.txt.")
flags.DEFINE_bool("lower_case", None, "keras_hub output: the tokenizer lower-cases and strips "
                  "accents (an uncased vocabulary) or, with --nolower_case, keeps case. Default: "
                  "uncased unless the vocabulary holds upper-case tokens.")
flags.DEFINE_integer("num_heads", None, "google: attention heads of the discriminator (not in "
                     "the shapes; default hidden // 64 as in the original).")
flags.DEFINE_integer("generator_num_heads", None, "google: attention heads of the generator "
                     "(default generator hidden // 64).")
flags.DEFINE_bool("overwrite", False, "Write into an output directory that already has files.")
flags.mark_flags_as_required(["from", "input", "output_dir"])


def _load(source: str, path: str):
    """(pretrainer, has_generator) from any supported input."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf.convert import google, hf

    if source == "google":
        return google.load_google_checkpoint(path, num_heads=FLAGS.num_heads,
                                             generator_num_heads=FLAGS.generator_num_heads)
    if source == "hf":
        return hf.load_hf_pretrainer(path, FLAGS.generator), FLAGS.generator is not None
    if source == "keras_hub":
        # lazy: imported once the flags are parsed, so --help starts no TensorFlow
        import keras_hub

        from electra_tf.convert.keras_hub import from_keras_hub_backbone

        backbone = keras_hub.models.ElectraBackbone.from_preset(path)
        return from_keras_hub_backbone(backbone), False
    return load_electra_tf(path), True


def _input_vocab_file(source: str, path: str) -> str | None:
    """The vocabulary that came with the input, if any (the order --vocab_file's help gives)."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf import run_directory

    kind = {"electra_tf": run_directory.PRETRAINING, "keras_hub": run_directory.KERAS_HUB}
    return run_directory.vocab_file(path, kind.get(source))


def _tokenizer_line(tokenizer, vocab_file: str | None) -> str:
    if tokenizer is None:
        return ("tokenizer: not written (no vocabulary known); give --vocab_file vocab.txt to add "
                "keras-hub's ElectraTokenizer to the preset")
    casing = "lower-cased, accents stripped" if tokenizer.lowercase else "cased"
    return (f"tokenizer: ElectraTokenizer, {tokenizer.vocabulary_size()} tokens from "
            f"{vocab_file}, {casing} (--lower_case / --nolower_case to choose)")


def _copy_name(vocab_file: str) -> str:
    """The vocabulary's name in an output: vocab.txt, or a SentencePiece model's own name."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf import run_directory
    from electra_tf.text.vocab_files import is_sentencepiece

    return os.path.basename(vocab_file) if is_sentencepiece(vocab_file) else run_directory.VOCAB


def load_electra_tf(path: str):
    """A pretrainer from a run directory or a converted output (config.yaml + checkpoints/)."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf import run_directory
    from electra_tf.models.pretrainer_factory import build_pretrainer
    from electra_tf.training.checkpointing import restore_weights

    config = load_config(run_directory.config_file(path))
    pretrainer = build_pretrainer(config.model, config.objective)
    restore_weights(pretrainer, run_directory.checkpoints_dir(path))
    return pretrainer


def write_electra_tf(pretrainer, output_dir: str, vocab_file: str | None) -> str:
    """checkpoints/ckpt-0 (weights by Keras path) and config.yaml under output_dir, the config
    naming the vocabulary's copy in output_dir when there is one (main copies it there)."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf import run_directory
    from electra_tf.text.vocab_files import load_special_ids
    from electra_tf.training.checkpointing import save_weights

    objective = pretrainer.objective
    run = RunConfig(max_seq_length=min(RunConfig.max_seq_length,
                                       pretrainer.model_config.max_position_embeddings))
    if vocab_file:
        ids = load_special_ids(vocab_file)
        objective = dataclasses.replace(objective, pad_token_id=ids.pad, cls_token_id=ids.cls,
                                        sep_token_id=ids.sep, mask_token_id=ids.mask)
        run = dataclasses.replace(run, vocab_file=os.path.join(output_dir,
                                                               _copy_name(vocab_file)))
    config = ElectraConfig(model=pretrainer.model_config, objective=objective, run=run)
    path = save_weights(pretrainer, run_directory.checkpoints_dir(output_dir))
    run_directory.write_config(output_dir, config)
    return path


def _fine_tuned_to_keras_hub(path: str, output_dir: str) -> None:
    """A fine-tuning run's classifier or tagger (one trial) -> a whole keras-hub preset of
    `ElectraTextClassifier` or `ElectraTokenClassifier`: backbone, tokenizer, head and
    preprocessor."""
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf.convert import ConversionError
    from electra_tf.keras_hub_tasks import (to_keras_hub_text_classifier,
                                            to_keras_hub_token_classifier)
    from electra_tf.loading import load
    from electra_tf.models import ElectraClassifier, ElectraTagger

    try:
        if os.path.isdir(output_dir) and os.listdir(output_dir) and not FLAGS.overwrite:
            raise ConversionError(f"{output_dir} is not empty (use --overwrite to write into it)")
        model = load(path)
        if not isinstance(model, (ElectraClassifier, ElectraTagger)):
            raise ConversionError(f"{path} holds a fine-tuned {type(model).__name__}; a "
                                  "classifier or a tagger becomes a keras-hub task preset "
                                  "(keras-hub has no question-answering task)")
        if model.preprocessor is None:
            raise ConversionError(f"{path}: its config names no vocabulary that exists here, so "
                                  "the preset would have no tokenizer")
        if isinstance(model, ElectraTagger):
            task, what = to_keras_hub_token_classifier(model), f"tagger ({model.num_tags} tags)"
            loader = "electra_tf.keras_hub_tasks.ElectraTokenClassifier.from_preset loads it"
        else:
            task, what = (to_keras_hub_text_classifier(model),
                          f"classifier ({model.num_labels} classes)")
            loader = ("keras_hub.models.TextClassifier.from_preset loads it once "
                      "electra_tf.keras_hub_tasks is imported")
        task.save_to_preset(output_dir)
    except (UserError, ValueError, OSError) as e:
        sys.exit(f"error: {e}")
    print(f"converted a fine-tuned {what} -> keras_hub {type(task).__name__}: {output_dir} "
          f"({loader})", flush=True)


def main(argv):
    if len(argv) > 1:
        sys.exit(f"error: unexpected arguments {argv[1:]}; see --help")
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf import run_directory
    from electra_tf.convert import ConversionError, hf
    from electra_tf.convert.hf_sentencepiece import write_hf_sentencepiece_tokenizer
    from electra_tf.text import vocab_files

    source, output_dir = getattr(FLAGS, "from"), FLAGS.output_dir
    if (source == "electra_tf" and FLAGS.to == "keras_hub"
            and os.path.exists(os.path.join(FLAGS.input, run_directory.TASK_CARD))):
        return _fine_tuned_to_keras_hub(FLAGS.input, output_dir)
    vocab_file = FLAGS.vocab_file or _input_vocab_file(source, FLAGS.input)
    sentencepiece = bool(vocab_file) and vocab_files.is_sentencepiece(vocab_file)
    tokenizer = None
    try:
        if os.path.isdir(output_dir) and os.listdir(output_dir) and not FLAGS.overwrite:
            raise ConversionError(f"{output_dir} is not empty (use --overwrite to write into it)")
        if sentencepiece and FLAGS.to == "keras_hub":
            raise ConversionError(f"{vocab_file} is a SentencePiece model, and keras-hub's "
                                  f"ElectraTokenizer is WordPiece only: convert --to hf or "
                                  f"electra_tf, or give a vocab.txt")
        if source == "electra_tf" and FLAGS.to != "electra_tf":  # before any weight is read
            hf.refuse_pre_layer_norm(load_config(run_directory.config_file(
                FLAGS.input)).model.pre_layer_norm, {"hf": "Hugging Face"}.get(FLAGS.to,
                                                                             "keras-hub"))
        pretrainer, has_generator = _load(source, FLAGS.input)
        os.makedirs(output_dir, exist_ok=True)
        if FLAGS.to == "keras_hub":
            # lazy: imported once the flags are parsed, so --help starts no TensorFlow
            from electra_tf.convert.keras_hub import save_keras_hub_preset

            tokenizer = save_keras_hub_preset(pretrainer.encoder, output_dir, vocab_file,
                                              FLAGS.lower_case)
            written = output_dir
        elif FLAGS.to == "hf":
            discriminator_dir, generator_dir = run_directory.hf_output_dirs(output_dir)
            hf.save_hf(pretrainer, discriminator_dir, generator_dir if has_generator else None)
            written = output_dir
        else:
            written = write_electra_tf(pretrainer, output_dir, vocab_file)
        if vocab_file:
            for directory in ([output_dir] if FLAGS.to != "hf" else
                              [d for d in run_directory.hf_output_dirs(output_dir)
                               if os.path.isdir(d)]):
                if sentencepiece and FLAGS.to == "hf":  # ElectraTokenizer is WordPiece only
                    write_hf_sentencepiece_tokenizer(
                        vocab_file, directory, pretrainer.model_config.max_position_embeddings)
                else:
                    shutil.copyfile(vocab_file, os.path.join(directory, _copy_name(vocab_file)))
    except (UserError, OSError) as e:
        sys.exit(f"error: {e}")
    config = pretrainer.model_config
    generator = config.generator_config()
    print(f"converted {source} -> {FLAGS.to}: {written}\n"
          f"discriminator: hidden {config.hidden_size}, {config.num_layers} layers, "
          f"{config.num_heads} heads, embedding {config.embedding_size}, vocab {config.vocab_size}\n"
          + (f"generator: hidden {generator.hidden_size}, {generator.num_layers} layers, "
             f"{generator.num_heads} heads" if has_generator else "generator: none in the input")
          + (f"\n{_tokenizer_line(tokenizer, vocab_file)}" if FLAGS.to == "keras_hub" else ""),
          flush=True)
    logging.info("done")


if __name__ == "__main__":
    console.run(main)
