r"""Fine-tunes a pretrained ELECTRA discriminator: `python -m electra_tf.run_finetuning [flags]`.

GLUE from the download layout, from TFDS, or your own CSV/TSV/JSON Lines:

  python -m electra_tf.run_finetuning --task glue/mnli --data_dir glue_data/MNLI \
      --init_checkpoint runs/small --model_dir runs/small_mnli --num_trials 5
  python -m electra_tf.run_finetuning --task glue/rte,glue/mrpc,glue/stsb --data_dir glue_data \
      --init_checkpoint converted/electra_small --config finetune/small --model_dir runs/glue
  python -m electra_tf.run_finetuning --task glue/sst2 --tfds --init_checkpoint converted/small ...
  python -m electra_tf.run_finetuning --task csv --data_dir my_task/ --text_a_column review \
      --label_column stars --labels 1,2,3,4,5 --init_checkpoint runs/small --model_dir runs/stars
  python -m electra_tf.run_finetuning --task squad/v2.0 --train_file train-v2.0.json \
      --predict_file dev-v2.0.json --init_checkpoint converted/electra_small --model_dir runs/squad2
  python -m electra_tf.run_finetuning --task chunk --data_dir conll2000/ \
      --init_checkpoint converted/electra_small --model_dir runs/chunk

SQuAD writes predictions.json, nbest_predictions.json and (v2.0) null_odds.json under
predictions/dev/ and reports the official EM / F1 (v2.0: at qa.null_threshold -2.75 and at the
best threshold); windows of 512 tokens unless --override finetune.max_seq_length=384.
Tagging (`chunk`, `ner`: CoNLL files train.txt / dev.txt, or --tfds for conll2003) reports
span-level F1 and writes `word gold predicted` files under predictions/dev/.

`--init_checkpoint` is a run directory of run_pretraining or an output of convert_checkpoint
(Google's and Hugging Face's releases); without it the encoder starts from scratch (a baseline).
Each run directory gets config.yaml, report.json (every trial, median, mean, std),
results.json per trial (dev metrics after every epoch, best and last), checkpoints, TensorBoard
events and a SavedModel under export/<step>/. Rerunning the same command resumes; SIGTERM saves
and exits 0.

With no flags: a demonstration on the embedded corpus of the pretraining demo (run
`python -m electra_tf.run_pretraining` first): ELECTRA vs an MLM baseline at equal pretraining
FLOPs vs no pretraining vs the majority class (see electra_tf/finetuning/demo.py).
"""

from __future__ import annotations

import sys

from absl import flags, logging

from electra_tf import console
from electra_tf.errors import RunError, exit_on_user_error
from electra_tf.training import device_flags

console.setup(__name__)  # first: TensorFlow reads its C++ log level when it loads

FLAGS = flags.FLAGS
flags.DEFINE_list("task", None, "glue/{cola,sst2,mrpc,stsb,qqp,mnli,qnli,rte,wnli}, csv, "
                  "squad/v1.1, squad/v2.0, mrqa, chunk or ner; "
                  "several (comma-separated) run one after the other, each in "
                  "<model_dir>/<task>. Default: the demonstration.")
flags.DEFINE_string("data_dir", None, "GLUE: the task's download folder (glue_data/MNLI) or the "
                    "GLUE root; csv: a folder with train.*, dev.* and optionally test.* "
                    "(.tsv, .csv or .jsonl); chunk / ner: a folder with train.txt, dev.txt "
                    "and optionally test.txt (CoNLL: one word a line, blank line between "
                    "sentences); squad: train.json and dev.json.")
flags.DEFINE_bool("tfds", False, "Read tensorflow_datasets instead of files: glue/<task>, squad "
                  "(v1.1 or v2.0), or conll2003 for chunk (its chunk column) and ner.")
flags.DEFINE_string("tfds_data_dir", None, "TFDS data directory (default: TFDS's own).")
flags.DEFINE_string("train_file", None, "csv, chunk, ner, squad: the training file (instead "
                    "of --data_dir).")
flags.DEFINE_string("dev_file", None, "csv, chunk, ner: the dev file.")
flags.DEFINE_string("test_file", None, "csv, chunk, ner: the test file (for --do_predict).")
flags.DEFINE_integer("tag_column", -1, "chunk / ner: the column of the tag (0-based; negative "
                     "counts from the end); the word is column 0. Tags may be BIO, IOB1 or "
                     "BIOES; the model predicts BIOES.")
flags.DEFINE_string("predict_file", None, "squad: the official dev JSON (dev-v1.1.json, "
                    "dev-v2.0.json) to predict and score; --train_file is train-v*.json. "
                    "Or --data_dir with train.json and dev.json, or --tfds. mrqa: the shared "
                    "task's dev .jsonl(.gz) (scored as SQuAD v1.1).")
flags.DEFINE_string("text_a_column", None, "csv: column of the (first) text: a header name or "
                    "a 0-based index (negative counts from the end).")
flags.DEFINE_string("text_b_column", None, "csv: column of the second text of a pair.")
flags.DEFINE_string("label_column", None, "csv: column of the label.")
flags.DEFINE_list("labels", None, "csv: the label names, in order (classification).")
flags.DEFINE_bool("regression", False, "csv: the label is a number; one output unit, squared "
                  "error on the label scaled to [0, 1] by --label_range.")
flags.DEFINE_list("label_range", ["0", "1"], "csv --regression: min,max of the labels (STS-B: 0,5).")
flags.DEFINE_string("init_checkpoint", None, "Run directory of run_pretraining, output of "
                    "convert_checkpoint, or a checkpoint prefix inside its checkpoints/. "
                    "Default: none (the encoder trains from scratch).")
flags.DEFINE_string("vocab_file", None, "vocab.txt (default: the one that came with the "
                    "init checkpoint).")
flags.DEFINE_string("model_dir", None, "Output directory (required, except for the demo).")
flags.DEFINE_string("config", None, "Fine-tuning recipe (path or name under configs/, e.g. "
                    "finetune/small, finetune/small_paper, finetune/large). Default: "
                    "finetune/default: the original code's values, but the learning rate by the "
                    "encoder's width (the paper's 3e-4 at 256, 1e-4 at 768, 5e-5 at 1024; 6e-4 "
                    "at 128) and at least 100 steps. finetune/small is the original code's "
                    "recipe as it is (lr 1e-4).")
flags.DEFINE_multi_string("override", [], "Config override section.key=value, e.g. "
                          "--override finetune.num_train_epochs=2 --override optimizer.learning_rate=3e-4.")
flags.DEFINE_integer("num_trials", 1, "Runs with seeds seed, seed+1, ... from the same "
                     "checkpoint; the report gives each and the median, mean and std.")
flags.DEFINE_bool("do_predict", False, "Write test-set predictions (GLUE: the submission files "
                  "the GLUE server accepts, MNLI-m/-mm and AX included).")
flags.DEFINE_bool("export", True, "Export each trial's SavedModel under export/<step>/.")
flags.DEFINE_bool("with_tokenizer", False, "Add the serve_text signature (raw text in, label "
                  "names out; needs a model server with TF Text ops).")
device_flags.define_device_flags()
flags.adopt_module_key_flags(device_flags)  # listed by --help with this command's own flags


def _label_range() -> tuple[float, float]:
    try:
        low, high = (float(v) for v in FLAGS.label_range)
    except ValueError:
        raise RunError(f"--label_range needs two numbers min,max, got {FLAGS.label_range}") from None
    return low, high


def run() -> int:
    """The flags, resolved into one `FinetuneJob` for `finetuning.api.finetune_tasks` (or the
    demonstration)."""
    if not FLAGS.task:
        # lazy: imported once the flags are parsed, so --help starts no TensorFlow
        from electra_tf.finetuning import demo

        trials = FLAGS.num_trials if FLAGS["num_trials"].present else demo.TRIALS
        return demo.run_demo(trials=trials, overrides=FLAGS.override or [])
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf.finetuning import api, runner
    from electra_tf.finetuning.job import resolve_finetune_job

    def print_report(report, model_dir):
        print(runner.format_report(report, model_dir), flush=True)
        if report["status"] != "finished":
            logging.info("preempted: rerun the same command to continue")

    job = resolve_finetune_job(
        FLAGS.task, model_dir=FLAGS.model_dir, init_checkpoint=FLAGS.init_checkpoint,
        config=FLAGS.config, overrides=FLAGS.override, vocab_file=FLAGS.vocab_file,
        num_trials=FLAGS.num_trials, devices=device_flags.DeviceOptions.from_flags(),
        export=FLAGS.export, with_tokenizer=FLAGS.with_tokenizer, do_predict=FLAGS.do_predict,
        data_dir=FLAGS.data_dir, use_tfds=FLAGS.tfds, tfds_data_dir=FLAGS.tfds_data_dir,
        train_file=FLAGS.train_file, dev_file=FLAGS.dev_file, test_file=FLAGS.test_file,
        predict_file=FLAGS.predict_file, text_a_column=FLAGS.text_a_column,
        text_b_column=FLAGS.text_b_column, label_column=FLAGS.label_column, labels=FLAGS.labels,
        regression=FLAGS.regression, label_range=_label_range(), tag_column=FLAGS.tag_column)
    reports = api.finetune_tasks(job, on_report=print_report)
    if reports and reports[-1]["status"] != "finished":
        console.exit_at_once(0)  # saved: the notice's seconds are not spent tearing down
    return 0


def main(argv):
    if len(argv) > 1:
        sys.exit(f"error: unexpected arguments {argv[1:]}; see --help")

    return exit_on_user_error(run)


if __name__ == "__main__":
    console.run(main)
