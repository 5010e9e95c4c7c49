"""The oneDNN primitive benchmark: reading oneDNN's verbose log of both libraries, and the
command end to end."""

import json
import subprocess
import sys

import pytest

from tests.run_helpers import REPO
from tools.perf.onednn_log import parse_log, summarize

# Verbatim line shapes: TensorFlow 2.21's oneDNN v3.7.3 and torch 2.13's v3.12.0 (bf16
# matmuls), and v3.7.3's float32 gemm_api.
AMX = "brg_matmul:avx10_1_512_amx"
TF_BF16 = ("onednn_verbose,v1,primitive,exec,cpu,matmul,{impl},undef,src:bf16::blocked:ab::f0 "
           "wei:bf16::blocked:ab::f0 dst:bf16::blocked:ab::f0,attr-scratchpad:user,,"
           "{m}x{k}:{k}x{n},{ms}")
TF_F32 = ("onednn_verbose,v1,primitive,exec,cpu,gemm_api,,undef,src_f32::blocked:ab:f0 "
          "wei_f32::blocked:ab:f0 dst_f32::blocked:ab:f0,,,{m}x{k}:{k}x{n},{ms}")
REORDER = ("onednn_verbose,v1,primitive,exec,cpu,reorder,jit:uni,undef,src:f32::blocked:ab::f0 "
           "dst:bf16::blocked:ab::f0,,,64x32,0.5")


def _log():
    """Two rounds (the first a warm-up) of two forms: form 0 [64, 32] @ [32, 64] in both
    libraries, form 1 [32, 64] @ [64, 16] in TensorFlow only (float32's gemm_api)."""
    lines = ["onednn_verbose,v1,info,oneDNN v3.7.3 (commit N/A)"]  # before any marker: ignored
    for round_, (tf_ms, torch_ms) in enumerate(((9.0, 9.0), (0.2, 0.1))):
        lines.append(f"FORM {round_} tf 0")
        if round_ == 0:
            lines += ["onednn_verbose,v1,info,oneDNN v3.7.3 (commit N/A)",
                      "onednn_verbose,v1,info,cpu,runtime:threadpool,nthr:2"]
        lines += [TF_BF16.format(impl=AMX, m=64, k=32, n=64, ms=tf_ms)] * 2 + [REORDER]
        lines.append(f"FORM {round_} tf 1")
        lines += [TF_F32.format(m=32, k=64, n=16, ms=0.064)] * 2
        lines.append(f"FORM {round_} torch 0")
        if round_ == 0:
            lines.append("onednn_verbose,v1,info,oneDNN v3.12.0 (commit 80afa71)")
        lines += [TF_BF16.format(impl=AMX, m=64, k=32, n=64, ms=torch_ms)] * 2
        lines.append(f"FORM {round_} torch 1")  # torch's float32 product: MKL, no line
    return lines


def test_log_attributes_versions_times_and_primitives_to_each_library_and_form():
    versions, times, primitives = parse_log(_log())
    assert versions == {"tf": "v3.7.3", "torch": "v3.12.0"}
    assert times[(1, "tf", 0)] == [0.2, 0.2]  # the reorder is not a product
    assert times[(1, "torch", 0)] == [0.1, 0.1]
    assert times[(1, "tf", 1)] == [0.064, 0.064]
    assert (0, "torch", 1) not in times
    assert primitives[("tf", 0)][0] == primitives[("torch", 0)][0] == AMX
    assert primitives[("tf", 1)][0] == "gemm_api"


def test_summary_skips_the_warm_up_round_and_compares_the_libraries():
    forms = [("a", [64, 32, 64]), ("b", [32, 64, 16])]
    a, b = summarize(forms, *parse_log(_log()), products_per_round=2)
    # 2 * 64 * 32 * 64 flop = 262,144 in 0.2 ms: 1.31 GFLOP/s; in 0.1 ms 2.62.
    assert a["product"] == "[64, 32] @ [32, 64]" and a["what"] == "a"
    assert a["tf_gflop_per_s"] == [1.3] and a["torch_gflop_per_s"] == [2.6]
    assert a["tf_over_torch"] == [0.5] and a["median_tf_over_torch"] == 0.5
    assert a["tf_onednn"] == "v3.7.3" and a["torch_onednn"] == "v3.12.0"
    assert a["same_layouts"] is True  # v3.7's and v3.12's spellings of the same layouts
    assert a["tf_primitives_per_product"] == a["torch_primitives_per_product"] == 1.0
    assert b["tf_gflop_per_s"] == [1.0] and b["torch_gflop_per_s"] == []
    assert b["torch_implementation"] is None and b["median_tf_over_torch"] is None
    assert b["same_layouts"] is None


def test_different_layouts_are_reported():
    lines = ["FORM 0 tf 0", TF_BF16.format(impl=AMX, m=8, k=8, n=8, ms=1),
             "FORM 0 torch 0",
             TF_BF16.format(impl=AMX, m=8, k=8, n=8, ms=1).replace("src:bf16::blocked:ab",
                                                                 "src:bf16::blocked:ba")]
    (record,) = summarize([("t", [8, 8, 8])], *parse_log(lines), products_per_round=1)
    assert record["same_layouts"] is False


@pytest.mark.slow
def test_command_prints_one_line_per_form():
    result = subprocess.run(
        [sys.executable, "-m", "tools.perf.onednn_primitives", "--rows", "32",
         "--hidden", "16", "--intermediate", "48", "--chain", "2", "--calls", "1", "--rounds",
         "2", "--dtype", "float32", "--gradients"],
        capture_output=True, text=True, timeout=300, cwd=REPO, check=True)
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["product"] for r in records[:3]] == [
        "[32, 16] @ [16, 16]", "[32, 16] @ [16, 16]", "[16, 32] @ [32, 16]"]
    assert len(records) == 9 and all(r["dtype"] == "float32" for r in records)
    for r in records:  # where this CPU's TensorFlow ran the product in oneDNN, its rate
        if r["tf_implementation"] is not None:
            assert r["tf_median_gflop_per_s"] > 0 and r["tf_primitives_per_product"] >= 1
