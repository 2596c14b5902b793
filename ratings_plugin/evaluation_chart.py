"""``matchlobby evaluate --chart``: the evaluation drawn as one figure, in PNG or SVG.

Left, the calibration chart: for each row of the report (each system, each variant, the
baselines) the share of games side A won against the probability it was given, bin by bin,
beside the diagonal a perfectly calibrated system would follow. Right, the log-loss of each
row as a bar: the shorter, the better the system predicted.

matplotlib is an optional extra (``matchlobby[charts]``), imported only when a chart is
asked for, so the lobby and every other command run without it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

from ratings_plugin.commands.offline import variant_text

INSTALL = "pip install 'matchlobby[charts]'"
FORMATS = (".png", ".svg")
WIDTH, HEIGHT, DPI = 11.0, 5.4, 100  # inches, and dots an inch: a PNG of 1100 × 540


def unusable(path: str) -> str | None:
    """Why ``--chart path`` cannot be drawn (one line for the user), or ``None``: checked
    before the evaluation runs, which can take a while on a big log."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return f"--chart needs matplotlib, which is not installed: {INSTALL}"
    if os.path.splitext(path)[1].lower() not in FORMATS:
        return f"--chart {path}: the file must end in .png or .svg"
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        return f"--chart {path}: no folder {folder}"
    if not os.access(folder, os.W_OK):
        return f"--chart {path}: the folder {folder} cannot be written to"
    return None


def label(row: Mapping[str, Any]) -> str:
    """A row's name on the chart: its system, and its variant's options if it has any."""
    variant: Mapping[str, Any] = row.get("variant") or {}
    if not variant:
        return str(row["system"])
    return f"{row['system']} ({variant_text(variant, ', ')})"


def draw(report: Mapping[str, Any], path: str) -> None:
    """Draw ``report`` (what ``evaluate`` returns) into ``path``, in the format its suffix
    names (``.png`` or ``.svg``)."""
    # matplotlib's first run on a machine logs, at INFO, that it built its font cache: a line
    # on the user's terminal that says nothing about the chart
    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    import matplotlib

    with matplotlib.rc_context({"svg.fonttype": "none"}):  # an SVG's words stay text
        figure = _figure(report)
        figure.savefig(path, format=os.path.splitext(path)[1][1:].lower())


def _figure(report: Mapping[str, Any]) -> Any:
    from matplotlib.figure import Figure

    rows: Sequence[Mapping[str, Any]] = report["systems"]
    names = [label(r) for r in rows]
    figure = Figure(figsize=(WIDTH, HEIGHT), dpi=DPI, layout="constrained")
    calibration, losses = figure.subplots(1, 2, width_ratios=(1.1, 1))

    calibration.plot((0, 1), (0, 1), linestyle="--", color="0.6", linewidth=1,
                     label="perfectly calibrated")
    for i, (name, row) in enumerate(zip(names, rows, strict=True)):
        bins = [b for b in row["calibration"] if b["games"]]
        calibration.plot([b["predicted"] for b in bins], [b["observed"] for b in bins],
                         marker="o", markersize=4, linewidth=1.5, color=f"C{i}", label=name)
    calibration.set(xlim=(-0.02, 1.02), ylim=(-0.02, 1.02), aspect="equal",
                    xlabel="Predicted chance that side A wins",
                    ylabel="Share of games side A won",
                    title="Calibration (ten bins)")
    calibration.grid(True, color="0.9")
    calibration.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncols=2,
                       fontsize="small", frameon=False)  # below: the lines stay in sight

    positions = range(len(rows))
    scored = [r["log_loss"] for r in rows]  # None: the row scored no game
    scores = [0.0 if s is None else float(s) for s in scored]
    bars = losses.barh(positions, scores, color=[f"C{i}" for i in positions])
    losses.bar_label(bars, labels=["no games" if s is None else f"{s:.4f}" for s in scored],
                     padding=3, fontsize="small")
    losses.set_yticks(list(positions), names)
    losses.invert_yaxis()  # the report's order, top to bottom
    losses.set_xlim(0, max([*scores, 0.0]) * 1.2 or 1)
    games = max((int(r["games"]) for r in rows), default=0)
    losses.set(xlabel="Log-loss (lower is better)",
               title=f"Log-loss by system ({games} games)")
    losses.grid(True, axis="x", color="0.9")
    losses.set_axisbelow(True)
    return figure
