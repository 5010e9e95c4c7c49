"""How widely do few-label fine-tuning trials spread, and what narrows it? The no-flags
demonstration's coherence task (its 1,649 dev pairs) with N training pairs per trial (a subset
drawn per seed), fine-tuned with `finetune/default` from the demonstration's ELECTRA encoder
under each variant, and from no pretraining, one trial per seed:

    python -m electra_tf.run_pretraining          # runs/electra_demo, if not there yet
    python tools/few_label_stability.py --seeds 20 --labels 100 --output_dir runs/stability

Variants: the default recipe (no Adam bias correction, as the original), with bias correction
(`optimizer.bias_correction=true`), with the top block re-initialised
(`finetune.reinit_top_layers=1`), both. Prints a line per trial and, per variant, the dev
accuracy's median, min-max and interquartile range; results.jsonl in output_dir lets an
interrupted run continue where it stopped.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys

VARIANTS = {
    "default": [],
    "bias correction": ["optimizer.bias_correction=true"],
    "top block re-initialised": ["finetune.reinit_top_layers=1"],
    "both": ["optimizer.bias_correction=true", "finetune.reinit_top_layers=1"],
    "no pretraining": [],
}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", default="runs/electra_demo", help="the pretraining run")
    parser.add_argument("--labels", type=int, default=100, help="training pairs per trial")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--output_dir", default="runs/stability")
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help="comma-separated, of: " + ", ".join(VARIANTS))
    args = parser.parse_args(argv)

    from electra_tf.cpu_tuning import tune_cpu
    tune_cpu()
    from electra_tf import run_directory
    from electra_tf.finetuning import demo, runner
    from electra_tf.finetuning.api import resolve_finetune_config
    from electra_tf.finetuning.source import resolve_source
    from electra_tf.study.plan import training_subset

    source = resolve_source(args.run)
    task = demo.coherence_task(run_directory.demo_data_dir(args.run))
    vocab = os.path.join(run_directory.demo_data_dir(args.run), run_directory.VOCAB)
    os.makedirs(args.output_dir, exist_ok=True)
    results_path = os.path.join(args.output_dir, "results.jsonl")
    done = {}
    if os.path.exists(results_path):
        for line in open(results_path):
            record = json.loads(line)
            done[(record["variant"], record["seed"])] = record
    for variant in args.variants.split(","):
        for seed in range(args.seeds):
            if (variant, seed) in done:
                continue
            overrides = [f"finetune.vocab_file={vocab}", f"finetune.seed={seed}",
                         "finetune.eval_every_steps=1000000", *VARIANTS[variant]]
            config = resolve_finetune_config(source, overrides=overrides)
            subset = training_subset(task.train, args.labels, seed)
            trial_dir = os.path.join(args.output_dir, variant.replace(" ", "_"), f"seed{seed}")
            report = runner.run_trials(
                dataclasses.replace(task, train=subset), config, trial_dir,
                source=None if variant == "no pretraining" else source, export=False)
            trial = report["trial_results"][0]
            record = {"variant": variant, "seed": seed, "labels": args.labels,
                      "dev": trial["dev"]["dev"]["last"][trial["headline"]],
                      "steps": trial["steps"]}
            with open(results_path, "a") as f:
                f.write(json.dumps(record) + "\n")
            done[(variant, seed)] = record
            print(json.dumps(record), flush=True)
    for variant in args.variants.split(","):
        values = sorted(r["dev"] for (v, _), r in done.items() if v == variant)
        if not values:
            continue
        quartiles = statistics.quantiles(values, n=4) if len(values) > 1 else values * 3
        print(f"{variant}: {len(values)} seeds, dev accuracy median "
              f"{statistics.median(values):.1f}, min-max {values[0]:.1f}-{values[-1]:.1f}, "
              f"interquartile {quartiles[0]:.1f}-{quartiles[2]:.1f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
