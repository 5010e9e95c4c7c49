r"""What pretraining is worth downstream: `python -m electra_tf.study [flags]`.

  python -m electra_tf.study --data_dir data/debian --output_dir runs/study
  python -m electra_tf.study --checkpoints 250,1000,4000 --labels 100,1000,all --seeds 3 \
      --objectives electra --output_dir runs/study_electra_only

Pretrains ELECTRA and the MLM baseline at equal FLOPs (checkpoints at --checkpoints ELECTRA
steps, the MLM's at the same FLOPs), fine-tunes every checkpoint and the random initialisation
on the data directory's classification task (sections/{train,dev,test}.tsv) at each label
count, with seed 0 at every learning rate of the grid, then the other seeds at the rate with
the best dev accuracy, and writes into --output_dir:
  results.jsonl           one line per trial (encoder, FLOPs, n, lr, seed, dev, test, ...)
  summary.json, table.md  median test accuracy (min-max) over seeds per encoder and label count
                          (summary.json: also the standard deviation and each seed's value)
  accuracy_vs_flops.png   one panel per label count: accuracy against pretraining FLOPs
A missing data directory is built as `python -m electra_tf.build_debian_corpus` does; a missing
vocabulary and records are built in it. Rerun the same command after an interruption: finished
pieces (data, pretraining, trials) are not redone; SIGTERM stops cleanly. A study that varies
only the pretraining can take another's no-pretraining trials: --random_from DIR; one that varies
only the fine-tuning, another's pretrained encoders: --pretraining_from DIR. The report of
a study still running:
`python -c "from electra_tf.study import write_report; write_report('runs/study')"`.
"""

from __future__ import annotations

import sys

from absl import flags

from electra_tf import console
from electra_tf.errors import exit_on_user_error

console.setup(__name__)  # first: TensorFlow reads its C++ log level when it loads

FLAGS = flags.FLAGS
flags.DEFINE_string("data_dir", "data/debian", "Data directory: corpus/*.txt and heldout/*.txt "
                    "(pretraining text), sections/{train,dev,test}.tsv (columns text, label) and "
                    "sections/labels.txt. Without a corpus and task the Debian corpus is built "
                    "there (as electra_tf.build_debian_corpus); vocab.txt and records<L>/, "
                    "heldout<L>/ are built there when missing.")
flags.DEFINE_string("output_dir", "runs/study", "Where the study's runs, results.jsonl and "
                    "report go. Rerunning with the same directory resumes.")
flags.DEFINE_string("pretrain_config", "pretrain/study", "Pretraining recipe of both runs (a "
                    "path, or a name under configs/).")
flags.DEFINE_multi_string("override", [], "Pretraining config override section.key=value, for "
                          "both runs (repeatable), e.g. run.train_batch_size=64.")
flags.DEFINE_list("checkpoints", ["1000", "3000", "9000"], "ELECTRA pretraining steps whose "
                  "encoders are fine-tuned, each a multiple of the first; the last is the run's "
                  "length. The MLM baseline gets the same FLOPs at each.")
flags.DEFINE_integer("schedule_steps", None, "ELECTRA steps the learning-rate schedule spans "
                     "(default: the last checkpoint). More makes both runs the first part of "
                     "longer ones, stopped at the last checkpoint; a later study with more "
                     "checkpoints and the same --schedule_steps continues them.")
flags.DEFINE_list("labels", ["100", "300", "1000", "all"], "Label counts: training examples "
                  "to fine-tune on (the same subset for every encoder), 'all' for the whole "
                  "training set.")
flags.DEFINE_integer("seeds", 5, "Fine-tuning seeds per encoder and label count; the report "
                     "gives their median, min and max. Seed 0 also chooses the learning rate.")
flags.DEFINE_list("learning_rates", ["3e-4", "1e-3", "3e-3"], "Learning-rate grid: seed 0 runs "
                  "at each, the other seeds at the one with the best dev accuracy.")
flags.DEFINE_string("finetune_config", "finetune/small", "Fine-tuning recipe.")
flags.DEFINE_multi_string("finetune_override", [], "Fine-tuning config override "
                          "section.key=value (repeatable), e.g. finetune.train_batch_size=16.")
flags.DEFINE_integer("min_finetune_steps", 100, "Fine-tuning steps at least, for small label "
                     "counts: epochs = max(3, ceil(min_finetune_steps * batch / n)); 3 for all.")
flags.DEFINE_integer("finetune_max_seq_length", 128, "Tokens per fine-tuning example.")
flags.DEFINE_list("objectives", ["electra", "mlm"], "Pretraining objectives to compare: "
                  "electra and/or mlm (the baseline; leave it out to skip it).")
flags.DEFINE_integer("vocab_size", 8000, "Vocabulary size to learn when --data_dir has no "
                     "vocab.txt.")
flags.DEFINE_integer("max_seq_length", 128, "Tokens per pretraining example (the records "
                     "records<L>/ and heldout<L>/ in --data_dir, and run.max_seq_length).")
flags.DEFINE_bool("pretrain_only", False, "Stop after pretraining.")
flags.DEFINE_string("random_from", None, "Another study directory whose no-pretraining trials "
                    "to reuse instead of running them again: it must have the same data_dir, "
                    "pretraining recipe, model overrides and fine-tuning settings (checked).")
flags.DEFINE_string("pretraining_from", None, "Another study directory whose pretraining "
                    "runs to fine-tune instead of pretraining again (a study that varies only "
                    "the fine-tuning): it must have the same data_dir, pretraining recipe, "
                    "overrides, schedule and max_seq_length, and every checkpoint and "
                    "objective asked for (checked).")
flags.DEFINE_bool("keep_finetune_checkpoints", False, "Keep each fine-tuning trial's final "
                  "checkpoint (by default deleted once its results are written).")


def main(argv):
    if len(argv) > 1:
        sys.exit(f"error: unexpected arguments {argv[1:]}; see --help")

    def run():
        # lazy: imported once the flags are parsed, so --help starts no TensorFlow
        from electra_tf.study.runner import run_study

        result = run_study(
            data_dir=FLAGS.data_dir, output_dir=FLAGS.output_dir,
            pretrain_config=FLAGS.pretrain_config, overrides=FLAGS.override,
            checkpoints=FLAGS.checkpoints, schedule_steps=FLAGS.schedule_steps,
            labels=FLAGS.labels, seeds=FLAGS.seeds,
            learning_rates=FLAGS.learning_rates, finetune_config=FLAGS.finetune_config,
            finetune_overrides=FLAGS.finetune_override,
            min_finetune_steps=FLAGS.min_finetune_steps,
            finetune_max_seq_length=FLAGS.finetune_max_seq_length, objectives=FLAGS.objectives,
            vocab_size=FLAGS.vocab_size, max_seq_length=FLAGS.max_seq_length,
            pretrain_only=FLAGS.pretrain_only,
            keep_finetune_checkpoints=FLAGS.keep_finetune_checkpoints,
            random_from=FLAGS.random_from, pretraining_from=FLAGS.pretraining_from)
        print(format_closing(result), flush=True)
        return 0

    return exit_on_user_error(run)


def format_closing(result) -> str:
    """The closing lines: the table and where everything is."""
    lines = []
    if result.status == "preempted":
        lines.append("stopped (SIGTERM): rerun the same command to continue")
    if result.status == "pretrained":
        lines.append("pretrained: " + ", ".join(f"{e.name} ({e.flops:.3g} FLOPs)"
                                                for e in result.encoders))
    if result.table_text:
        lines += [result.table_text, ""]
    lines.append(f"study directory: {result.output_dir}")
    for name, path in (("results", result.results), ("summary", result.summary),
                       ("table", result.table), ("plot", result.plot)):
        if path:
            lines.append(f"{name + ':':16} {path}")
    return "\n".join(lines)


if __name__ == "__main__":
    console.run(main)
