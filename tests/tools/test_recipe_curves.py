"""tools/recipe_curves.py: the table of recipes against FLOPs, the crossing, a well-drawn plot."""

import json

from tests.plot_checks import assert_well_drawn
from tools import recipe_curves


def _cell(median, low, high):
    return {"test": {"median": median, "min": low, "max": high}}


def _study(directory, points, random=None):
    encoders = {f"electra@{i}": {"objective": "electra", "flops": flops,
                                 "cells": {n: _cell(*cell) for n, cell in cells.items()}}
                for i, (flops, cells) in enumerate(points)}
    if random:
        encoders["random"] = {"objective": "none", "flops": 0,
                              "cells": {n: _cell(*cell) for n, cell in random.items()}}
    directory.mkdir()
    (directory / "summary.json").write_text(json.dumps(
        {"label_counts": ["100", "300"], "encoders": encoders}))
    return str(directory)


def test_the_table_gives_gaps_and_the_first_budget_above_no_pretraining(tmp_path, capsys):
    old = _study(tmp_path / "old", [(1e13, {"100": (40, 35, 45), "300": (60, 58, 62)}),
                                    (4e13, {"100": (50, 45, 55), "300": (68, 66, 70)})],
                 random={"100": (55, 50, 60), "300": (66, 64, 68)})
    new = _study(tmp_path / "new", [(1e13, {"100": (52, 50, 54), "300": (67, 65, 69)}),
                                    (4e13, {"100": (58, 56, 60), "300": (71, 70, 72)})])
    own = _study(tmp_path / "own", [(4e13, {"100": (58, 56, 60), "300": (71, 70, 72)})],
                 random={"100": (59, 57, 61), "300": (70, 69, 71)})  # another architecture
    png = tmp_path / "curves.png"
    recipe_curves.main([f"old={old}", f"new={new}", f"own={own}", "--output", str(png)])
    printed = capsys.readouterr().out
    assert "| old: no pretraining | 0 | 55.0 (50.0-60.0) | 66.0 (64.0-68.0) |" in printed
    # a study without its own random trials takes the first study's; one with them, its own
    assert "| new: no pretraining | 0 | 55.0 (50.0-60.0) | 66.0 (64.0-68.0) |" in printed
    assert "| own: no pretraining | 0 | 59.0 (57.0-61.0) | 70.0 (69.0-71.0) |" in printed
    assert "| own | 4e+13 | 58.0 (56.0-60.0), -1.0 | 71.0 (70.0-72.0), +1.0 |" in printed
    assert "- own, n=100: not within this study" in printed
    assert "| old | 4e+13 | 50.0 (45.0-55.0), -5.0 | 68.0 (66.0-70.0), +2.0 |" in printed
    assert "- old, n=100: not within this study" in printed
    assert "- old, n=300: 4e+13 FLOPs" in printed
    assert "- new, n=100: 4e+13 FLOPs" in printed and "- new, n=300: 1e+13 FLOPs" in printed
    assert png.stat().st_size > 0

    recipes = [(label, recipe_curves.read_study(d))
               for label, d in (("old", old), ("new", new), ("own", own))]
    assert_well_drawn(recipe_curves.figure(recipes))
