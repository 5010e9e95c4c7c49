"""The performance goals, judged from one suite run: for each goal and each row that can meet it
(a plain row and its variants: `--cpu_chains 1`, one intra-op thread, another export), the
median of the rounds' values with their range, in how many rounds it reached the goal, and
whether its median did. Printed under the suite's table, so that a run on any CPU says which
goals hold there without working the ratios out by hand.

A round's value is a ratio (the suite's `round_ratios`: ours over torch's or ONNX Runtime's
speed), our bf16 step over our fp32 step run the same way (with or without `--cpu_chains`) in
the same round, or the step's fraction of the
float32 matmul peak: for a row run with `--nopeak` (the `_one_chain` rows), the plain row's
fraction of that round scaled by the two rows' speeds (the same FLOPs a token), marked "about".
"""

from __future__ import annotations

import dataclasses
import statistics


@dataclasses.dataclass(frozen=True)
class Goal:
    text: str
    rows: tuple[str, ...]  # any one of them meeting it meets the goal
    measure: str  # "torch", "onnx", "fp32" (bf16 over fp32 of the same round) or "peak"
    threshold: float | None  # None: 2.0 on a CPU with AMX, else 1.5 (the bf16 goal)


GOALS = (
    Goal("serving, batch 1 x 128, p50 at or below ONNX Runtime's",
         ("serve_b1", "serve_b1_intra1", "serve_b1_bf16_intra1", "serve_b1_transposed_intra1",
          "serve_b1_xla"), "onnx", 1.0),
    Goal("serving, batch 32 x 128, >= 1.5x torch",
         ("serve_b32", "serve_b32_intra1", "serve_b32_bf16"), "torch", 1.5),
    Goal("pretraining step >= 1.5x torch", ("pretrain", "pretrain_one_chain"), "torch", 1.5),
    Goal("pretraining step >= 65% of the fp32 peak", ("pretrain", "pretrain_one_chain"), "peak",
         0.65),
    Goal("bf16 pretraining step >= 2x our fp32 with AMX, >= 1.5x with AVX-512 BF16 alone",
         ("pretrain_bf16", "pretrain_bf16_one_chain"), "fp32", None),
    Goal("bf16 pretraining step >= 1.2x torch's autocast",
         ("pretrain_bf16", "pretrain_bf16_one_chain"), "torch", 1.2),
    Goal("classification step >= 1.5x torch", ("classify", "classify_one_chain"), "torch", 1.5),
    Goal("SQuAD step >= 1.5x torch", ("qa", "qa_one_chain"), "torch", 1.5),
)


def _peak_fractions(name, results):
    """The row's fraction of the float32 peak in each round (None where unknown), and whether
    they are estimates from its plain row."""
    plain = results.get(name.removesuffix("_one_chain"), [])
    fractions, estimated = [], False
    for index, (ours, _) in enumerate(results[name]):
        fraction = ours.get("fraction_of_peak")
        if fraction is None and name.endswith("_one_chain") and index < len(plain):
            base = plain[index][0]
            if base.get("fraction_of_peak") and "tokens_per_s" in ours:
                fraction = base["fraction_of_peak"] * ours["tokens_per_s"] / base["tokens_per_s"]
                estimated = True
        fractions.append(fraction)
    return fractions, estimated


def _over_fp32(name, results):
    """Our bf16 step's speed over our fp32 step's run the same way in each round
    (`pretrain_bf16` over `pretrain`, `pretrain_bf16_one_chain` over `pretrain_one_chain`)."""
    fp32 = results.get(name.replace("_bf16", ""), [])
    return [ours["tokens_per_s"] / fp32[index][0]["tokens_per_s"]
            if index < len(fp32) and "tokens_per_s" in ours
            and "tokens_per_s" in fp32[index][0] else None
            for index, (ours, _) in enumerate(results[name])]


def _round_values(goal, name, results, ratios):
    if goal.measure == "peak":
        return _peak_fractions(name, results)
    if goal.measure == "fp32":
        return _over_fp32(name, results), False
    torch_ratios, onnx_ratios = ratios[name]
    return (torch_ratios if goal.measure == "torch" else onnx_ratios), False


def _cell(values, measure, estimated):
    """"1.50x (1.38-1.75)" or "66% (60-70%)" (the median and range of sorted `values`)."""
    median = statistics.median(values)
    if measure == "peak":
        text = f"{median:.0%}" + (f" ({100 * values[0]:.0f}-{100 * values[-1]:.0f}%)"
                                  if len(values) > 1 else "")
    else:
        text = f"{median:.2f}x" + (f" ({values[0]:.2f}-{values[-1]:.2f})"
                                   if len(values) > 1 else "")
    return ("about " if estimated else "") + text


def goals_table(results, ratios, cpu_flags) -> str:
    """Markdown: one line per goal and row that ran (see the module's docstring); "" where no
    row of any goal ran. `results` as the suite's `table` takes them; `ratios`: each row's
    (torch ratios, ONNX Runtime ratios) a round (the suite's `round_ratios`); `cpu_flags`: the
    benchmark lines' (`machine.cpu_description`)."""
    lines = []
    for goal in GOALS:
        threshold = goal.threshold or (2.0 if "AMX-BF16" in cpu_flags else 1.5)
        for name in goal.rows:
            if name not in results:
                continue
            values, estimated = _round_values(goal, name, results, ratios)
            values = sorted(value for value in values if value is not None)
            if not values:
                continue
            reached = sum(value >= threshold for value in values)
            met = statistics.median(values) >= threshold
            lines.append(f"| {goal.text} | {name} | {_cell(values, goal.measure, estimated)} | "
                         f"{reached} of {len(values)} | {'yes' if met else 'no'} |")
    if not lines:
        return ""
    return "\n".join(["Goals (median of the rounds, with their range; met: the median reaches "
                      "the goal):", "",
                      "| goal | row | this run | rounds that reach it | met |",
                      "|---|---|---|---|---|", *lines])
