"""Checks every plot of the project passes: titles, labels, tick labels and legends inside
the figure (its edges, as the PNG is saved, without a tight bounding box), figure legends off
the axes, and a colour of its own for each labelled series."""

from __future__ import annotations


def assert_well_drawn(figure) -> None:
    problems = outside_the_figure(figure)
    assert not problems, problems
    shared = series_sharing_a_colour(figure)
    assert not shared, f"series drawn in the same colour: {shared}"


def outside_the_figure(figure) -> list[str]:
    """The texts and legends of `figure` (title, axis titles and labels, tick labels,
    legends) that reach beyond its edges, and figure legends that cover an axes; [] when
    none does. Draws the figure once."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = figure.canvas if isinstance(figure.canvas, FigureCanvasAgg) else FigureCanvasAgg(
        figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    width, height = figure.bbox.width, figure.bbox.height
    axes = [ax for ax in figure.axes if ax.get_visible()]
    artists = [("title", figure._suptitle)] + [("legend", legend) for legend in figure.legends]
    for ax in axes:
        artists += [("axis title", ax.title), ("x label", ax.xaxis.label),
                    ("y label", ax.yaxis.label), ("legend", ax.get_legend())]
        artists += [("tick label", t) for t in drawn_tick_labels(ax)]
    problems = []
    for kind, artist in artists:
        if artist is None or not artist.get_visible() or (
                hasattr(artist, "get_text") and not artist.get_text()):
            continue
        box = artist.get_window_extent(renderer)
        if box.x0 < -1 or box.y0 < -1 or box.x1 > width + 1 or box.y1 > height + 1:
            name = artist.get_text() if hasattr(artist, "get_text") else kind
            problems.append(f"{kind} {name!r} outside the figure ({box.extents.round()} "
                            f"in {width:.0f}x{height:.0f})")
    for legend in figure.legends:
        box = legend.get_window_extent(renderer)
        for ax in axes:
            if box.overlaps(ax.get_window_extent(renderer)):
                problems.append(f"a figure legend covers the axes {ax.get_title()!r}")
    return problems


def series_sharing_a_colour(figure) -> list[tuple[str, str]]:
    """Pairs of differently labelled series of `figure` (its legends' entries) drawn in the
    same colour; [] when every series has its own."""
    from matplotlib.colors import to_hex

    colour_of = {}
    for ax in figure.axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            colour_of.setdefault(label, to_hex(_colour(handle)))
    for legend in figure.legends:
        for handle, text in zip(legend.legend_handles, legend.get_texts()):
            colour_of.setdefault(text.get_text(), to_hex(_colour(handle)))
    labels = sorted(colour_of)
    return [(a, b) for i, a in enumerate(labels) for b in labels[i + 1:]
            if colour_of[a] == colour_of[b]]


def _colour(handle):
    if isinstance(handle, tuple) or hasattr(handle, "lines"):  # an errorbar's container
        handle = handle[0]
    return handle.get_color() if hasattr(handle, "get_color") else handle.get_facecolor()


def drawn_tick_labels(ax, axes: str = "xy") -> list:
    """The major tick labels matplotlib draws on the x and/or y axis: those of ticks within
    the view limits."""
    labels = []
    for name in axes:
        ticks, tick_labels, limits = ((ax.get_xticks(), ax.get_xticklabels(), ax.get_xlim())
                                      if name == "x" else
                                      (ax.get_yticks(), ax.get_yticklabels(), ax.get_ylim()))
        low, high = sorted(limits)
        labels += [label for tick, label in zip(ticks, tick_labels) if low <= tick <= high]
    return labels
