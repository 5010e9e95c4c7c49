"""tools/lever_table.py, as docs/pretraining_value.md and docs/faithfulness.md run it: one row
per one-lever study, gaps to each study's own random encoder, and the bar plot."""

import json
import subprocess
import sys

import pytest

from tests.run_helpers import REPO


def _study(directory, flops, pretrained, random):
    """A study's summary.json: one pretrained encoder, the random one; cells n -> (median,
    min, max) of test accuracy."""
    def cells(values):
        return {n: {"lr": 1e-3, "test": dict(zip(("median", "min", "max"), v))}
                for n, v in values.items()}
    directory.mkdir()
    (directory / "summary.json").write_text(json.dumps({"label_counts": ["100", "300"], "encoders": {
        "electra@3000": {"objective": "electra", "flops": flops, "cells": cells(pretrained)},
        "random": {"objective": "none", "flops": 0, "cells": cells(random)}}}))
    return str(directory)


@pytest.mark.slow
def test_the_table_and_plot_of_one_lever_studies(tmp_path):
    base = _study(tmp_path / "base", 4.6e13, {"100": (40, 35, 45), "300": (60, 58, 63)},
                  {"100": (55, 50, 60), "300": (66, 64, 68)})
    lever = _study(tmp_path / "lever", 4.6e13, {"100": (57, 52, 59), "300": (64, 61, 65)},
                   {"100": (55, 50, 60), "300": (66, 64, 68)})
    png = tmp_path / "levers.png"
    result = subprocess.run([sys.executable, "tools/lever_table.py", "--output", str(png),
                             f"recipe={base}", f"lr 2e-3={lever}"],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0] == "| pretraining | FLOPs | n=100 | n=300 |"
    assert ("| recipe | 4.6e+13 | 40.0 (35.0-45.0) lr 1e-3, gap -15.0 (random 55.0) | "
            "60.0 (58.0-63.0) lr 1e-3, gap -6.0 (random 66.0) |") in lines
    assert ("| lr 2e-3 | 4.6e+13 | 57.0 (52.0-59.0) lr 1e-3, gap +2.0 (random 55.0) | "
            "64.0 (61.0-65.0) lr 1e-3, gap -2.0 (random 66.0) |") in lines
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
