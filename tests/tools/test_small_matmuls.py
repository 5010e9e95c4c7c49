"""The small-matmul benchmark: TensorFlow's single-thread rule, the L2 size from sysfs, and the
command end to end."""

import json
import subprocess
import sys

import numpy as np
import pytest

from tests.run_helpers import REPO
from tools.perf.matmul_forms import layer_products, products_of
from tools.perf.small_matmuls import (l2_bytes_per_core, operand_bytes,
                                                 single_threaded_by_rule)

MIB = 2 ** 20
TINY = ("--rows", "32", "--hidden", "16", "--intermediate", "48", "--chain", "2", "--repeats",
        "2", "--threads", "1")


def _records(*args):
    """The JSON lines of `python -m tools.perf.small_matmuls *args`."""
    result = subprocess.run([sys.executable, "-m", "tools.perf.small_matmuls", *args],
                            capture_output=True, text=True, timeout=300, cwd=REPO, check=True)
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def test_layer_products_are_a_layers_three_shapes_with_distinct_repeatable_inputs():
    layers = list(layer_products(hidden=16, intermediate=48, rows=8, chain=3))
    assert [(what, k, n) for what, k, n, *_ in layers] == [
        ("query/key/value or output projection", 16, 16), ("feed-forward in", 16, 48),
        ("feed-forward out", 48, 16)]
    for _, k, n, xs, dys, w in layers:
        assert [x.shape for x in xs] == [(8, k)] * 3 and [dy.shape for dy in dys] == [(8, n)] * 3
        assert w.shape == (k, n) and {a.dtype for a in (*xs, *dys, w)} == {np.dtype(np.float32)}
        assert not np.array_equal(xs[0], xs[1]) and not np.array_equal(dys[1], dys[2])
    again = list(layer_products(hidden=16, intermediate=48, rows=8, chain=3))
    assert all(np.array_equal(a[5], b[5]) and np.array_equal(a[3][2], b[3][2])
               for a, b in zip(layers, again))


def test_rule_on_electra_small_single_request_products():
    # 128 tokens: the 256 x 256 projections take 0.5 MiB, the feed-forward products 1.625 MiB.
    assert operand_bytes(128, 256, 256) == 4 * (128 * 256 + 256 * (128 + 256)) == MIB // 2
    assert operand_bytes(128, 256, 1024) == operand_bytes(128, 1024, 256) == 1.625 * MIB
    assert single_threaded_by_rule(128, 256, 256, l2_bytes=1 * MIB)
    assert not single_threaded_by_rule(128, 256, 1024, l2_bytes=1 * MIB)  # Zen 4: 1 MiB L2
    assert single_threaded_by_rule(128, 256, 1024, l2_bytes=2 * MIB)  # Sapphire Rapids: 2 MiB
    assert not single_threaded_by_rule(32 * 128, 256, 256, l2_bytes=2 * MIB)  # batch 32


def test_l2_size_read_from_sysfs_layout(tmp_path):
    for index, level, size in (("index0", "1", "32K"), ("index2", "2", "2048K"),
                               ("index3", "3", "32M")):
        (tmp_path / index).mkdir()
        (tmp_path / index / "level").write_text(level + "\n")
        (tmp_path / index / "size").write_text(size + "\n")
    assert l2_bytes_per_core(str(tmp_path)) == 2 * MIB
    assert l2_bytes_per_core(str(tmp_path / "missing")) is None


@pytest.mark.slow
def test_command_prints_one_line_per_product():
    records = _records("--rows", "64", "--hidden", "64", "--intermediate", "128", "--chain",
                       "4", "--repeats", "3", "--threads", "1")
    assert [r["product"] for r in records] == ["[64, 64] @ [64, 64]", "[64, 64] @ [64, 128]",
                                               "[64, 128] @ [128, 64]"]
    assert all(r["tf_gflop_per_s"] > 0 and r["tf_threads"] == 1 for r in records)


@pytest.mark.slow
def test_gradients_add_each_products_two_training_gradients():
    records = _records(*TINY, "--gradients")
    # Per weight [k, n]: x [32, k] @ W, dy [32, n] @ W^T -> [32, k], x^T @ dy -> [k, n].
    assert [r["product"] for r in records] == [
        "[32, 16] @ [16, 16]", "[32, 16] @ [16, 16]", "[16, 32] @ [32, 16]",
        "[32, 16] @ [16, 48]", "[32, 48] @ [48, 16]", "[16, 32] @ [32, 48]",
        "[32, 48] @ [48, 16]", "[32, 16] @ [16, 48]", "[48, 32] @ [32, 16]"]
    assert [r["what"].split(", ")[-1] for r in records[:3]] == [
        "query/key/value or output projection", "input gradient dy @ W^T",
        "kernel gradient x^T @ dy"]
    assert all(r["tf_gflop_per_s"] > 0 for r in records)


@pytest.mark.slow
def test_transposed_kernels_add_each_product_with_its_kernel_stored_transposed():
    records = _records(*TINY, "--transposed_kernels")
    assert [(r["product"], r["what"]) for r in records] == [
        (product, what + suffix)
        for product, what in (("[32, 16] @ [16, 16]", "query/key/value or output projection"),
                              ("[32, 16] @ [16, 48]", "feed-forward in"),
                              ("[32, 48] @ [48, 16]", "feed-forward out"))
        for suffix in ("", ", kernel stored transposed")]
    assert all(r["tf_gflop_per_s"] > 0 for r in records)


@pytest.mark.slow
def test_written_transposes_add_three_gradient_forms_in_the_dtype_asked_for():
    records = _records(*TINY, "--gradients", "--written_transposes", "--dtype", "bfloat16")
    feedforward_in = [r for r in records if r["what"].startswith("feed-forward in")]
    # x [32, 16] @ W [16, 48]: dy @ W^T -> [32, 16]; x^T @ dy and (dy^T @ x)^T -> [16, 48].
    assert [(r["product"], r["what"].split(", ", 1)[-1]) for r in feedforward_in] == [
        ("[32, 16] @ [16, 48]", "feed-forward in"),
        ("[32, 48] @ [48, 16]", "input gradient dy @ W^T"),
        ("[16, 32] @ [32, 48]", "kernel gradient x^T @ dy"),
        ("[32, 48] @ [48, 16]", "input gradient dy @ (W^T written)"),
        ("[16, 32] @ [32, 48]", "kernel gradient (x^T written) @ dy"),
        ("[16, 32] @ [32, 48]", "kernel gradient ((dy^T written) @ x)^T")]
    assert len(records) == 3 * 6
    assert all(r["dtype"] == "bfloat16" and r["tf_gflop_per_s"] > 0 for r in records)


def test_every_timed_form_computes_the_product_it_is_named_for():
    # A form with a wrong transpose would be timed as happily as a right one: compare each
    # form's output, TensorFlow's and (where installed) torch's, with numpy's product
    # (float32: they differ only in the summation order, well inside 1e-4 at these sizes).
    try:
        import torch  # lazy: optional, the benchmark's reference side
    except ImportError:
        torch = None
    rng = np.random.default_rng(0)
    m, k, n = 12, 8, 20
    x, dy = rng.normal(size=(m, k)).astype(np.float32), rng.normal(size=(m, n)).astype(np.float32)
    w = rng.normal(size=(k, n)).astype(np.float32)
    products = products_of("feed-forward in", m, k, n, w, torch, transposed_kernels=True,
                           gradients=True, written_transposes=True)
    assert len(products) == 7
    for name, _, kernel, tf_product, torch_product in products:
        if "input gradient" in name:
            expected = dy @ w.T
        elif "kernel gradient" in name:
            expected = x.T @ dy
        else:
            expected = x @ w
        ours = np.asarray(tf_product(x, dy, kernel))
        np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-4, err_msg=name)
        if torch is not None:
            theirs = torch_product(*map(torch.from_numpy, (x, dy, kernel))).numpy()
            np.testing.assert_allclose(theirs, expected, rtol=1e-5, atol=1e-4, err_msg=name)
