"""results.jsonl, the study's record of finished trials (one JSON object a line), and the rules
that turn its lines into numbers: the learning-rate choice and the summary per encoder and
label count.

A line: encoder ("electra@2000", "mlm@2634", "random"), objective ("electra", "mlm", "none"),
pretraining_step, flops (pretraining FLOPs), n (label count, or "all"), train_examples, lr,
seed, dev and test (accuracy x100, at the trial's end; None when the loss became non-finite,
with diverged true), majority_dev and majority_test (the
majority class of the trial's training subset), epochs, steps, seconds, directory.
"""

from __future__ import annotations

import json
import os
import statistics

from electra_tf.study import plan

RESULTS_FILE = "results.jsonl"


def results_path(output_dir: str) -> str:
    return os.path.join(output_dir, RESULTS_FILE)


def read_records(output_dir: str) -> list[dict]:
    """The lines of results.jsonl in order; a line cut short by an interruption is skipped."""
    path = results_path(output_dir)
    if not os.path.exists(path):
        return []
    records = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return records


def read_results(output_dir: str) -> dict[tuple, dict]:
    """{trial key: record}; a trial recorded twice keeps its last line."""
    return {plan.trial_key(r["encoder"], r["n"], r["lr"], r["seed"]): r
            for r in read_records(output_dir)}


def append_result(output_dir: str, record: dict) -> None:
    """Appends one line and syncs it to disk, so an interruption loses at most this line."""
    path = results_path(output_dir)
    with open(path, "a+", encoding="utf-8") as f:
        f.seek(0, os.SEEK_END)
        if f.tell():  # a line cut short by an interruption must not swallow this one
            f.seek(f.tell() - 1)
            if f.read(1) != "\n":
                f.write("\n")
        f.write(json.dumps(record) + "\n")
        f.flush()
        os.fsync(f.fileno())


def choose_learning_rate(seed_zero: list[dict]) -> float | None:
    """The learning rate of the best dev accuracy among seed 0's trials (the first on a tie;
    diverged trials, dev None, left out); None when all diverged."""
    finite = [r for r in seed_zero if r["dev"] is not None]
    return max(finite, key=lambda r: r["dev"])["lr"] if finite else None


def _spread(values: list) -> dict:
    """Median, min, max and sample standard deviation (None for fewer than two) of the values
    that are not None (diverged trials), and their count."""
    kept = [v for v in values if v is not None]
    if not kept:
        return {"values": values, "median": None, "min": None, "max": None, "std": None,
                "diverged": len(values)}
    return {"values": values, "median": statistics.median(kept), "min": min(kept),
            "max": max(kept), "std": statistics.stdev(kept) if len(kept) > 1 else None,
            "diverged": len(values) - len(kept)}


def summarize(records: list[dict]) -> dict:
    """Per encoder and label count: the chosen learning rate and the dev and test accuracy of
    its seeds (median, min, max, standard deviation); per label count: the majority class.
    Works on any subset of the grid's lines (a study still running): a cell needs only its
    seed-0 lines."""
    trials = read_unique(records)
    encoders: dict[str, dict] = {}
    majority: dict[str, dict] = {}
    sizes: dict[str, dict] = {}
    for r in trials:
        sizes.setdefault(str(r["n"]), {"train_examples": r["train_examples"],
                                       "epochs": r["epochs"]})
        encoders.setdefault(r["encoder"], {"objective": r["objective"],
                                           "pretraining_step": r["pretraining_step"],
                                           "flops": r["flops"], "cells": {}})
        majority.setdefault(str(r["n"]), {})[r["seed"]] = (r["majority_dev"], r["majority_test"])
    for name, encoder in encoders.items():
        own = [r for r in trials if r["encoder"] == name]
        for n in sorted({str(r["n"]) for r in own}, key=_count_order):
            cell = [r for r in own if str(r["n"]) == n]
            seed_zero = [r for r in cell if r["seed"] == 0]
            if not seed_zero:
                continue
            lr = choose_learning_rate(seed_zero)
            if lr is None:
                continue
            chosen = sorted((r for r in cell if r["lr"] == lr), key=lambda r: r["seed"])
            encoder["cells"][n] = {
                "lr": lr, "seeds": [r["seed"] for r in chosen],
                "test": _spread([r["test"] for r in chosen]),
                "dev": _spread([r["dev"] for r in chosen]),
                "seed0_dev_by_lr": {plan.format_lr(r["lr"]): r["dev"] for r in seed_zero}}
    label_counts = sorted(majority, key=_count_order)
    return {
        "label_counts": label_counts,
        "sizes": {n: sizes[n] for n in label_counts},
        "encoders": dict(sorted(encoders.items(), key=lambda item: _encoder_order(item[1]))),
        "majority": {n: {"dev": _spread([d for d, _ in majority[n].values()]),
                         "test": _spread([t for _, t in majority[n].values()])}
                     for n in label_counts},
        "trials": len(trials)}


def read_unique(records: list[dict]) -> list[dict]:
    """One record per trial (the last line of a trial recorded twice)."""
    unique = {plan.trial_key(r["encoder"], r["n"], r["lr"], r["seed"]): r for r in records}
    return list(unique.values())


def _count_order(n: str):
    return (1, 0) if n == plan.ALL else (0, int(n))


def _encoder_order(encoder: dict):
    return ({"none": 0, "electra": 1, "mlm": 2}.get(encoder["objective"], 3),
            encoder["pretraining_step"])
