"""What every plot the project writes shares: a colour per series, step axes in whole steps,
FLOPs axes labelled at more than one decade (tests/plot_checks.py checks every plot for
these and for titles, labels and legends inside the figure).

matplotlib is imported inside the functions: the package imports and trains without it.
"""

from __future__ import annotations


def series_colours(count: int) -> list[str]:
    """`count` distinct colours: matplotlib's ten-colour cycle, its twenty-colour map beyond."""
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    if count <= 10:
        return [f"C{i}" for i in range(count)]
    palette = colormaps["tab20"].colors
    return [to_hex(palette[i % len(palette)]) for i in range(count)]


def whole_steps(axis) -> None:
    """Ticks of the x axis at whole numbers only: a run of one logged step is not labelled
    9.98, 10.00, 10.02."""
    from matplotlib.ticker import MaxNLocator

    axis.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))


def log_axis_labelled(axis) -> None:
    """A log x axis labelled at 1, 2 and 5 times each power of ten ("2e13"), so a range
    within one decade still shows several labels."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_xscale("log")
    axis.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.xaxis.set_major_formatter(FuncFormatter(
        lambda x, _: f"{x:.0e}".replace("e+0", "e").replace("e+", "e")))
    axis.xaxis.set_minor_formatter(NullFormatter())
