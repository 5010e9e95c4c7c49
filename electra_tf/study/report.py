"""The study's report, from results.jsonl alone (so a study still running, or interrupted, can
be reported): summary.json, table.md (test accuracy per encoder and label count) and
accuracy_vs_flops.png (downstream accuracy against pretraining FLOPs, one panel per label count).

    from electra_tf.study import write_report
    paths = write_report("runs/study")     # {"summary": ..., "table": ..., "plot": ...}
"""

from __future__ import annotations

import json
import math
import os

from absl import logging

from electra_tf.study import plan, results as results_lib
from electra_tf.training.plot_style import log_axis_labelled

SUMMARY_FILE = "summary.json"
TABLE_FILE = "table.md"
PLOT_FILE = "accuracy_vs_flops.png"
LINE_STYLES = {"electra": ("ELECTRA", "tab:blue", "o"), "mlm": ("MLM baseline", "tab:orange", "s")}


def _cell(values: dict) -> str:
    if values["median"] is None:
        return "diverged"
    text = f"{values['median']:.1f} ({values['min']:.1f}-{values['max']:.1f})"
    return text + (f", {values['diverged']} diverged" if values.get("diverged") else "")


def _chosen_cell(cell: dict) -> str:
    return f"{_cell(cell['test'])} lr {plan.format_lr(cell['lr'])}"


def _column_title(n: str, sizes: dict) -> str:
    if n == plan.ALL:
        return f"all ({sizes['train_examples']:,})"
    return f"n={int(n):,}"


def format_table(summary: dict) -> str:
    """Markdown: a row per encoder (with its pretraining FLOPs), a column per label count; a
    cell is the median test accuracy over seeds, (min-max), and the chosen learning rate."""
    counts = summary["label_counts"]
    seeds = max((len(c["seeds"]) for e in summary["encoders"].values()
                 for c in e["cells"].values()), default=0)
    lines = [f"Test accuracy (%): median over {seeds} seed(s) (min-max) at the learning rate "
             "with the best seed-0 dev accuracy", "",
             "| encoder | pretraining FLOPs | "
             + " | ".join(_column_title(n, summary["sizes"][n]) for n in counts) + " |",
             "|---|---|" + "---|" * len(counts)]
    for name, encoder in summary["encoders"].items():
        title = "no pretraining" if encoder["objective"] == "none" else name
        flops = "0" if encoder["objective"] == "none" else f"{encoder['flops']:.3g}"
        cells = [_chosen_cell(encoder["cells"][n]) if n in encoder["cells"] else ""
                 for n in counts]
        lines.append(f"| {title} | {flops} | " + " | ".join(cells) + " |")
    lines.append("| majority class | | "
                 + " | ".join(_cell(summary["majority"][n]["test"]) for n in counts) + " |")
    lines += ["", "Fine-tuning epochs: " + ", ".join(
        f"{_column_title(n, summary['sizes'][n])}: {summary['sizes'][n]['epochs']}"
        for n in counts) + f"; {summary['trials']} trials."]
    trends = gap_trends(summary)
    if trends:
        lines += ["", "Gap to no pretraining (median minus median, test points), fitted as a "
                  "line in log FLOPs:", ""]
        lines += [f"- {_format_trend(t)}" for t in trends]
    return "\n".join(lines)


def gap_trends(summary: dict) -> list[dict]:
    """Per pretraining objective and label count with two or more checkpoints: the gap between
    its median test accuracy and the random initialisation's at each checkpoint, the least-
    squares line gap = a + b ln(FLOPs), its change per doubling of FLOPs (b ln 2) and, when the
    line rises towards zero from below, the FLOPs where it reaches zero (an extrapolation)."""
    random_cells = next((e["cells"] for e in summary["encoders"].values()
                         if e["objective"] == "none"), None)
    if random_cells is None:
        return []
    trends = []
    for objective in LINE_STYLES:
        for n in summary["label_counts"]:
            if n not in random_cells or random_cells[n]["test"]["median"] is None:
                continue
            baseline = random_cells[n]["test"]["median"]
            points = sorted((e["flops"], e["cells"][n]["test"]["median"] - baseline)
                            for e in summary["encoders"].values()
                            if e["objective"] == objective and n in e["cells"]
                            and e["cells"][n]["test"]["median"] is not None)
            if len(points) < 2:
                continue
            xs = [math.log(f) for f, _ in points]
            ys = [g for _, g in points]
            mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
            slope = (sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys))
                     / sum((x - mean_x) ** 2 for x in xs))
            intercept = mean_y - slope * mean_x
            crossing = None
            if ys[-1] < 0 < slope:
                crossing = math.exp(-intercept / slope)
            trends.append({"objective": objective, "n": n, "flops": [f for f, _ in points],
                           "gaps": ys, "per_doubling": slope * math.log(2),
                           "crossing_flops": crossing})
    return trends


def _format_trend(trend: dict) -> str:
    label = LINE_STYLES[trend["objective"]][0]
    n = trend["n"] if trend["n"] == plan.ALL else f"n={int(trend['n']):,}"
    gaps = ", ".join(f"{g:+.1f}" for g in trend["gaps"])
    text = (f"{label}, {n}: {gaps} at {', '.join(f'{f:.3g}' for f in trend['flops'])} FLOPs; "
            f"{trend['per_doubling']:+.2f} points per doubling")
    if trend["crossing_flops"]:
        factor = trend["crossing_flops"] / trend["flops"][-1]
        text += (f"; the line reaches 0 at {trend['crossing_flops']:.3g} FLOPs ({factor:.3g}x "
                 "the largest budget)")
    elif trend["gaps"][-1] >= 0:
        text += "; ahead at the largest budget"
    else:
        text += "; not closing"
    return text


def plot(summary: dict, path: str) -> str | None:
    """accuracy_vs_flops.png; None (with a warning) without matplotlib or without results."""
    try:
        # Imported here, not at the top: the study runs and writes its table without matplotlib,
        # and importing the package stays free of it.
        import matplotlib  # noqa: F401
    except ImportError as e:
        logging.warning("matplotlib cannot be imported (%s): not drawing %s", e, path)
        return None
    if not summary["label_counts"]:
        logging.warning("no finished trials yet: not drawing %s", path)
        return None
    accuracy_figure(summary).savefig(path, dpi=110)
    return path


def accuracy_figure(summary: dict):
    """The matplotlib Figure of accuracy against FLOPs: a panel per label count, the legend
    below them. A Figure of its own draws with the Agg backend and leaves pyplot's backend,
    and a notebook's figures, as they are."""
    from matplotlib.figure import Figure

    counts = summary["label_counts"]
    columns = min(len(counts), 4)
    rows = math.ceil(len(counts) / columns)
    # wide enough for the title and a legend of two rows at most, even with one panel
    figure = Figure(figsize=(max(4.2 * columns, 8.4), 3.6 * rows + 0.6), layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    for ax, n in zip(axes, counts):
        _draw_panel(ax, summary, n)
    for ax in axes[len(counts):]:
        ax.set_visible(False)
    handles, labels = axes[0].get_legend_handles_labels()
    if handles:
        figure.legend(handles, labels, loc="outside lower center",
                      ncol=min(len(handles), 3 if columns == 1 else len(handles)))
    figure.suptitle("Downstream test accuracy against pretraining FLOPs "
                    "(median over seeds, min-max)")
    return figure


def _draw_panel(ax, summary: dict, n: str) -> None:
    lines = {objective: [] for objective in LINE_STYLES}
    for encoder in summary["encoders"].values():
        cell = encoder["cells"].get(n)
        if cell is None:
            continue
        test = cell["test"]
        if test["median"] is None:  # every seed diverged
            continue
        if encoder["objective"] == "none":
            ax.axhline(test["median"], color="tab:green", label="no pretraining")
            ax.axhspan(test["min"], test["max"], color="tab:green", alpha=0.15)
        elif encoder["objective"] in lines:
            lines[encoder["objective"]].append((encoder["flops"], test))
    for objective, points in lines.items():
        if not points:
            continue
        points.sort(key=lambda p: p[0])
        label, color, marker = LINE_STYLES[objective]
        medians = [t["median"] for _, t in points]
        ax.errorbar([f for f, _ in points], medians, color=color, marker=marker, capsize=3,
                    label=label, yerr=[[m - t["min"] for m, (_, t) in zip(medians, points)],
                                       [t["max"] - m for m, (_, t) in zip(medians, points)]])
    if any(lines.values()):
        log_axis_labelled(ax)
    ax.axhline(summary["majority"][n]["test"]["median"], color="gray", linestyle="--",
               label="majority class")
    ax.set_title(_column_title(n, summary["sizes"][n]) + " training examples")
    ax.set_xlabel("pretraining FLOPs")
    ax.set_ylabel("test accuracy (%)")
    ax.grid(True, alpha=0.3)


def write_report(output_dir: str) -> dict[str, str | None]:
    """Writes summary.json, table.md and accuracy_vs_flops.png into `output_dir` from its
    results.jsonl; returns their paths (plot None without matplotlib) and the table text."""
    records = results_lib.read_records(output_dir)
    if not records:
        raise plan.StudyError(f"{results_lib.results_path(output_dir)} holds no finished trial")
    summary = results_lib.summarize(records)
    summary["trends"] = gap_trends(summary)
    summary_path = os.path.join(output_dir, SUMMARY_FILE)
    with open(summary_path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
    os.replace(summary_path + ".tmp", summary_path)
    table = format_table(summary)
    table_path = os.path.join(output_dir, TABLE_FILE)
    with open(table_path, "w", encoding="utf-8") as f:
        f.write(table + "\n")
    return {"summary": summary_path, "table": table_path,
            "plot": plot(summary, os.path.join(output_dir, PLOT_FILE)), "text": table}
