"""curves.png: a run's TensorBoard scalars read back and drawn; no matplotlib, no PNG and no crash.

The end-to-end check (a tiny run writes curves.png, a preempted one does not) rides on runs of
tests/test_run_pretraining.py.
"""

import logging
import os
import struct
import subprocess
import sys

import pytest
import tensorflow as tf

from electra_tf.training import curves
from electra_tf.training.callbacks import read_scalars
from tests.plot_checks import assert_well_drawn

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _write(log_dir, points):
    """tf.summary scalars as the run writes them: {step: {tag: value}}, one writer per call."""
    writer = tf.summary.create_file_writer(str(log_dir))
    with writer.as_default():
        for step, values in points.items():
            for tag, value in values.items():
                tf.summary.scalar(tag, value, step=step)
    writer.close()


def _run_dir(tmp_path):
    """A run's tensorboard/ and tensorboard/heldout/, written by two calls (a resumed run)."""
    model_dir = tmp_path / "run"
    train, held_out = model_dir / "tensorboard", model_dir / "tensorboard" / "heldout"
    for first, last in ((5, 10), (15, 20)):  # the second writer is the resumed call's
        _write(train, {step: {"loss": 30.0 - step, "mlm_loss": 8.0 - step / 10,
                              "disc_loss": 0.5 - step / 100, "disc_auc": 0.5 + step / 100,
                              "learning_rate": 1e-4 * step, "sequences_per_second": 100.0}
                       for step in range(first, last + 1, 5)})
        _write(held_out, {last: {"loss": 25.0, "mlm_loss": 7.0, "disc_loss": 0.3,
                                 "disc_auc": 0.6 + last / 100}})
    return model_dir


def _png_size(path):
    """(width, height) from a PNG's header, after checking its magic bytes."""
    with open(path, "rb") as f:
        header = f.read(24)
    assert header[:8] == PNG_MAGIC
    return struct.unpack(">II", header[16:24])


def test_read_scalars_returns_what_both_calls_of_a_run_wrote(tmp_path):
    model_dir = _run_dir(tmp_path)
    train = read_scalars(str(model_dir / "tensorboard"))
    held_out = read_scalars(str(model_dir / "tensorboard" / "heldout"))
    assert train["loss"] == ([5, 10, 15, 20], [25.0, 20.0, 15.0, 10.0])
    steps, values = train["learning_rate"]
    assert steps == [5, 10, 15, 20]
    assert values == pytest.approx([5e-4, 1e-3, 1.5e-3, 2e-3])
    assert held_out["disc_auc"][0] == [10, 20]
    assert held_out["disc_auc"][1] == pytest.approx([0.7, 0.8])
    assert "learning_rate" not in held_out


def test_plot_writes_a_png_next_to_the_events(tmp_path):
    model_dir = _run_dir(tmp_path)
    path = curves.plot_pretraining_curves(str(model_dir))
    assert path == str(model_dir / "curves.png")
    width, height = _png_size(path)
    assert 800 <= width <= 2500 and 300 <= height <= 1500, (width, height)
    assert 10_000 < os.path.getsize(path) < 1_000_000


def test_the_figure_is_well_drawn_and_a_one_step_run_has_whole_step_ticks(tmp_path):
    model_dir = _run_dir(tmp_path)
    log_dir = model_dir / "tensorboard"
    assert_well_drawn(curves.curves_figure(read_scalars(str(log_dir)),
                                           read_scalars(str(log_dir / "heldout")), "run"))
    # a run shorter than the logging interval: one point per tag
    one = {tag: ([10], [value]) for tag, value in (("loss", 3.0), ("disc_auc", 0.6))}
    figure = curves.curves_figure(one, {}, "short")
    assert_well_drawn(figure)
    for axis in (ax for ax in figure.axes if ax.get_visible()):
        ticks = [t for t in axis.get_xticks() if axis.get_xlim()[0] <= t <= axis.get_xlim()[1]]
        assert ticks and all(float(t).is_integer() for t in ticks), ticks


def test_plot_to_another_path_and_from_the_command_line(tmp_path, capsys):
    model_dir = _run_dir(tmp_path)
    other = tmp_path / "elsewhere.png"
    assert curves.main(["curves", str(model_dir), str(other)]) == 0
    assert capsys.readouterr().out.strip() == str(other)
    _png_size(other)
    assert not (model_dir / "curves.png").exists()


def test_a_run_without_held_out_data_or_mlm_loss_still_plots(tmp_path):
    model_dir = tmp_path / "run"
    _write(model_dir / "tensorboard", {10: {"loss": 3.0, "disc_loss": 0.4, "disc_auc": 0.6,
                                            "learning_rate": 1e-4}})
    _png_size(curves.plot_pretraining_curves(str(model_dir)))


def test_no_scalars_no_png(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        assert curves.plot_pretraining_curves(str(tmp_path)) is None
    assert "no TensorBoard scalars" in caplog.text
    assert not (tmp_path / "curves.png").exists()


def test_without_matplotlib_a_warning_and_no_png(tmp_path, monkeypatch, caplog):
    model_dir = _run_dir(tmp_path)
    # None in sys.modules makes `import matplotlib` (and its submodules) raise ImportError.
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with caplog.at_level(logging.WARNING):
        assert curves.plot_pretraining_curves(str(model_dir)) is None
    assert "matplotlib cannot be imported" in caplog.text
    assert not (model_dir / "curves.png").exists()


@pytest.mark.slow
def test_pretrain_imports_without_matplotlib():
    """The import stays inside the function. (Keras imports matplotlib when it is installed, so
    with it installed `sys.modules` cannot tell: block it instead.)"""
    code = ("import sys; sys.modules['matplotlib'] = None; "
            "from electra_tf.training import curves, pretrain; print(pretrain.PretrainResult)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"), timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "PretrainResult" in out.stdout
