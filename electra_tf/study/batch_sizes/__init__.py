r"""Batch size and learning rate, measured: `python -m electra_tf.study.batch_sizes [flags]`.

  python -m electra_tf.study.batch_sizes --output_dir runs/batch_sizes

Pretrains one recipe (default pretrain/mini, on the embedded demonstration corpus) for the same
number of sequences at several global batch sizes, each made of micro-batches of the recipe's
batch through gradient accumulation (so every run needs the memory of the smallest), and at
each larger batch with AdamW and with LAMB (You et al. 2019), each at the learning rate scaled
linearly with the batch (lr x B / B0) and by its square root (lr x sqrt(B / B0), LAMB's rule).
Warmup is the same share of the sequences in every run. The discriminator's held-out AUC on
the same held-out sequences is measured six times along each run, with the generator's MLM
accuracy (the AUC is against that run's own generator: a weaker one makes easier replacements).
Writes into --output_dir:
  results.jsonl        one line per run: variant, batch, accumulation, lr, both along the run
  table.md             the held-out AUC half way and at the end, the generator's accuracy
  auc_vs_sequences.png both against sequences seen, one line per run
Rerun the same command after an interruption: finished runs are not redone, the one that
stopped resumes from its checkpoint.

This package holds the guide's pieces (`run_batch_sizes`, `write_report`); its `__main__` is the
command. Nothing here imports TensorFlow until a run starts.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os

from electra_tf.errors import UserError
from electra_tf.training.plot_style import series_colours

EVALUATIONS = 6  # held-out evaluations along each run
RESULTS = "results.jsonl"
# What each run's record keeps of its held-out evaluations: the discriminator's AUC, and the
# generator's MLM accuracy, which says how hard the replacements it was judged on were.
HELD_OUT_TAGS = {"auc": "disc_auc", "mlm_accuracy": "mlm_accuracy"}


@dataclasses.dataclass(frozen=True)
class Variant:
    """One run: a global batch made of `accumulation` micro-batches, its optimizer and rate."""

    name: str
    batch: int
    accumulation: int
    optimizer: str
    learning_rate: float
    rule: str  # "recipe", "linear" or "sqrt"

    @property
    def key(self) -> str:
        return f"b{self.batch}_{self.optimizer}_{self.rule}"


def plan_variants(base_batch: int, base_lr: float, batches: list[int]) -> list[Variant]:
    """The recipe's batch as it is, then every larger batch with AdamW and with LAMB, each at
    the linearly and at the square-root scaled rate."""
    variants = [Variant(f"B{base_batch} AdamW", base_batch, 1, "adamw", base_lr, "recipe")]
    for batch in batches:
        if batch == base_batch:
            continue
        if batch % base_batch:
            raise UserError(f"--batches: {batch} is not a multiple of the recipe's batch "
                            f"{base_batch} (each batch is micro-batches of {base_batch})")
        scale = batch / base_batch
        rates = {"linear": (base_lr * scale, f"x{scale:g}"),
                 "sqrt": (base_lr * math.sqrt(scale), f"x sqrt({scale:g})")}
        for optimizer in ("adamw", "lamb"):
            for rule, (rate, factor) in rates.items():
                label = "AdamW" if optimizer == "adamw" else "LAMB"
                variants.append(Variant(f"B{batch} {label} lr {factor}", batch,
                                        batch // base_batch, optimizer, float(f"{rate:.4g}"),
                                        rule))
    return variants


def _run_overrides(variant: Variant, sequences: int, warmup_share: float,
                   held_out_sequences: int) -> list[str]:
    updates = sequences // variant.batch
    return [f"run.train_batch_size={variant.batch}",
            f"run.gradient_accumulation_steps={variant.accumulation}",
            f"optimizer.name={variant.optimizer}",
            f"optimizer.learning_rate={variant.learning_rate}",
            f"optimizer.train_steps={updates}",
            f"optimizer.warmup_steps={max(1, round(warmup_share * updates))}",
            f"run.eval_every_steps={updates // EVALUATIONS}",
            f"run.save_checkpoints_steps={max(1, updates // EVALUATIONS)}",
            f"run.log_every_steps={max(1, updates // 24)}",
            # the same held-out sequences for every batch: micro-batches of the recipe's batch
            f"run.eval_batches={held_out_sequences // (variant.batch // variant.accumulation)}"]


def read_results(output_dir: str) -> dict[str, dict]:
    path = os.path.join(output_dir, RESULTS)
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return {record["key"]: record for record in map(json.loads, f)}


def run_batch_sizes(*, output_dir: str, config: str = "pretrain/mini", sequences: int = 49152,
                    batches: tuple[int, ...] = (128, 512), warmup_share: float = 0.05,
                    held_out_sequences: int = 224, seed: int = 0) -> dict[str, dict]:
    """Runs every variant not in output_dir's results yet; returns the results by key."""
    # lazy: TensorFlow loads once the flags are parsed
    import tensorflow as tf
    from absl import logging

    from electra_tf import run_directory
    from electra_tf.config import load_config
    from electra_tf.training.callbacks import read_scalars
    from electra_tf.training.pretrain import prepare_demo_data, pretrain

    recipe = load_config(config)
    base_batch, base_lr = recipe.run.train_batch_size, recipe.optimizer.learning_rate
    largest = max([base_batch, *batches])
    if sequences % largest or (sequences // largest) % EVALUATIONS:
        raise UserError(f"--sequences {sequences} must be a multiple of {EVALUATIONS} x the "
                        f"largest batch ({EVALUATIONS * largest}): every run evaluates "
                        f"{EVALUATIONS} times at whole updates")
    if held_out_sequences % base_batch:
        raise UserError(f"--held_out_sequences {held_out_sequences} must be a multiple of the "
                        f"recipe's batch {base_batch} (the held-out micro-batch)")
    os.makedirs(output_dir, exist_ok=True)
    data, held_out, vocab = prepare_demo_data(os.path.join(output_dir, "shared"))
    available = sum(1 for _ in tf.data.TFRecordDataset(tf.io.gfile.glob(held_out)))
    if available < held_out_sequences:
        raise UserError(f"--held_out_sequences {held_out_sequences}: the held-out records hold "
                        f"{available}; every run must be evaluated on the same sequences")
    done = read_results(output_dir)
    variants = plan_variants(base_batch, base_lr, list(batches))
    for index, variant in enumerate(variants, 1):
        if variant.key in done:
            continue
        logging.info("[%d/%d] %s: batch %d (%d x %d), %s lr %g, %d updates", index,
                     len(variants), variant.name, variant.batch, variant.accumulation,
                     base_batch, variant.optimizer, variant.learning_rate,
                     sequences // variant.batch)
        overrides = _run_overrides(variant, sequences, warmup_share, held_out_sequences)
        result = pretrain(config=config, data=data, eval_data=held_out, vocab_file=vocab,
                          model_dir=os.path.join(output_dir, variant.key),
                          overrides=overrides + [f"objective.seed={seed}"], export=False)
        if result.status != "finished":
            logging.info("stopped during %s: rerun the same command to continue", variant.name)
            return done
        # From the run's events, not the result: a run finished by an earlier call has them too.
        scalars = read_scalars(os.path.join(run_directory.tensorboard_dir(result.model_dir),
                                            "heldout"))
        record = dict(dataclasses.asdict(variant), key=variant.key, sequences=sequences,
                      updates=sequences // variant.batch,
                      **{name: [(step * variant.batch, value) for step, value in
                                zip(*scalars[tag])] for name, tag in HELD_OUT_TAGS.items()})
        with open(os.path.join(output_dir, RESULTS), "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
        done[variant.key] = record
    return done


def format_table(records: list[dict]) -> str:
    lines = ["| run | global batch | micro-batches | optimizer | lr | updates | held-out AUC "
             "half way | held-out AUC at the end | generator's MLM accuracy at the end |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        half = r["auc"][len(r["auc"]) // 2 - 1][1]
        lines.append(f"| {r['name']} | {r['batch']} | {r['accumulation']} | "
                     f"{'AdamW' if r['optimizer'] == 'adamw' else 'LAMB'} | "
                     f"{r['learning_rate']:g} | {r['updates']} | {half:.3f} | "
                     f"**{r['auc'][-1][1]:.3f}** | {r['mlm_accuracy'][-1][1]:.3f} |")
    return "\n".join(lines)


def plot(records: list[dict], path: str) -> str | None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return None
    auc_figure(records).savefig(path, dpi=110)
    return path


def auc_figure(records: list[dict]):
    """The matplotlib Figure of held-out AUC and MLM accuracy against sequences seen: a colour
    per run, the line style its learning-rate rule, the marker its optimizer; the legend beside
    the panels, not over the curves."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(13, 4.5), layout="constrained")
    axes = figure.subplots(1, 2)
    for r, colour in zip(records, series_colours(len(records))):
        style = {"recipe": "-", "linear": "--", "sqrt": ":"}[r["rule"]]
        marker = "o" if r["optimizer"] == "adamw" else "s"
        for ax, name in zip(axes, ("auc", "mlm_accuracy")):
            ax.plot([s for s, _ in r[name]], [v for _, v in r[name]], style, marker=marker,
                    color=colour, label=f"{r['name']} ({r['learning_rate']:g})")
    for ax, label in zip(axes, ("held-out discriminator AUC", "held-out generator MLM accuracy")):
        ax.set_xlabel("sequences seen")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside right upper", fontsize=8)
    return figure


def write_report(output_dir: str) -> tuple[str, str | None]:
    """table.md and auc_vs_sequences.png from results.jsonl; returns (table text, plot)."""
    records = sorted(read_results(output_dir).values(), key=lambda r: (r["batch"], r["key"]))
    table = format_table(records)
    with open(os.path.join(output_dir, "table.md"), "w", encoding="utf-8") as f:
        f.write(table + "\n")
    return table, plot(records, os.path.join(output_dir, "auc_vs_sequences.png"))
