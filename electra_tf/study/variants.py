"""Pretraining variants against plain ELECTRA, measured on the demonstration.

    python -m electra_tf.study.variants --output_dir runs/variants

Pretrains the demonstration's model on its corpus (`pretrain/demo`, the same steps and so the
same FLOPs) once per variant, then fine-tunes every discriminator, and the same encoder from its
random initialisation, on the demonstration task (coherence of two lines; `finetune/demo`,
`--trials` seeds each), and prints a table: the held-out discriminator AUC at the end of
pretraining (on held-out text masked as the variant masks) and the dev accuracy's median (min -
max). Variants (`--variants`):

- `electra`: plain ELECTRA, the original's masking and tied embeddings;
- `whole_word`, `span`: `objective.masking` whole_word / span;
- `gdes`: `model.embedding_sharing` gdes.

Rerunning with the same `--output_dir` resumes: finished pretraining runs are kept and finished
fine-tuning rows are read from results.jsonl. The table goes to results.md as well.
"""

from __future__ import annotations

import json
import os
import statistics
import sys

from absl import flags

from electra_tf import console

console.setup(__name__)  # first: TensorFlow reads its C++ log level when it loads

VARIANTS = {
    "electra": [],
    "whole_word": ["objective.masking=whole_word"],
    "span": ["objective.masking=span"],
    "gdes": ["model.embedding_sharing=gdes"],
}
NO_PRETRAINING = "no pretraining"

FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", "runs/variants", "Where the runs, results.jsonl and "
                    "results.md go. Rerunning with the same directory resumes.")
flags.DEFINE_list("variants", list(VARIANTS), f"Variants to pretrain: {', '.join(VARIANTS)}.")
flags.DEFINE_integer("train_steps", None, "Pretraining steps of every variant (default: the "
                     "pretrain/demo recipe's).")
flags.DEFINE_integer("trials", 3, "Fine-tuning seeds per encoder.")
flags.DEFINE_integer("train_pairs", None, "Fine-tune on the first N training pairs only "
                     "(default: the demonstration's).")
flags.DEFINE_multi_string("override", [], "Pretraining config override section.key=value for "
                          "every variant (repeatable).")


def _result_rows(path: str) -> dict[str, dict]:
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return {row["name"]: row for row in map(json.loads, f) if row}


def _pretrain(name: str, data: tuple[str, str, str]) -> dict:
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf import run_directory
    from electra_tf.training.callbacks import read_scalars
    from electra_tf.training.pretrain import pretrain

    train, held_out, vocab_file = data
    model_dir = os.path.join(FLAGS.output_dir, name)
    result = pretrain(config="pretrain/demo", data=train, eval_data=held_out,
                      vocab_file=vocab_file, model_dir=model_dir, train_steps=FLAGS.train_steps,
                      overrides=[*FLAGS.override, *VARIANTS[name]], export=False)
    # the last held-out evaluation, from the run's events (a finished run evaluates no more)
    scalars = read_scalars(os.path.join(run_directory.tensorboard_dir(model_dir), "heldout"))
    last = {name: values[-1] for name, (_, values) in scalars.items() if values}
    return {"steps": result.step, "held_out_disc_auc": last.get("disc_auc"),
            "held_out_mlm_accuracy": last.get("mlm_accuracy")}


def _finetune(name: str, source_dir: str, random_init: bool) -> dict:
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    import dataclasses

    from electra_tf import run_directory
    from electra_tf.finetuning import demo, runner
    from electra_tf.finetuning.api import resolve_finetune_config
    from electra_tf.finetuning.source import resolve_source

    source = resolve_source(source_dir)
    task = demo.coherence_task(run_directory.demo_data_dir(FLAGS.output_dir))
    if FLAGS.train_pairs:
        task = dataclasses.replace(task, train=task.train[:FLAGS.train_pairs])
    config = resolve_finetune_config(source, "finetune/demo",
                                     [f"finetune.vocab_file={source.vocab_file}"])
    report = runner.run_trials(task, config, os.path.join(FLAGS.output_dir, "finetune",
                                                          name.replace(" ", "_")),
                               source=None if random_init else source, num_trials=FLAGS.trials,
                               export=False)
    values = report["dev"]["dev"]["values"]
    return {"median": statistics.median(values), "values": values}


def format_table(rows: list[dict]) -> str:
    lines = ["| encoder | pretraining steps | held-out disc AUC | held-out MLM accuracy | "
             "dev accuracy, median (min - max) |", "|---|---|---|---|---|"]
    for row in rows:
        auc, mlm = (f"{row[key]:.3f}" if row.get(key) is not None else "-"
                    for key in ("held_out_disc_auc", "held_out_mlm_accuracy"))
        values = row["values"]  # percentages
        lines.append(f"| {row['name']} | {row.get('steps') or 0:,} | {auc} | {mlm} | "
                     f"{row['median']:.1f} ({min(values):.1f} - {max(values):.1f}) |")
    return "\n".join(lines)


def main(argv):
    if len(argv) > 1:
        sys.exit(f"error: unexpected arguments {argv[1:]}; see --help")
    unknown = [name for name in FLAGS.variants if name not in VARIANTS]
    if unknown:
        sys.exit(f"error: unknown variants {', '.join(unknown)} (known: {', '.join(VARIANTS)})")
    # lazy: imported once the flags are parsed, so --help starts no TensorFlow
    from electra_tf.training.pretrain import prepare_demo_data

    os.makedirs(FLAGS.output_dir, exist_ok=True)
    results_path = os.path.join(FLAGS.output_dir, "results.jsonl")
    done = _result_rows(results_path)
    data = prepare_demo_data(FLAGS.output_dir)
    for name in [*FLAGS.variants, NO_PRETRAINING]:
        if name in done:
            continue
        if name == NO_PRETRAINING:
            source = os.path.join(FLAGS.output_dir, FLAGS.variants[0])
            row = {"name": name, **_finetune(name, source, random_init=True)}
        else:
            row = {"name": name, **_pretrain(name, data)}
            row.update(_finetune(name, os.path.join(FLAGS.output_dir, name), random_init=False))
        done[name] = row
        with open(results_path, "a") as f:
            f.write(json.dumps(row) + "\n")
        print(f"{name}: {row}", flush=True)
    table = format_table([done[name] for name in [*FLAGS.variants, NO_PRETRAINING]])
    with open(os.path.join(FLAGS.output_dir, "results.md"), "w") as f:
        f.write(table + "\n")
    print(table, flush=True)


if __name__ == "__main__":
    console.run(main)
