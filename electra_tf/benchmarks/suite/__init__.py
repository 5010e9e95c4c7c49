r"""Runs the README's performance table on this machine: every ELECTRA-Small workload of
`electra_tf.benchmarks.steps` next to its reference (PyTorch + Hugging Face `transformers`, and
ONNX Runtime for serving), one after the other in the same minutes, and prints the table in
Markdown with the machine line (CPU, cores, AVX-512 / BF16 / AMX flags, matmul peaks) and date.

  python -m electra_tf.benchmarks.suite --reference_dir ../shared/bench
  python -m electra_tf.benchmarks.suite --rows serve_b1,serve_b32 --reference_dir ../shared/bench

The references are scripts kept outside this package: `--reference_dir` holds
`torch_reference_step.py` (same JSON fields and FLOP count as ours) and
`onnxruntime_serving.py --int8` (the same model exported to ONNX, B1 and B32 latency at length
128, float32 and dynamic int8: the LiteRT int8 rows are held against the int8 ones).
Without it, only our own numbers are printed; ONNX Runtime comes from requirements-bench.txt,
and where its script fails the table says so. Each row's commands are printed above the table,
each with its result as it ends (`  -> 2,647 tokens/s, median step 1547.6 ms`), so every
number can be re-run alone and every round read; `--output FILE` also writes the table there.
On a CPU without bfloat16 instructions (AVX-512 BF16 or AMX) the bf16 rows are left out unless
named, and without AVX-512 the rows that run ours with XLA's CPU kernels in 512-bit vectors
(`ROW_ENVIRONMENTS`; each such command is printed with its environment).

A machine of this kind drifts by 5-10% in speed over minutes, ours and the reference's alike, so
one pair of runs can put a ratio on either side of a goal. `--rounds N` runs the whole list N
times over (each row's pair of commands, and ONNX Runtime once per round, stay next to each
other in time): each cell is then the median round's value, and each ratio the median of the
rounds' own ratios with their range, e.g. `1.38x (1.33-1.45)`.
"""

import datetime
import json
import os
import shlex
import statistics
import subprocess
import sys

from electra_tf.benchmarks.machine import has_bfloat16_instructions
from electra_tf.benchmarks.suite.goals import goals_table

# name -> (what, our arguments, the torch reference's arguments, the rate compared)
ROWS = {
    "pretrain": ("pretraining step, batch 32 x 128, fp32",
                 ["--batch", "32", "--seq", "128", "--steps", "5"],
                 ["--batch", "32", "--seq", "128", "--steps", "5"], "tokens_per_s"),
    "pretrain_xla256": ("the same, with `XLA_FLAGS=--xla_cpu_prefer_vector_width=256`",
                        ["--batch", "32", "--seq", "128", "--steps", "5", "--nopeak"], None,
                        "tokens_per_s"),
    "pretrain_one_chain": ("the same, with --cpu_chains 1 (one chain of ops on TensorFlow's "
                           "default intra-op threads)",
                           ["--batch", "32", "--seq", "128", "--steps", "5", "--nopeak",
                            "--chains", "1"], None, "tokens_per_s"),
    "pretrain_bf16": ("pretraining step, batch 32 x 128, bf16 (torch: autocast)",
                      ["--batch", "32", "--seq", "128", "--steps", "5", "--precision", "bf16"],
                      ["--batch", "32", "--seq", "128", "--steps", "5", "--bf16"],
                      "tokens_per_s"),
    "pretrain_bf16_one_chain": ("the same, with --cpu_chains 1",
                                ["--batch", "32", "--seq", "128", "--steps", "5", "--precision",
                                 "bf16", "--nopeak", "--chains", "1"], None, "tokens_per_s"),
    "pretrain_bf16_xla256": ("the same, with `XLA_FLAGS=--xla_cpu_prefer_vector_width=256`",
                             ["--batch", "32", "--seq", "128", "--steps", "5", "--precision",
                              "bf16", "--nopeak"], None, "tokens_per_s"),
    "classify": ("classification fine-tuning step, batch 32 x 128",
                 ["--task", "classify", "--batch", "32", "--seq", "128", "--steps", "10"],
                 ["--task", "classify", "--batch", "32", "--seq", "128", "--steps", "10"],
                 "tokens_per_s"),
    "classify_one_chain": ("the same, with --cpu_chains 1",
                           ["--task", "classify", "--batch", "32", "--seq", "128", "--steps",
                            "10", "--nopeak", "--chains", "1"], None, "tokens_per_s"),
    "classify_bf16": ("classification fine-tuning step, batch 32 x 128, bf16 (torch: autocast)",
                      ["--task", "classify", "--batch", "32", "--seq", "128", "--steps", "10",
                       "--precision", "bf16"],
                      ["--task", "classify", "--batch", "32", "--seq", "128", "--steps", "10",
                       "--bf16"], "tokens_per_s"),
    "qa": ("SQuAD fine-tuning step, batch 16 x 384",
           ["--task", "qa", "--batch", "16", "--seq", "384", "--steps", "10"],
           ["--task", "qa", "--batch", "16", "--seq", "384", "--steps", "10"], "tokens_per_s"),
    "qa_one_chain": ("the same, with --cpu_chains 1",
                     ["--task", "qa", "--batch", "16", "--seq", "384", "--steps", "10",
                      "--nopeak", "--chains", "1"], None, "tokens_per_s"),
    "qa_bf16": ("SQuAD fine-tuning step, batch 16 x 384, bf16 (torch: autocast)",
                ["--task", "qa", "--batch", "16", "--seq", "384", "--steps", "10", "--precision",
                 "bf16"],
                ["--task", "qa", "--batch", "16", "--seq", "384", "--steps", "10", "--bf16"],
                "tokens_per_s"),
    "serve_b1": ("serving_default, batch 1 x 128, p50 latency",
                 ["--task", "infer", "--batch", "1", "--steps", "300", "--warmup", "20"],
                 ["--task", "infer", "--batch", "1", "--steps", "300"], "latency"),
    "serve_b1_intra1": ("the same, the server given --tensorflow_intra_op_parallelism=1",
                        ["--task", "infer", "--batch", "1", "--steps", "300", "--warmup", "20",
                         "--threads", "1", "--nopeak"], None, "latency"),
    "serve_b1_bf16_intra1": ("the same, exported with --serving_dtype bfloat16, intra-op 1",
                             ["--task", "infer", "--batch", "1", "--steps", "300", "--warmup",
                              "20", "--threads", "1", "--nopeak", "--serving_dtype",
                              "bfloat16"], None, "latency"),
    "serve_b1_transposed_intra1": ("the same, exported with --transposed_feedforward, intra-op 1",
                                   ["--task", "infer", "--batch", "1", "--steps", "300",
                                    "--warmup", "20", "--threads", "1", "--nopeak",
                                    "--transposed_feedforward"], None, "latency"),
    "serve_b1_xla": ("the same, exported with --jit_compile",
                     ["--task", "infer", "--batch", "1", "--steps", "300", "--warmup", "20",
                      "--jit_compile"], None, "latency"),
    "serve_b32": ("serving_default, batch 32 x 128",
                  ["--task", "infer", "--batch", "32", "--steps", "20"],
                  ["--task", "infer", "--batch", "32", "--steps", "20"], "tokens_per_s"),
    "serve_b32_intra1": ("the same, the server given --tensorflow_intra_op_parallelism=1",
                         ["--task", "infer", "--batch", "32", "--steps", "20", "--threads", "1",
                          "--nopeak"], None, "tokens_per_s"),
    "serve_b32_bf16": ("the same, exported with --serving_dtype bfloat16",
                       ["--task", "infer", "--batch", "32", "--steps", "20", "--serving_dtype",
                        "bfloat16"], None, "tokens_per_s"),
    "serve_b1_litert": ("LiteRT (export_litert), batch 1 x 128, float32",
                        ["--task", "infer", "--batch", "1", "--steps", "300", "--warmup", "20",
                         "--litert", "none", "--nopeak"], None, "latency"),
    "serve_b1_litert_int8": ("LiteRT, batch 1 x 128, dynamic int8 (ONNX Runtime: its dynamic "
                             "int8 too)",
                             ["--task", "infer", "--batch", "1", "--steps", "300", "--warmup",
                              "20", "--litert", "int8_dynamic", "--nopeak"], None, "latency"),
    "serve_b32_litert_int8": ("LiteRT, batch 32 x 128, dynamic int8 (ONNX Runtime: its dynamic "
                              "int8 too)",
                              ["--task", "infer", "--batch", "32", "--steps", "20", "--litert",
                               "int8_dynamic", "--nopeak"], None, "tokens_per_s"),
}

# row -> environment variables its run of ours gets. The commands' `electra_tf.tune_cpu()` has
# XLA's CPU kernels (GELU, the residual LayerNorm, dropout, the softmax's gradient, the
# optimizer's update) use 512-bit vectors where the CPU has AVX-512 (electra_tf/xla_cpu.py);
# these rows run the step with XLA's own default of 256-bit vectors beside it.
ROW_ENVIRONMENTS = {name: {"XLA_FLAGS": "--xla_cpu_prefer_vector_width=256"}
                    for name in ("pretrain_xla256", "pretrain_bf16_xla256")}

BFLOAT16_ROWS = [name for name, (_, ours, _, _) in ROWS.items()
                 if "bf16" in ours or "bfloat16" in ours]


def default_rows(description):
    """(the rows to run, the rows left out) for a `machine.cpu_description`: every row, but
    the bf16 ones where the CPU has no bf16 instructions and the 256-bit XLA ones where it has
    no AVX-512 (there 256 bits are the default)."""
    left_out = [] if has_bfloat16_instructions(description) else list(BFLOAT16_ROWS)
    if "AVX-512" not in description["cpu_flags"]:
        left_out += [name for name in ROW_ENVIRONMENTS if name not in left_out]
    return [name for name in ROWS if name not in left_out], left_out


def _run(command, timeout, environment=None):
    """The last JSON line `command` prints (a dict), or {"error": ...}; `environment` (a dict)
    is added to this process's environment for the command, and printed before it."""
    prefix = [f"{key}={shlex.quote(value)}" for key, value in (environment or {}).items()]
    print("$", " ".join(prefix + [shlex.quote(part) for part in command]), flush=True)
    env = {**os.environ, **environment} if environment else None
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                                env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode or not lines:
        record = {"error": (result.stderr.strip().splitlines() or ["no output"])[-1][:200]}
    else:
        record = json.loads(lines[-1])
    print(f"  -> {_summary(record)}", flush=True)
    return record


def _summary(record):
    """One benchmark line in a few words, printed as the suite goes."""
    if "error" in record:
        return f"failed: {record['error']}"
    parts = [f"{record['tokens_per_s']:,.0f} tokens/s"] if "tokens_per_s" in record else []
    if "latency_p50_ms" in record:
        parts.append(f"p50 {record['latency_p50_ms']:.1f} ms")
    elif "median_step_s" in record:
        parts.append(f"median step {1000 * record['median_step_s']:.1f} ms")
    elif "median_s" in record:  # onnxruntime_serving.py's records
        parts.append(f"median {1000 * record['median_s']:.1f} ms")
    return ", ".join(parts) or "no rate"


def _median_record(records, value):
    """Of one row's records over the rounds, the one whose `value(record)` is the median (the
    lower middle one for an even count), or the first failure if every round failed."""
    valid = [record for record in records if "error" not in record]
    if not valid:
        return records[0]
    return sorted(valid, key=value)[(len(valid) - 1) // 2]


def _our_value(record, rate):
    return record["latency_p50_ms"] if rate == "latency" else record["tokens_per_s"]


def _ours_cell(record, rate):
    if "error" in record:
        return f"failed: {record['error']}"
    if rate == "latency":
        return f"{record['latency_p50_ms']:.1f} ms"
    share = record.get("fraction_of_peak")
    return f"{record['tokens_per_s']:,.0f} tokens/s" + (f" ({share:.0%} of peak)" if share else "")


def _reference_value(record, rate):
    if "error" in record:
        return None
    if rate == "latency":
        return 1000 * record.get("median_step_s", record.get("median_s", 0))
    return record["tokens_per_s"]


def _ratio(ours, reference, rate):
    """Our speed over the reference's (>1: we are faster), or None."""
    if "error" in ours or reference is None:
        return None
    if rate == "latency":
        return reference / ours["latency_p50_ms"]
    return ours["tokens_per_s"] / reference


def _ratio_cell(ratios):
    """The rounds' ratios (None where a run failed) -> "1.38x", or "1.38x (1.33-1.45)", the
    median and the range, over several rounds."""
    ratios = sorted(ratio for ratio in ratios if ratio is not None)
    if not ratios:
        return ""
    median = statistics.median(ratios)
    if len(ratios) == 1:
        return f"{median:.2f}x"
    return f"{median:.2f}x ({ratios[0]:.2f}-{ratios[-1]:.2f})"


def _value_cell(record, value, rate):
    """A reference's cell: its value, or its failure."""
    if record is None:
        return ""
    if value is None:
        return f"failed: {record['error']}"
    return f"{value:.1f} ms" if rate == "latency" else f"{value:,.0f} tokens/s"


def _plain_row(name, batch):
    """The row whose torch run a row without one is held against: its batch size's plain
    serving row, or a `_one_chain` row's task; None for the others."""
    if batch:
        return f"serve_b{batch}"
    return name.removesuffix("_one_chain") if name.endswith("_one_chain") else None


def serving_batch(name):
    """"1" or "32" for a serving row (the ONNX Runtime batch it is held against), else None."""
    return ("1" if name.startswith("serve_b1") else "32" if name.startswith("serve_b32")
            else None)


def onnx_key(name):
    """The ONNX Runtime record a serving row is held against: "1" or "32" (float32), or
    "int8:1" / "int8:32" (its dynamic int8) for an int8 row; None for the others."""
    batch = serving_batch(name)
    return None if batch is None else f"int8:{batch}" if name.endswith("_int8") else batch


def round_ratios(name, results, onnx_rounds):
    """(torch ratios, ONNX Runtime ratios) of row `name`, one per round (None where a run
    failed or there is nothing to hold it against): our speed over the reference's, against
    its own torch run or, for a row without one, its plain row's (`_plain_row`) of that round."""
    rate = ROWS[name][3]
    batch = serving_batch(name)
    plain_rounds = results.get(_plain_row(name, batch), [])
    torch_ratios, onnx_ratios = [], []
    for index, (ours, reference) in enumerate(results[name]):
        if reference is None and index < len(plain_rounds):
            reference = plain_rounds[index][1]
        torch_ratios.append(None if reference is None else
                            _ratio(ours, _reference_value(reference, rate), rate))
        key = onnx_key(name)
        onnx = onnx_rounds[index].get(key) if key and index < len(onnx_rounds) else None
        onnx_ratios.append(None if onnx is None else
                           _ratio(ours, _reference_value(onnx, rate), rate))
    return torch_ratios, onnx_ratios


def table(results, machine, onnx_rounds):
    """Markdown: one row per workload: ours, torch, their ratio, and ONNX Runtime where run.

    `results` maps a row's name to its rounds, each (our record, torch's record or None);
    `onnx_rounds` has one `onnxruntime_records` dict per round (or none). A cell is the median
    round's value; a ratio is the median of the rounds' own ratios (`_ratio_cell`). A serving
    row without a torch run of its own (another export or thread setting) is held against the
    torch run of its batch size's plain row (`serve_b1`, `serve_b32`) in the same round, and a
    `_one_chain` row against its task's plain row's (`classify_one_chain` against `classify`'s),
    where that row ran: its ratio is filled, its torch cell left to that row."""
    lines = [f"{machine}", "",
             "| workload | electra_tf | PyTorch + transformers | speed vs torch | ONNX Runtime "
             "| speed vs ONNX Runtime |", "|---|---|---|---|---|---|"]
    for name, (what, _, _, rate) in ROWS.items():
        if name not in results:
            continue
        rounds = results[name]
        batch = serving_batch(name)
        torch_ratios, onnx_ratios = round_ratios(name, results, onnx_rounds)
        torch_records = [reference for _, reference in rounds if reference is not None]
        onnx_records = [each[onnx_key(name)] for each in onnx_rounds[:len(rounds)]
                        if batch and each.get(onnx_key(name)) is not None]
        our_records = [ours for ours, _ in rounds]
        cells = [_ours_cell(_median_record(our_records, lambda r: _our_value(r, rate)), rate)]
        for records, ratios in ((torch_records, torch_ratios), (onnx_records, onnx_ratios)):
            record = (_median_record(records, lambda r: _reference_value(r, rate))
                      if records else None)
            value = _reference_value(record, rate) if record else None
            cells += [_value_cell(record, value, rate), _ratio_cell(ratios)]
        lines.append(f"| {what} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def machine_line(records):
    """The table's first line, from our benchmark lines: "<cpu>, <cores> cores (<flags>);
    TensorFlow's oneDNN (or Eigen) kernels; <dtype> matmul peak <low>-<high> GFLOP/s; ...;
    <today's date>"."""
    first = next((r for r in records if "cpu" in r), {})
    peaks = {}
    for record in records:
        for dtype, value in record.get("peak_gflop_per_s", {}).items():
            peaks.setdefault(dtype, []).append(value)
    peak_text = "; ".join(f"{dtype} matmul peak {min(v):.0f}-{max(v):.0f} GFLOP/s"
                          for dtype, v in peaks.items())
    flags_text = ", ".join(first.get("cpu_flags", [])) or "no AVX-512"
    kernels = {True: "; TensorFlow's oneDNN kernels", False: "; TensorFlow's Eigen kernels"}.get(
        first.get("onednn"), "")
    return (f"{first.get('cpu', 'unknown CPU')}, {first.get('cores', '?')} cores ({flags_text})"
            f"{kernels}; {peak_text}; {datetime.date.today().isoformat()}")


def onnxruntime_records(reference_dir, timeout):
    """{"1": ONNX Runtime's batch-1 record, "32": its batch-32 one}; where the script fails
    (onnxruntime not installed: requirements-bench.txt), both are {"error": ...}, so the table
    says so instead of leaving its ONNX Runtime column blank."""
    command = [sys.executable, os.path.join(reference_dir, "onnxruntime_serving.py"), "--int8"]
    print("$", " ".join(command), flush=True)
    try:
        output = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        output = None
    onnx = {}
    for line in output.stdout.splitlines() if output else []:
        if line.startswith("{") and '"impl"' in line:
            record = json.loads(line)
            prefix = {"ort": "", "ort+int8": "int8:"}.get(record.get("impl"))
            if prefix is not None:
                onnx[f"{prefix}{record['batch']}"] = record
    if not onnx:
        error = (f"timed out after {timeout} s" if output is None else
                 (output.stderr.strip().splitlines() or ["no output"])[-1][:200])
        onnx = {key: {"error": error} for key in ("1", "32", "int8:1", "int8:32")}
    summaries = [f"batch {key}: {_summary(onnx[key])}" for key in sorted(
        onnx, key=lambda k: (k.startswith("int8:"), int(k.rpartition(":")[2])))]
    print("  -> " + "; ".join(summaries), flush=True)
    return onnx


def run_suite(names, reference_dir=None, size="small", timeout=900, rounds=1):
    """Runs the rows `names` (keys of ROWS), ours then the torch reference's for each, then
    ONNX Runtime once if a serving row is among them; all that `rounds` times over. Returns the
    Markdown table (`table`) and under it the goals' verdicts (`goals.goals_table`)."""
    ours_command = [sys.executable, "-m", "electra_tf.benchmarks.steps", "--size", size]
    results = {name: [] for name in names}
    onnx_rounds = []
    for round_index in range(rounds):
        if rounds > 1:
            print(f"round {round_index + 1} of {rounds}", flush=True)
        for name in names:
            _, ours_args, torch_args, _ = ROWS[name]
            ours = _run(ours_command + ours_args, timeout, ROW_ENVIRONMENTS.get(name))
            torch_record = None
            if reference_dir and torch_args is not None:
                torch_record = _run([sys.executable,
                                     os.path.join(reference_dir, "torch_reference_step.py"),
                                     "--size", size] + torch_args, timeout)
            results[name].append((ours, torch_record))
        if (reference_dir and size == "small"
                and any(name.startswith("serve") for name in names)):
            onnx_rounds.append(onnxruntime_records(reference_dir, timeout))
    records = [ours for rounds_of_row in results.values() for ours, _ in rounds_of_row]
    cpu_flags = next((r["cpu_flags"] for r in records if "cpu_flags" in r), [])
    verdicts = goals_table(results, {name: round_ratios(name, results, onnx_rounds)
                                     for name in results}, cpu_flags)
    return table(results, machine_line(records), onnx_rounds) + (
        f"\n\n{verdicts}" if verdicts else "")
