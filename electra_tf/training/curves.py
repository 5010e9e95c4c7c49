"""A pretraining run's curves as one PNG, `<model_dir>/curves.png`, drawn from its TensorBoard
events: the losses, the discriminator's AUC (held-out and training) and the learning rate
against the step. The events hold every call of a resumed run, so the plot covers all of it.

`pretrain` draws it when a run finishes; to redraw it for any run directory (local or gs://):

    python -m electra_tf.training.curves runs/electra_demo [out.png]
"""

from __future__ import annotations

import math
import os
import sys

import tensorflow as tf
from absl import logging

from electra_tf import run_directory
from electra_tf.training.callbacks import read_scalars
from electra_tf.training.plot_style import series_colours, whole_steps

CURVES_FILE = "curves.png"

# (title, tag) of each panel. The training value is a line, the held-out one dots on it; a panel
# whose tag the run never wrote (no MLM loss with a uniform generator) is left out.
PANELS = (
    ("total loss", "loss"),
    ("generator: MLM loss", "mlm_loss"),
    ("discriminator: loss", "disc_loss"),
    ("discriminator: AUC", "disc_auc"),
    ("learning rate", "learning_rate"),
)
COLUMNS = 3


def plot_pretraining_curves(model_dir: str, path: str | None = None) -> str | None:
    """Draws the curves of the run in `model_dir` (its `tensorboard/` training scalars and
    `tensorboard/heldout/` evaluations) into the PNG `path`, default `model_dir/curves.png`.

    Returns the path written; None, with a warning, when matplotlib is not installed or the run
    wrote no scalars yet.
    """
    path = path or os.path.join(model_dir, CURVES_FILE)
    try:
        # Imported here, not at the top: the package imports and trains without matplotlib (then
        # without this PNG), and `import electra_tf` stays free of it.
        import matplotlib  # noqa: F401
    except ImportError as e:
        logging.warning("matplotlib cannot be imported (%s): not drawing %s", e, path)
        return None
    log_dir = run_directory.tensorboard_dir(model_dir)
    train, held_out = read_scalars(log_dir), read_scalars(os.path.join(log_dir, "heldout"))
    figure = curves_figure(train, held_out, os.path.basename(os.path.normpath(model_dir)))
    if figure is None:
        logging.warning("no TensorBoard scalars under %s: not drawing %s", log_dir, path)
        return None
    with tf.io.gfile.GFile(path, "wb") as f:
        figure.savefig(f, format="png", dpi=100)
    logging.info("curves: %s", path)
    return path


def curves_figure(train: dict, held_out: dict, name: str):
    """The matplotlib Figure of `train` and `held_out` scalars ({tag: (steps, values)}, as
    `read_scalars` returns them), titled with the run's `name`; None when there is none.

    A Figure of its own draws with the Agg backend and leaves pyplot's backend, and a
    notebook's figures, as they are."""
    from matplotlib.figure import Figure

    panels = [(title, tag) for title, tag in PANELS if tag in train or tag in held_out]
    if not panels:
        return None
    rows = math.ceil(len(panels) / COLUMNS)
    figure = Figure(figsize=(5 * COLUMNS, 3.6 * rows), layout="constrained")
    axes = figure.subplots(rows, COLUMNS, squeeze=False).ravel()
    colours = series_colours(2)
    for axis, (title, tag) in zip(axes, panels):
        for scalars, label, style, colour in ((train, "training", "-", colours[0]),
                                              (held_out, "held-out", "o--", colours[1])):
            if tag in scalars:
                steps, values = scalars[tag]
                axis.plot(steps, values, style if len(steps) > 1 else "o", label=label,
                          color=colour)
        axis.set(title=title, xlabel="step")
        whole_steps(axis)
        axis.grid(alpha=0.3)
        axis.legend()
    for axis in axes[len(panels):]:
        axis.set_visible(False)
    last_step = max(steps[-1] for scalars in (train, held_out) for steps, _ in scalars.values())
    figure.suptitle(f"{name} at step {last_step}")
    return figure


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print("usage: python -m electra_tf.training.curves MODEL_DIR [PNG]", file=sys.stderr)
        return 2
    path = plot_pretraining_curves(*argv[1:])
    if path is None:
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
