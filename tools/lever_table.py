"""Compares study runs that differ in one lever: the table and plot of docs/pretraining_value.md.

    python tools/lever_table.py --output docs/images/study_levers.png \
        "recipe=runs/levers/base" "lr 2e-3=runs/levers/lr2e-3" ...

Each directory is a `python -m electra_tf.study` output with one pretrained encoder and the
random encoder of the same architecture. Prints a Markdown table of test accuracy (median and
min-max over seeds) and the gap of the pretrained encoder's median to the random one's, per
label count, and draws the gaps as bars (whiskers: the pretrained seeds' min-max minus the
random median).
"""

import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from electra_tf.study.plan import format_lr  # noqa: E402


def _read(directory):
    with open(os.path.join(directory, "summary.json")) as f:
        summary = json.load(f)
    encoders = summary["encoders"]
    pretrained = next(e for name, e in encoders.items() if name != "random")
    return summary["label_counts"], encoders["random"], pretrained


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="label=study output directory")
    parser.add_argument("--output", help="PNG of the gaps")
    args = parser.parse_args()
    rows, gaps = [], {}
    for spec in args.runs:
        label, directory = spec.split("=", 1)
        counts, random, pretrained = _read(directory)
        cells = []
        for n in counts:
            ours, base = pretrained["cells"][n], random["cells"][n]["test"]["median"]
            test = ours["test"]
            gap = test["median"] - base
            gaps.setdefault(n, []).append((label, gap, test["min"] - base, test["max"] - base))
            cells.append(f"{test['median']:.1f} ({test['min']:.1f}-{test['max']:.1f}) "
                         f"lr {format_lr(ours['lr'])}, gap {gap:+.1f} (random {base:.1f})")
        rows.append(f"| {label} | {pretrained['flops']:.3g} | " + " | ".join(cells) + " |")
    print("| pretraining | FLOPs | " + " | ".join(f"n={n}" for n in counts) + " |")
    print("|---|---|" + "---|" * len(counts))
    print("\n".join(rows))
    if args.output:
        figure, axes = plt.subplots(1, len(gaps), figsize=(5 * len(gaps), 3.6), sharey=True)
        for axis, (n, values) in zip(axes, gaps.items()):
            labels = [v[0] for v in values]
            medians = [v[1] for v in values]
            errors = [[v[1] - v[2] for v in values], [v[3] - v[1] for v in values]]
            axis.bar(labels, medians, yerr=errors, capsize=4, color="#4c72b0")
            axis.axhline(0, color="black", linewidth=0.8)
            axis.set_title(f"{n} labels")
            axis.tick_params(axis="x", rotation=20)
        axes[0].set_ylabel("test accuracy - no pretraining (points)")
        figure.tight_layout()
        figure.savefig(args.output, dpi=110)


if __name__ == "__main__":
    main()
