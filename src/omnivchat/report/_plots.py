"""The report's plots, drawn with matplotlib's Agg backend and returned as base64 PNG for inline <img> tags.

matplotlib is imported inside each function: building the CLI, or a report module import, must not pay for it.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Mapping, Sequence
from typing import Any

# Okabe-Ito: distinguishable with colour-vision deficiencies and in greyscale print.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")


def _figure(width: float, height: float) -> tuple[Any, Any]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    # A bare Figure on its own Agg canvas: no display needed, no pyplot state, and a caller's backend (say, a
    # notebook's) is left alone.
    figure = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(figure)
    return figure, figure.add_subplot()


def _png(figure: Any) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", facecolor="white")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def subcategory_bars(
    subcategories: Sequence[tuple[str, str]], series: Sequence[tuple[str, Sequence[float | None]]]
) -> str:
    """Grouped bars of the per-subcategory mean score, one colour per model.

    ``subcategories`` are (code, category) in display order; ``series`` are (label, means aligned with it). A
    None mean is a gap marked "n/a", never a 0 bar; a true 0 is marked "0".
    """
    n_sub, n_models = len(subcategories), max(len(series), 1)
    # Wide enough for the bars, but capped so the page never shrinks the image to unreadable text.
    figure, ax = _figure(min(13.0, max(6.5, 0.16 * n_sub * (n_models + 1) + 2.5)), 4.4)
    width = 0.8 / n_models
    for m, (label, means) in enumerate(series):
        colour = PALETTE[m % len(PALETTE)]
        xs = [s + (m - (n_models - 1) / 2) * width for s in range(n_sub)]
        present = [(x, v) for x, v in zip(xs, means, strict=True) if v is not None and not math.isnan(v)]
        ax.bar(
            [x for x, _ in present],
            [v for _, v in present],
            width=width * 0.92,
            color=colour,
            edgecolor=colour,
            label=label,
        )
        for x, v in zip(xs, means, strict=True):
            if v is None or math.isnan(v):
                ax.text(x, 0.02, "n/a", rotation=90, ha="center", va="bottom", fontsize=7, color="#888888")
            elif v == 0:  # a zero-height bar is invisible on the axis: say 0 so it is not read as a gap
                ax.text(x, 0.01, "0", ha="center", va="bottom", fontsize=7, color=colour, weight="bold")
    codes = [code for code, _ in subcategories]
    ax.set_xticks(range(n_sub), codes, rotation=45 if n_sub > 8 else 0, ha="right" if n_sub > 8 else "center")
    ax.set_xlim(-0.6, n_sub - 0.4)
    ax.set_ylim(0, 1.08)
    ax.set_ylabel("mean gated rubric score")
    # Thin separators between ability categories, with the category code above each block.
    categories = [category for _, category in subcategories]
    start = 0
    for s in range(1, n_sub + 1):
        if s == n_sub or categories[s] != categories[start]:
            ax.text((start + s - 1) / 2, 1.045, categories[start], ha="center", va="center", fontsize=8, weight="bold")
            if s < n_sub:
                ax.axvline(s - 0.5, color="#cccccc", linewidth=0.8)
            start = s
    ax.grid(axis="y", color="#eeeeee")
    ax.set_axisbelow(True)
    if series:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return _png(figure)


def ablation_plot(
    title: str,
    means: Mapping[str, float],
    intervals: Mapping[str, Sequence[float]],
    chance: float,
    refused: bool,
) -> str:
    """The four condition means with their 95% intervals as error bars, and the chance level."""
    conditions = list(means)
    figure, ax = _figure(6.0, 3.6)
    values = [means[c] for c in conditions]
    lower = [max(means[c] - intervals[c][0], 0.0) for c in conditions]
    upper = [max(intervals[c][1] - means[c], 0.0) for c in conditions]
    colours = [PALETTE[k] for k in range(len(conditions))]
    ax.bar(range(len(conditions)), values, color=colours, alpha=0.85, width=0.6)
    ax.errorbar(range(len(conditions)), values, yerr=[lower, upper], fmt="none", ecolor="black", capsize=6)
    for k, v in enumerate(values):
        ax.text(k, min(v + upper[k], 1.0) + 0.03, f"{v:.3f}", ha="center", va="bottom", fontsize=8)
    ax.axhline(chance, color="#D55E00", linestyle="--", linewidth=1)
    # The chance line is named beside the axes, not in a legend that would cover the bars or the banner.
    ax.text(
        1.01,
        chance,
        f"chance\n{chance:.3f}",
        transform=ax.get_yaxis_transform(),
        va="center",
        fontsize=8,
        color="#D55E00",
    )
    ax.set_xticks(range(len(conditions)), conditions)
    ax.set_ylim(0, 1.22 if refused else 1.15)
    ax.set_ylabel("mean score (95% CI)")
    ax.set_title(title, fontsize=10)
    if refused:
        ax.text(
            0.5,
            0.975,
            "REFUSED: prior floor above chance, no fusion gain",
            transform=ax.transAxes,
            ha="center",
            va="top",
            color="#B00020",
            weight="bold",
            fontsize=9,
            bbox={"facecolor": "white", "edgecolor": "#B00020", "boxstyle": "round,pad=0.3"},
        )
    ax.grid(axis="y", color="#eeeeee")
    ax.set_axisbelow(True)
    return _png(figure)
