"""Report: one static, self-contained HTML page of scored runs, ablation grids and judge agreement.

``build_report(paths, output)`` reads scored run directories (scores.json, manifest.json, agreement.json) and
ablation directories (ablation.json and each condition's run) and writes one HTML file with inline CSS and
matplotlib plots as base64 PNG, so it opens offline. Every number's tooltip names its input file and key; the
footer lists every input file with its sha256. Each Table 1 row, failure count and ablation condition links
to the run viewer's matching filter (:func:`viewer_href`, docs/viewer.md).
"""

from omnivchat.report._build import VIEWER_URL, build_report, render_html, viewer_href
from omnivchat.report._inputs import Ablation, InputFile, Inputs, ReportError, ScoredRun, load_inputs

__all__ = [
    "VIEWER_URL",
    "Ablation",
    "InputFile",
    "Inputs",
    "ReportError",
    "ScoredRun",
    "build_report",
    "load_inputs",
    "render_html",
    "viewer_href",
]
