r"""Runs the README's performance table on this machine: every ELECTRA-Small workload of
`electra_tf.benchmarks.steps` next to its reference (PyTorch + Hugging Face `transformers`, and
ONNX Runtime for serving), one after the other in the same minutes, and prints the table in
Markdown with the machine line (CPU, cores, AVX-512 / BF16 / AMX flags, matmul peaks) and date.

  python -m electra_tf.benchmarks.suite --reference_dir ../shared/bench
  python -m electra_tf.benchmarks.suite --rows serve_b1,serve_b32 --reference_dir ../shared/bench

The references are scripts kept outside this package: `--reference_dir` holds
`torch_reference_step.py` (same JSON fields and FLOP count as ours) and
`onnxruntime_serving.py` (the same model exported to ONNX, B1 and B32 latency at length 128).
Without it, only our own numbers are printed; ONNX Runtime comes from requirements-bench.txt,
and where its script fails the table says so. Each row's commands are printed above the table,
so every number can be re-run alone; `--output FILE` also writes the table there. On a CPU
without bfloat16 instructions (AVX-512 BF16 or AMX) the bf16 rows are left out unless named.
"""

import datetime
import json
import os
import shlex
import subprocess
import sys

from electra_tf.benchmarks.machine import has_bfloat16_instructions

# name -> (what, our arguments, the torch reference's arguments, the rate compared)
ROWS = {
    "pretrain": ("pretraining step, batch 32 x 128, fp32",
                 ["--batch", "32", "--seq", "128", "--steps", "5"],
                 ["--batch", "32", "--seq", "128", "--steps", "5"], "tokens_per_s"),
    "pretrain_bf16": ("pretraining step, batch 32 x 128, bf16 (torch: autocast)",
                      ["--batch", "32", "--seq", "128", "--steps", "5", "--precision", "bf16"],
                      ["--batch", "32", "--seq", "128", "--steps", "5", "--bf16"],
                      "tokens_per_s"),
    "classify": ("classification fine-tuning step, batch 32 x 128",
                 ["--task", "classify", "--batch", "32", "--seq", "128", "--steps", "10"],
                 ["--task", "classify", "--batch", "32", "--seq", "128", "--steps", "10"],
                 "tokens_per_s"),
    "classify_bf16": ("classification fine-tuning step, batch 32 x 128, bf16 (torch: autocast)",
                      ["--task", "classify", "--batch", "32", "--seq", "128", "--steps", "10",
                       "--precision", "bf16"],
                      ["--task", "classify", "--batch", "32", "--seq", "128", "--steps", "10",
                       "--bf16"], "tokens_per_s"),
    "qa": ("SQuAD fine-tuning step, batch 16 x 384",
           ["--task", "qa", "--batch", "16", "--seq", "384", "--steps", "10"],
           ["--task", "qa", "--batch", "16", "--seq", "384", "--steps", "10"], "tokens_per_s"),
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
}


BFLOAT16_ROWS = [name for name, (_, ours, _, _) in ROWS.items()
                 if "bf16" in ours or "bfloat16" in ours]


def default_rows(description):
    """(every row, or every row but the bf16 ones if this CPU has no bf16 instructions,
    the rows left out) for a `machine.cpu_description`."""
    if has_bfloat16_instructions(description):
        return list(ROWS), []
    return [name for name in ROWS if name not in BFLOAT16_ROWS], list(BFLOAT16_ROWS)


def _run(command, timeout):
    """The last JSON line `command` prints (a dict), or {"error": ...}."""
    print("$", " ".join(shlex.quote(part) for part in command), flush=True)
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode or not lines:
        return {"error": (result.stderr.strip().splitlines() or ["no output"])[-1][:200]}
    return json.loads(lines[-1])


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
    """Our speed over the reference's (>1: we are faster)."""
    if "error" in ours or reference is None:
        return ""
    if rate == "latency":
        return f"{reference / ours['latency_p50_ms']:.2f}x"
    return f"{ours['tokens_per_s'] / reference:.2f}x"


def table(results, machine, onnx):
    """Markdown: one row per workload: ours, torch, their ratio, and ONNX Runtime where run."""
    lines = [f"{machine}", "",
             "| workload | electra_tf | PyTorch + transformers | speed vs torch | ONNX Runtime "
             "| speed vs ONNX Runtime |", "|---|---|---|---|---|---|"]
    for name, (what, _, _, rate) in ROWS.items():
        if name not in results:
            continue
        ours, reference = results[name]
        torch_value = _reference_value(reference, rate) if reference else None
        torch_cell = ("" if reference is None else f"failed: {reference['error']}"
                      if torch_value is None else
                      f"{torch_value:.1f} ms" if rate == "latency"
                      else f"{torch_value:,.0f} tokens/s")
        batch = ("1" if name.startswith("serve_b1") else "32" if name.startswith("serve_b32")
                 else None)
        onnx_record = onnx.get(batch) if batch else None
        onnx_value = _reference_value(onnx_record, rate) if onnx_record else None
        onnx_cell = ("" if onnx_record is None else f"failed: {onnx_record['error']}"
                     if onnx_value is None else
                     f"{onnx_value:.1f} ms" if rate == "latency" else f"{onnx_value:,.0f} tokens/s")
        lines.append(f"| {what} | {_ours_cell(ours, rate)} | {torch_cell} | "
                     f"{_ratio(ours, torch_value, rate)} | {onnx_cell} | "
                     f"{_ratio(ours, onnx_value, rate)} |")
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
    command = [sys.executable, os.path.join(reference_dir, "onnxruntime_serving.py")]
    print("$", " ".join(command), flush=True)
    try:
        output = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        output = None
    onnx = {}
    for line in output.stdout.splitlines() if output else []:
        if line.startswith("{") and '"impl": "ort"' in line:
            record = json.loads(line)
            onnx[str(record["batch"])] = record
    if not onnx:
        error = (f"timed out after {timeout} s" if output is None else
                 (output.stderr.strip().splitlines() or ["no output"])[-1][:200])
        onnx = {batch: {"error": error} for batch in ("1", "32")}
    return onnx


def run_suite(names, reference_dir=None, size="small", timeout=900):
    """Runs the rows `names` (keys of ROWS), ours then the torch reference's for each, then
    ONNX Runtime once if a serving row is among them; returns the Markdown table."""
    ours_command = [sys.executable, "-m", "electra_tf.benchmarks.steps", "--size", size]
    results = {}
    for name in names:
        _, ours_args, torch_args, _ = ROWS[name]
        ours = _run(ours_command + ours_args, timeout)
        torch_record = None
        if reference_dir and torch_args is not None:
            torch_record = _run([sys.executable,
                                 os.path.join(reference_dir, "torch_reference_step.py"),
                                 "--size", size] + torch_args, timeout)
        results[name] = (ours, torch_record)
    onnx = {}
    if reference_dir and size == "small" and any(name.startswith("serve") for name in names):
        onnx = onnxruntime_records(reference_dir, timeout)
    return table(results, machine_line([ours for ours, _ in results.values()]), onnx)
