"""The benchmark suite: its table from benchmark lines, and the command end to end against a
stand-in reference script."""

import subprocess
import sys
import textwrap

import pytest

from electra_tf.benchmarks import suite
from electra_tf.benchmarks.suite import (ROWS, default_rows, machine_line, onnxruntime_records,
                                        run_suite, table)

OURS_PRETRAIN = {"cpu": "AMD EPYC", "cores": 2, "cpu_flags": ["AVX-512", "AVX-512 BF16"],
                 "onednn": True,
                 "tokens_per_s": 3000.0, "fraction_of_peak": 0.5,
                 "peak_gflop_per_s": {"float32": 350.0}}
OURS_SERVE = {"cpu": "AMD EPYC", "cores": 2, "cpu_flags": ["AVX-512", "AVX-512 BF16"],
              "tokens_per_s": 6400.0, "latency_p50_ms": 20.0,
              "peak_gflop_per_s": {"float32": 330.0}}


def test_table_puts_each_workload_against_its_references():
    results = {"pretrain": [(OURS_PRETRAIN, {"tokens_per_s": 1500.0})],
               "serve_b1": [(OURS_SERVE, {"median_step_s": 0.030})],
               "serve_b32_intra1": [(OURS_SERVE, None)],
               "serve_b1_litert_int8": [(dict(OURS_SERVE, latency_p50_ms=8.0), None)],
               "qa": [({"error": "out of memory"}, {"tokens_per_s": 100.0})]}
    onnx = [{"1": {"median_s": 0.016}, "32": {"tokens_per_s": 3200.0},
             "int8:1": {"median_s": 0.010}}]
    text = table(results, machine_line([r for [(r, _)] in results.values()]), onnx)
    lines = text.splitlines()
    assert lines[0].startswith("AMD EPYC, 2 cores (AVX-512, AVX-512 BF16); TensorFlow's oneDNN "
                               "kernels; float32 matmul peak 330-350 GFLOP/s; 20")
    pretrain = next(line for line in lines if line.startswith("| pretraining step"))
    assert "3,000 tokens/s (50% of peak) | 1,500 tokens/s | 2.00x |" in pretrain
    serve = next(line for line in lines if line.startswith("| serving_default, batch 1"))
    # latency: the speed ratio is the reference's latency over ours
    assert "| 20.0 ms | 30.0 ms | 1.50x | 16.0 ms | 0.80x |" in serve
    # a row without a torch reference is still held against ONNX Runtime at its batch size
    intra1 = next(line for line in lines if "intra_op_parallelism" in line)
    assert "| 6,400 tokens/s |  |  | 3,200 tokens/s | 2.00x |" in intra1
    # LiteRT's int8 row against ONNX Runtime's int8, and against torch's plain row
    litert = next(line for line in lines if line.startswith("| LiteRT, batch 1 x 128, dynamic"))
    assert "| 8.0 ms |  | 3.75x | 10.0 ms | 1.25x |" in litert
    assert "failed: out of memory" in next(line for line in lines if line.startswith("| SQuAD"))
    assert not any(line.startswith("| classification") for line in lines)  # not run


def test_serving_variants_are_held_against_the_torch_run_of_their_batch_in_each_round():
    plain = [(OURS_SERVE, {"tokens_per_s": 3200.0}), (OURS_SERVE, {"tokens_per_s": 4266.7})]
    variant = [(OURS_SERVE, None), (OURS_SERVE, None)]
    label = f"| {ROWS['serve_b32_intra1'][0]} |"

    def row(results):
        lines = table(results, machine_line([OURS_SERVE]), []).splitlines()
        return next(line for line in lines if line.startswith(label))

    # round by round 6400 / 3200 and 6400 / 4266.7; the torch value itself is the plain row's
    assert "| 6,400 tokens/s |  | 1.75x (1.50-2.00) |" in row(
        {"serve_b32": plain, "serve_b32_intra1": variant})
    # without the plain row of its batch size (here batch 1's), no torch ratio
    assert "| 6,400 tokens/s |  |  |" in row(
        {"serve_b1": [(OURS_SERVE, {"median_step_s": 0.030})], "serve_b32_intra1": variant})


def test_one_chain_rows_are_held_against_their_tasks_torch_run_in_each_round():
    ours = dict(OURS_PRETRAIN, tokens_per_s=3300.0)
    results = {"classify": [(OURS_PRETRAIN, {"tokens_per_s": 1500.0}),
                            (OURS_PRETRAIN, {"tokens_per_s": 2200.0})],
               "classify_one_chain": [(ours, None), (ours, None)],
               "qa_one_chain": [(ours, None)]}  # qa's plain row did not run
    lines = table(results, machine_line([OURS_PRETRAIN]), []).splitlines()
    chains = [line for line in lines if "--cpu_chains 1" in line]
    assert "| 3,300 tokens/s (50% of peak) |  | 1.85x (1.50-2.20) |" in chains[0]
    assert "| 3,300 tokens/s (50% of peak) |  |  |" in chains[1]


def test_table_says_when_onnx_runtime_failed():
    results = {"serve_b1": [(OURS_SERVE, {"median_step_s": 0.030})]}
    onnx = [{"1": {"error": "No module named 'onnxruntime'"}}]
    text = table(results, machine_line([OURS_SERVE]), onnx)
    serve = next(line for line in text.splitlines() if line.startswith("| serving_default"))
    assert serve.endswith("| failed: No module named 'onnxruntime' |  |")


def test_rounds_give_the_median_round_and_the_range_of_the_rounds_ratios():
    def ours(tokens_per_s, latency_ms=None):
        return dict(OURS_PRETRAIN, tokens_per_s=tokens_per_s, latency_p50_ms=latency_ms)

    # the ratios are taken round by round: 3000/1500, 2000/1600, 3300/1650
    results = {"pretrain": [(ours(3000.0), {"tokens_per_s": 1500.0}),
                            (ours(2000.0), {"tokens_per_s": 1600.0}),
                            (ours(3300.0), {"tokens_per_s": 1650.0})],
               "serve_b1": [(ours(0, 10.0), {"median_step_s": 0.030}),
                            (ours(0, 12.0), {"error": "killed"}),
                            (ours(0, 11.0), {"median_step_s": 0.022})]}
    onnx = [{"1": {"median_s": 0.015}}, {"1": {"median_s": 0.013}}, {"1": {"error": "gone"}}]
    lines = table(results, "machine", onnx).splitlines()
    pretrain = next(line for line in lines if line.startswith("| pretraining step"))
    assert "| 3,000 tokens/s (50% of peak) | 1,600 tokens/s | 2.00x (1.25-2.00) |" in pretrain
    serve = next(line for line in lines if line.startswith("| serving_default, batch 1"))
    # torch: rounds 1 and 3 (3.00x, 2.00x), median of two = their mean; latencies: the lower
    # middle of 22 and 30 ms. ONNX Runtime: rounds 1 and 2 (1.50x, 13/12 = 1.08x)
    assert "| 11.0 ms | 22.0 ms | 2.50x (2.00-3.00) | 13.0 ms | 1.29x (1.08-1.50) |" in serve


def test_run_suite_keeps_each_pair_together_round_after_round(monkeypatch):
    commands = []

    def run(command, timeout, environment=None):
        script = command[2] if command[1] == "-m" else command[1].rsplit("/", 1)[-1]
        commands.append(script.rsplit(".", 1)[-1] if command[1] == "-m" else script)
        return {"tokens_per_s": 100.0 * len(commands), "latency_p50_ms": 1.0}

    onnx_calls = []
    monkeypatch.setattr(suite, "_run", run)
    monkeypatch.setattr(suite, "onnxruntime_records",
                        lambda reference_dir, timeout: onnx_calls.append(len(commands)) or {})
    text = run_suite(["pretrain", "serve_b32_intra1"], "refs", rounds=2)
    pair = ["steps", "torch_reference_step.py"]
    assert commands == pair + ["steps"] + pair + ["steps"]  # serve_b32_intra1 has no torch row
    assert onnx_calls == [3, 6]  # ONNX Runtime once a round, after that round's rows
    # pretraining's rounds: 100/200 and 400/500 tokens/s
    assert "| 0.65x (0.50-0.80) |" in next(line for line in text.splitlines()
                                            if line.startswith("| pretraining step"))


def test_rows_with_an_environment_run_ours_in_it_and_print_it(monkeypatch, capsys):
    environments = []
    monkeypatch.setattr(suite, "_run", lambda command, timeout, environment=None:
                        environments.append(environment) or {"tokens_per_s": 1.0})
    run_suite(["pretrain", "pretrain_xla256"], "refs")
    narrow = {"XLA_FLAGS": "--xla_cpu_prefer_vector_width=256"}
    assert environments == [None, None, narrow]  # ours, torch's, then ours with the flag
    monkeypatch.undo()
    probe = ("import json, os; "
             "print(json.dumps({'tokens_per_s': 1.0, 'flags': os.environ['XLA_FLAGS']}))")
    record = suite._run([sys.executable, "-c", probe], 120, narrow)
    assert record["flags"] == narrow["XLA_FLAGS"]
    assert "$ XLA_FLAGS=--xla_cpu_prefer_vector_width=256 " in capsys.readouterr().out


def test_a_failing_onnx_runtime_script_is_reported_at_both_batch_sizes(tmp_path):
    (tmp_path / "onnxruntime_serving.py").write_text("import onnxruntime_is_not_here\n")
    records = onnxruntime_records(str(tmp_path), timeout=60)
    error = "ModuleNotFoundError: No module named 'onnxruntime_is_not_here'"
    assert records == {key: {"error": error} for key in ("1", "32", "int8:1", "int8:32")}


def test_onnx_runtime_records_are_read_and_each_batch_printed_as_it_ends(tmp_path, capsys):
    lines = [{"impl": "ort", "batch": 32, "seq": 128, "median_s": 0.5, "tokens_per_s": 8192.0},
             {"impl": "torch", "batch": 1, "median_s": 0.03, "tokens_per_s": 4266.7},
             {"impl": "ort", "batch": 1, "seq": 128, "median_s": 0.0182, "tokens_per_s": 7033.0},
             {"impl": "ort+int8", "batch": 1, "seq": 128, "median_s": 0.0091, "tokens_per_s": 14066.0},
             {"impl": "ort+bert_fusions+int8", "batch": 1, "median_s": 0.008,
              "tokens_per_s": 16000.0}]
    script = tmp_path / "onnxruntime_serving.py"
    script.write_text("import json, sys\nassert sys.argv[1:] == ['--int8']\n"
                      + "".join(f"print(json.dumps({line!r}))\n" for line in lines))
    records = onnxruntime_records(str(tmp_path), timeout=60)
    assert records == {"32": lines[0], "1": lines[2], "int8:1": lines[3]}
    assert ("  -> batch 1: 7,033 tokens/s, median 18.2 ms; batch 32: 8,192 tokens/s, median "
            "500.0 ms; batch int8:1: 14,066 tokens/s, median 9.1 ms") in capsys.readouterr().out


def test_default_rows_leave_out_bf16_and_256_bit_rows_where_the_cpu_lacks_them():
    for flags in (["AVX-512", "AVX-512 BF16"], ["AVX-512", "AVX-512 BF16", "AMX-BF16", "AMX"]):
        assert default_rows({"cpu_flags": flags}) == (list(ROWS), [])
    bf16 = ["pretrain_bf16", "pretrain_bf16_one_chain", "pretrain_bf16_xla256", "classify_bf16",
            "qa_bf16", "serve_b1_bf16_intra1", "serve_b32_bf16"]
    # AVX2 only (Zen 3): no 256-bit XLA rows, 256 bits being the default there; AVX-512
    # without BF16: the fp32 one runs
    for flags, left_out in (([], bf16 + ["pretrain_xla256"]), (["AVX-512"], bf16)):
        names, left = default_rows({"cpu_flags": flags})
        assert sorted(names + left) == sorted(ROWS) and left == left_out
        assert "pretrain" in names and "serve_b32" in names


REFERENCE = textwrap.dedent("""
    import json, sys
    args = sys.argv[1:]
    task = args[args.index("--task") + 1] if "--task" in args else "pretrain"
    print("torch reference warming up")
    print(json.dumps({"impl": "stand-in", "task": task, "median_step_s": 0.5,
                      "tokens_per_s": 1234.0}))
""")


@pytest.mark.slow
def test_suite_command_runs_ours_and_the_reference(tmp_path):
    (tmp_path / "torch_reference_step.py").write_text(REFERENCE)
    output = tmp_path / "table.md"
    result = subprocess.run(
        [sys.executable, "-m", "electra_tf.benchmarks.suite", "--size", "tiny", "--rows",
         "classify,serve_b1", "--reference_dir", str(tmp_path), "--output", str(output)],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "$ " in result.stdout and "electra_tf.benchmarks.steps --size tiny --task classify" \
        in result.stdout
    assert "  -> 1,234 tokens/s, median step 500.0 ms" in result.stdout  # each run as it ends
    text = output.read_text()
    classify = next(line for line in text.splitlines() if line.startswith("| classification"))
    assert "| 1,234 tokens/s |" in classify and "tokens/s (" in classify
    serve = next(line for line in text.splitlines() if line.startswith("| serving_default"))
    assert "| 500.0 ms |" in serve  # the stand-in's median step as torch's latency


def test_suite_refuses_unknown_rows():
    result = subprocess.run([sys.executable, "-m", "electra_tf.benchmarks.suite", "--rows",
                             "pretrain,warp_drive"], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and "unknown --rows warp_drive" in result.stderr
