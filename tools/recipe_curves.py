"""Downstream accuracy against pretraining FLOPs for several pretraining recipes, one study each.

    python tools/recipe_curves.py --output docs/images/recipes_vs_flops.png \
        "pretrain/study, lr 2e-3=runs/study_lr2e-3" "pretrain/efficient=runs/efficient"

Each directory is a `python -m electra_tf.study` output (its summary.json, as `write_report`
writes it). Prints a Markdown table, a row per recipe and checkpoint: the median test accuracy
over seeds (min-max) per label count and the gap to no pretraining's median; then, per recipe
and label count, the crossing: the fewest pretraining FLOPs at which the median is above no
pretraining's. Draws one panel per label count: each recipe's medians against FLOPs (whiskers:
min-max over seeds), and each study's own no-pretraining median as a dashed line (once for
studies whose trials are the same).

No pretraining is each study's own random-initialisation trials: a recipe that changes the
architecture (pre-LayerNorm blocks) has a random encoder of its own. A study without them (a
run whose `--random_from` trials were not copied) takes the first other study's.
"""

from __future__ import annotations

import argparse
import json
import math
import os

from electra_tf.training.plot_style import log_axis_labelled

COLOURS = ("tab:blue", "tab:red", "tab:purple", "tab:brown", "tab:orange", "tab:olive",
           "navy", "magenta", "teal", "darkgoldenrod")
RANDOM_COLOURS = ("tab:green", "tab:gray", "tab:cyan", "tab:pink", "black", "gold")


def read_study(directory: str) -> dict:
    with open(os.path.join(directory, "summary.json")) as f:
        return json.load(f)


def pretrained_points(summary: dict, n: str) -> list[tuple[float, dict]]:
    """(FLOPs, test cell) of each pretrained ELECTRA encoder at label count n, by FLOPs."""
    points = [(e["flops"], e["cells"][n]["test"]) for e in summary["encoders"].values()
              if e["objective"] == "electra" and n in e["cells"]
              and e["cells"][n]["test"]["median"] is not None]
    return sorted(points, key=lambda point: point[0])


def own_random_cell(summary: dict, n: str) -> dict | None:
    for encoder in summary["encoders"].values():
        if encoder["objective"] == "none" and n in encoder["cells"]:
            return encoder["cells"][n]["test"]
    return None


def random_cell(summary: dict, summaries: list[dict], n: str) -> dict | None:
    """The no-pretraining test cell `summary`'s recipe is compared with: its own, else the
    first of `summaries` that has one."""
    for candidate in [summary, *summaries]:
        cell = own_random_cell(candidate, n)
        if cell is not None:
            return cell
    return None


def _range(cell: dict) -> str:
    return f"{cell['median']:.1f} ({cell['min']:.1f}-{cell['max']:.1f})"


def crossing(points: list[tuple[float, dict]], baseline: float) -> float | None:
    """The fewest FLOPs whose median is above `baseline` (None: none is)."""
    return next((flops for flops, test in points if test["median"] > baseline), None)


def table(recipes: list[tuple[str, dict]]) -> str:
    if len(recipes) > len(COLOURS):
        raise ValueError(f"at most {len(COLOURS)} recipes in one plot, got {len(recipes)}")
    summaries = [summary for _, summary in recipes]
    counts = [n for n in summaries[0]["label_counts"]
              if all(n in s["label_counts"] for s in summaries)]
    lines = ["| recipe | pretraining FLOPs | " + " | ".join(f"n={n}" for n in counts) + " |",
             "|---|---|" + "---|" * len(counts)]
    crossings = []
    for label, summary in recipes:
        randoms = {n: random_cell(summary, summaries, n) for n in counts}
        lines.append(f"| {label}: no pretraining | 0 | " + " | ".join(
            _range(r) if r else "" for r in randoms.values()) + " |")
        by_flops = {}
        for n in counts:
            for flops, test in pretrained_points(summary, n):
                by_flops.setdefault(flops, {})[n] = test
        for flops, cells in sorted(by_flops.items()):
            row = []
            for n in counts:
                test = cells.get(n)
                gap = (f", {test['median'] - randoms[n]['median']:+.1f}"
                       if test and randoms[n] else "")
                row.append(_range(test) + gap if test else "")
            lines.append(f"| {label} | {flops:.3g} | " + " | ".join(row) + " |")
        for n in counts:
            if randoms[n] is not None:
                found = crossing(pretrained_points(summary, n), randoms[n]["median"])
                crossings.append(f"- {label}, n={n}: "
                                 + (f"{found:.3g} FLOPs" if found else "not within this study"))
    return "\n".join(lines + ["", "Crossing (fewest FLOPs with the median above no "
                                   "pretraining's median):", "", *crossings])


def figure(recipes: list[tuple[str, dict]]):
    """A matplotlib Figure: a panel per label count, a line per recipe, the legend below."""
    from matplotlib.figure import Figure

    if len(recipes) > len(COLOURS):
        raise ValueError(f"at most {len(COLOURS)} recipes in one plot, got {len(recipes)}")
    summaries = [summary for _, summary in recipes]
    counts = [n for n in summaries[0]["label_counts"]
              if all(n in s["label_counts"] for s in summaries)]
    columns = min(len(counts), 3)
    rows = math.ceil(len(counts) / columns)
    fig = Figure(figsize=(max(4.6 * columns, 8.4), 3.6 * rows + 0.9), layout="constrained")
    axes = fig.subplots(rows, columns, squeeze=False).ravel()
    for ax, n in zip(axes, counts):
        drawn = []  # studies that share --random_from trials have the same: drawn once
        for (label, summary), colour in zip(recipes, RANDOM_COLOURS):
            random = own_random_cell(summary, n)
            if random is not None and random not in drawn:
                drawn.append(random)
                ax.axhline(random["median"], color=colour, linestyle="--",
                           label=f"{label}: no pretraining")
        for index, ((label, summary), colour) in enumerate(zip(recipes, COLOURS)):
            points = pretrained_points(summary, n)
            if not points:
                continue
            medians = [test["median"] for _, test in points]
            # recipes measured at the same FLOPs side by side, 2% apart, so whiskers stay apart
            dodge = 1 + 0.02 * (index - (len(recipes) - 1) / 2)
            ax.errorbar([flops * dodge for flops, _ in points], medians, color=colour, marker="o",
                        capsize=3, label=label,
                        yerr=[[m - t["min"] for m, (_, t) in zip(medians, points)],
                              [t["max"] - m for m, (_, t) in zip(medians, points)]])
        log_axis_labelled(ax)
        ax.set_title(f"n={n} training examples")
        ax.set_xlabel("pretraining FLOPs")
        ax.set_ylabel("test accuracy (%)")
        ax.grid(True, alpha=0.3)
    for ax in axes[len(counts):]:
        ax.set_visible(False)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=2)
    fig.suptitle("ELECTRA fine-tuned after each pretraining recipe (median over seeds, "
                 "min-max)")
    return fig


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("studies", nargs="+", help="label=study output directory")
    parser.add_argument("--output", help="PNG of accuracy against FLOPs")
    args = parser.parse_args(argv)
    recipes = []
    for spec in args.studies:
        label, sep, directory = spec.partition("=")
        if not sep:
            parser.error(f"{spec!r} is not label=directory")
        recipes.append((label, read_study(directory)))
    print(table(recipes))
    if args.output:
        figure(recipes).savefig(args.output, dpi=110)
        print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
