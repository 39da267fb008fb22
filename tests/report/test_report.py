"""The HTML report, built from real inputs: runs made by the runner on rendered clips, scored by the rule judge,
ablation grids diagnosed by `diagnose`, and an agreement study; then opened in headless Chromium."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pytest

from omnivchat.bench import Bench, BenchInfo, Instance, load_bench, resolve_subcategory, save_bench

EN_REFERENCE = "Yes, the red square is on your left."
EN_RUBRIC = [
    {"tier": 0, "text": "The reply is in English.", "check": {"language": "en"}},
    {"tier": 1, "text": "Says it is on the left.", "check": {"any_of": ["left"]}},
    {"tier": 2, "text": "Names the red square.", "check": {"any_of": ["red square"]}},
]
ZH_REFERENCE = "能听到，很清楚。"
ZH_RUBRIC = [
    {"tier": 0, "text": "The reply is in Chinese.", "check": {"language": "zh"}},
    {"tier": 1, "text": "Says it can hear.", "check": {"any_of": ["听到"]}},
    {"tier": 2, "text": "Says it is clear.", "check": {"any_of": ["清楚"]}},
]
# (id, subcategory, clip source in the small bench, requires, source): clips are reused, so only 5 are rendered.
CHECKED = [
    ("a01", "SVMR", "s1", ["video", "audio"], "synthetic"),
    ("a02", "ICC", "s2", ["audio"], "synthetic"),
    ("a03", "AOR", "s3", ["video", "audio"], "synthetic"),
    ("a04", "MDCC", "m1", None, "synthetic"),
    ("a05", "FGC", "s1", ["video"], "synthetic"),
    ("a06", "AR", "s3", ["audio"], "synthetic"),
    ("a07", "DR", "s1", ["video", "audio"], "synthetic"),
    ("a08", "STIC", "s3", ["video", "audio"], "synthetic"),
    ("a09", "PLA", "s1", ["video"], "synthetic"),
    ("a10", "ER", "s3", ["audio"], "synthetic"),
    ("a11", "MVMS", "m1", ["video", "audio"], "synthetic"),
    ("a12", "UPC", "s1", ["video", "audio"], "synthetic"),
    ("a13", "SVMR", "s3", ["video", "audio"], "human"),
]
SMALL_IDS = {"s1": "s1", "s2": "s2", "s3": "s3", "m1": "m1"}


def make_checked_bench(small: Path, root: Path) -> Bench:
    """A bench whose every criterion carries a machine check, so the rule judge scores sim replies."""
    source = load_bench(small)
    instances = []
    for id_, sub, clip_of, requires, origin in CHECKED:
        template = source.get(SMALL_IDS[clip_of])
        turns = []
        for n, turn in enumerate(template.turns, start=1):
            video = f"media/{id_}/turn{n}.mp4"
            (root / video).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(small / turn.video, root / video)
            turns.append({"video": video, **({"reply": turn.reply} if turn.reply is not None else {})})
        zh = template.language == "zh"
        instances.append(
            Instance.model_validate(
                {
                    "id": id_,
                    "subcategory": sub,
                    "language": template.language,
                    "source": origin,
                    "turns": turns,
                    "reference": ZH_REFERENCE if zh else EN_REFERENCE,
                    "rubric": ZH_RUBRIC if zh else EN_RUBRIC,
                    "requires": requires,
                }
            )
        )
    save_bench(Bench(root=root, info=BenchInfo(name="checked", version="1"), instances=instances))
    return load_bench(root)


def run_and_score(bench: Bench, model: str, run_dir: Path, condition: str = "both", transform=None) -> Path:
    """The real pipeline: run a simulated model, then `score RUN_DIR --panel rule` (writes scores.json)."""
    from omnivchat.benchmarks.native import run_eval
    from omnivchat.cli.judging import score_run
    from omnivchat.routes import get_route

    run_eval(
        bench,
        get_route(model),
        run_dir,
        system_prompt="x",
        progress=False,
        condition=condition,
        clip_transform=transform,
    )
    score_run(run_dir, None, None, "rule", "mean", None, allow_incomplete=True)  # one input has a broken clip
    assert (run_dir / "scores.json").is_file()
    return run_dir


def make_ablation(bench: Bench, model: str, out: Path) -> Path:
    """Four conditions through real media transforms, diagnosed, written as ablation.json (schema v1)."""
    from omnivchat import media
    from omnivchat.diagnostics import CONDITIONS, diagnose

    transforms = {
        "both": ("both", None),
        "video_only": ("video_only:mute", media.mute_audio),
        "audio_only": ("audio_only", media.blank_video),
        "neither": ("neither:blank", lambda clip: media.mute_audio(media.blank_video(clip))),
    }
    items = {}
    for condition, (label, transform) in transforms.items():
        run_and_score(bench, model, out / condition, label, transform)
        items[condition] = [i["detail"] for i in json.loads((out / condition / "scores.json").read_text())["items"]]
    by = {c: {i["id"]: i["score"] for i in items[c]} for c in CONDITIONS}
    ids = [i["id"] for i in items["both"] if all(by[c][i["id"]] is not None for c in CONDITIONS)]
    aligned = {c: [by[c][i] for i in ids] for c in CONDITIONS}
    diagnosis = diagnose(aligned, n_resamples=500)
    categories = {}
    for code in ("DSLP", "MEA", "MSA", "AH", "ER"):
        keep = [k for k, i in enumerate(ids) if resolve_subcategory(bench.get(i).subcategory).category == code]
        if len(keep) >= 4:
            categories[code] = diagnose({c: [aligned[c][k] for k in keep] for c in CONDITIONS}, n_resamples=500)
        elif keep:
            categories[code] = None
    conditions = {}
    for c in CONDITIONS:
        scored = [i["score"] for i in items[c] if i["score"] is not None]
        conditions[c] = {
            "run_dir": c,
            "n_done": sum(1 for i in items[c] if not i["request_failed"]),
            "n_unscored": sum(1 for i in items[c] if i["score"] is None),
            "mean": sum(scored) / len(scored) if scored else None,
        }
    data = {
        "schema": "omnivchat-ablation-v1",
        "model": model,
        "simulated": True,
        "bench": {"name": bench.info.name, "version": bench.info.version, "n_instances": len(bench.instances)},
        "panel": ["rule"],
        "aggregate": "mean",
        "neither_mode": "blank",
        "conditions": conditions,
        "n_items_used": len(ids),
        "diagnosis": diagnosis.model_dump(mode="json"),
        "categories": {k: v.model_dump(mode="json") if v else None for k, v in categories.items()},
        "self_check": {"skipped": False, "passed": True, "no_fusion_flagged": True, "healthy_flagged": False},
    }
    (out / "ablation.json").write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return out


def write_agreement(bench: Bench, run_dir: Path) -> Path:
    """An agreement study of three judges over the run's replies: the rule judge's own verdicts, a stricter and a
    more lenient judge (hits changed on some items), through the real statistics of `agreement_report`."""
    from omnivchat.judges import Judgment, agreement_report, rule_verdict

    judgments = []
    for k, instance in enumerate(bench.instances):
        tiers = tuple(c.tier for c in instance.rubric)
        hits, _ = rule_verdict(instance, instance.reference)  # sim:healthy answered with the reference
        assert hits is not None
        strict = [h for h in hits if not (k % 3 == 0 and h == max(hits))]
        lenient = list(range(1, len(tiers) + 1))
        for judge, h in (("rule", hits), ("strict", strict), ("lenient", lenient)):
            judgments.append(Judgment(instance.id, instance.subcategory, judge, tiers, frozenset(h)))
    report = agreement_report(judgments, ["rule", "strict", "lenient"], n_resamples=200)
    path = run_dir / "agreement.json"
    path.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return path


@dataclass
class Inputs:
    healthy: Path
    failing: Path
    unscored: Path
    ablation: Path
    refused: Path
    bench: Bench


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory, small_bench_dir: Path) -> Inputs:
    root = tmp_path_factory.mktemp("report-inputs")
    bench = make_checked_bench(small_bench_dir, root / "bench")
    healthy = run_and_score(bench, "sim:healthy", root / "runs" / "healthy")
    write_agreement(bench, healthy)
    # A bench copy with one undecodable clip: that request fails, and is counted as such, never scored.
    broken_root = root / "bench-broken"
    shutil.copytree(bench.root, broken_root)
    (broken_root / "media" / "a03" / "turn1.mp4").write_bytes(b"not a video")
    failing = run_and_score(load_bench(broken_root), "sim:video-blind", root / "runs" / "video-blind")
    # The small bench has no machine checks: every item comes out unscored with its reason.
    unscored = run_and_score(load_bench(small_bench_dir), "sim:healthy", root / "runs" / "unscored")
    ablation = make_ablation(bench, "sim:healthy", root / "ablation-healthy")
    refused = make_ablation(bench, "sim:healthy?prior=0.9", root / "ablation-prior")
    return Inputs(healthy, failing, unscored, ablation, refused, bench)


class _Page(HTMLParser):
    """Tables as lists of rows of (text, title) cells, images, links and script tags of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[tuple[str, str]]]] = {}
        self.images: list[str] = []
        self.links: list[str] = []
        self.scripts = 0
        self._table: list[list[tuple[str, str]]] | None = None
        self._cell: list[str] | None = None
        self._title = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self._table = self.tables.setdefault(a.get("class") or f"table{len(self.tables)}", [])
        elif tag == "tr" and self._table is not None:
            self._table.append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell, self._title = [], a.get("title") or ""
        elif tag == "img":
            self.images.append(a.get("src") or "")
        elif tag == "a":
            self.links.append(a.get("href") or "")
        elif tag in ("script", "link", "iframe"):
            self.scripts += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._table:
            self._table[-1].append((" ".join("".join(self._cell).split()), self._title))
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def parse(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    return page


@pytest.fixture(scope="module")
def report(inputs: Inputs, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from omnivchat.report import build_report

    out = tmp_path_factory.mktemp("report") / "out" / "report.html"
    paths = [inputs.healthy, inputs.failing, inputs.unscored, inputs.ablation, inputs.refused]
    assert build_report(paths, out) == out
    return out


def _row(page: _Page, table: str, name: str) -> list[tuple[str, str]]:
    """The one row whose first cell (the row name) starts with ``name``."""
    rows = [r for r in page.tables[table][1:] if r and r[0][0].startswith(name)]
    assert len(rows) == 1, (name, [r[0][0] for r in page.tables[table]])
    return rows[0]


def test_table1_rows_and_failure_counts(inputs: Inputs, report: Path) -> None:
    page = parse(report.read_text(encoding="utf-8"))
    header = [text for text, _ in page.tables["table1"][0]]
    from omnivchat.scoring import TABLE1_COLUMNS

    assert header == ["Model", *TABLE1_COLUMNS, "Scored / items", "Source"]
    assert TABLE1_COLUMNS[:5] == ("AH", "ER", "MSA", "MEA", "DSLP") and TABLE1_COLUMNS[-1] == "Len"
    names = [r[0][0] for r in page.tables["table1"][1:]]
    # Every simulated row says so; runs of one model are told apart by the tail of their directory, and the
    # ablation's "both" run is a row of its own.
    assert all("simulated (harness check)" in n for n in names)
    assert [n.split(" bench ")[0] for n in names] == [
        "sim:healthy · healthy",
        "sim:video-blind",
        "sim:healthy · unscored",
        "sim:healthy · ablation-healthy/both",
        "sim:healthy?prior=0.9",
    ]
    healthy = json.loads((inputs.healthy / "scores.json").read_text())["metrics"]["table1"]
    row = _row(page, "table1", "sim:healthy · healthy")
    assert "bench checked v1 · panel rule" in row[0][0]
    for k, column in enumerate(header[1:13], start=1):
        value = healthy[column]
        text, title = row[k]
        assert text == ("—" if value is None else f"{value:.3f}")
        assert "runs/healthy/scores.json" in title and f"table1.{column}" in title  # traceable: file and key
    assert row[1][0] == "1.000" and row[9][0] == "1.000"  # AH and Human: sim:healthy answers with the reference
    assert row[13][0] == "13 / 13" and row[14][0].startswith("runs/healthy/scores.json [1]")

    failures = page.tables["failures"]
    assert [t for t, _ in failures[0]] == [
        "Model",
        "Instances",
        "Scored",
        "Unscored",
        "Request failures",
        "Not run",
        "Empty replies",
        "Style-graded",
        "Source",
        "In the viewer",
    ]
    blind = [t for t, _ in _row(page, "failures", "sim:video-blind")]
    assert blind[1:8] == ["13", "12", "1", "1", "0", "0", "0"]  # the undecodable clip: one failed request, unscored
    assert "incomplete: 1 of 13 items have no reply" in blind[0]  # and the run is marked incomplete
    unscored = [t for t, _ in _row(page, "failures", "sim:healthy · unscored")]
    assert unscored[1:8] == ["4", "0", "4", "0", "0", "0", "0"]
    html = report.read_text(encoding="utf-8")
    assert "carry no machine check" in html and "request failed" in html  # unscored reasons are listed


def test_nulls_say_why_and_subcategory_gaps(inputs: Inputs, report: Path) -> None:
    page = parse(report.read_text(encoding="utf-8"))
    small_row = _row(page, "table1", "sim:healthy · unscored")
    assert all(text == "—" for text, _ in small_row[1:11])
    assert all("no data" in title and "unscored/scores.json" in title for _, title in small_row[1:11])
    subs = page.tables["subcategories"]
    assert [t for t, _ in subs[0]][2:4] == ["sim:healthy · healthy", "sim:video-blind"]
    codes = [r[0][0].split()[0] for r in subs[1:]]
    assert codes[:2] == ["ICC", "MDCC"] and "ER" in codes and len(codes) == 12  # taxonomy order, present only
    icc = subs[1 + codes.index("ICC")]
    # sim:video-blind hears the audio-only ICC item: 1.0; the small bench's ICC item is unscored: a gap, not 0.
    assert [t for t, _ in icc[2:]] == ["1.000", "1.000", "—", "1.000", "1.000"]
    assert "unscored: 1 items, none scored" in icc[4][1]
    fgc = subs[1 + codes.index("FGC")]
    assert fgc[4][0] == "—" and "no item of this subcategory" in fgc[4][1]
    svmr = subs[1 + codes.index("SVMR")]
    assert svmr[3][0] == "0.000"  # a true zero (video-blind on a fused item) is a number, not a gap


def test_plots_are_inline_pngs_and_page_is_self_contained(report: Path) -> None:
    from PIL import Image

    html = report.read_text(encoding="utf-8")
    page = parse(html)
    assert len(page.images) == 3  # subcategory bars + one grid plot per ablation directory
    for src in page.images:
        assert src.startswith("data:image/png;base64,")
        image = Image.open(io.BytesIO(base64.b64decode(src.split(",", 1)[1])))
        assert image.format == "PNG" and image.width > 400 and len(image.getcolors(1 << 16) or range(300)) > 20
    assert page.scripts == 0  # no script, stylesheet link or frame: nothing to fetch
    # the one kind of outside link: to the run viewer on this machine (a navigation, never fetched)
    outside = html.replace('href="http://127.0.0.1:8766/#', 'href="#')
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", outside)
    assert not any(link.startswith(("http:", "https:")) for link in page.links if not link.startswith(VIEWER))


VIEWER = "http://127.0.0.1:8766/#"


def test_rows_failure_counts_and_ablation_cells_link_to_the_viewer(report: Path) -> None:
    from urllib.parse import parse_qs

    page = parse(report.read_text(encoding="utf-8"))
    links = [parse_qs(link[len(VIEWER) :]) for link in page.links if link.startswith(VIEWER)]
    assert {"run": ["healthy"]} in links  # a Table 1 row: the run's items
    assert {"run": ["video-blind"], "state": ["failed"]} in links  # its failure count
    assert {"run": ["unscored"], "state": ["unscored"]} in links
    assert {"run": ["healthy"], "state": ["not run"]} in links
    for condition in ("both", "video_only", "audio_only", "neither"):  # each ablation condition's cell
        assert {"run": [f"ablation-healthy/{condition}"], "state": ["failed"]} in links
    assert {"run": ["ablation-healthy/both"]} in links  # its Table 1 row, named as the viewer names it


def test_ablation_grid_and_refusal(inputs: Inputs, report: Path) -> None:
    html = report.read_text(encoding="utf-8")
    healthy_section, refused_section = html.split('<article id="ablation-')[1:3]
    healthy = json.loads((inputs.ablation / "ablation.json").read_text())
    d = healthy["diagnosis"]
    assert "Verdict: <strong>healthy</strong>" in healthy_section
    for c in ("both", "video_only", "audio_only", "neither"):
        lo, hi = d["intervals"][c]
        assert f"{d['means'][c]:.3f}" in healthy_section and f"[{lo:.3f}, {hi:.3f}]" in healthy_section
    lo, hi = d["intervals"]["fusion_gain"]
    assert f"{d['fusion_gain']:.3f}" in healthy_section and f"[{lo:.3f}, {hi:.3f}]" in healthy_section
    assert "REFUSED" not in healthy_section and "passed" in healthy_section
    assert "too few items for a diagnosis" in healthy_section  # categories under 4 items: null in ablation.json
    refused = json.loads((inputs.refused / "ablation.json").read_text())["diagnosis"]
    assert refused["refused"] is True
    assert 'class="refused"' in refused_section and "prior_floor_high" in refused_section
    assert refused["fusion_gain"] is None and "fusion_gain" not in refused["intervals"]
    assert "not reported" in refused_section and "more than the margin" in refused_section
    page = parse(html)
    conditions = page.tables["conditions"]
    assert [r[0][0] for r in conditions[1:5]] == ["both", "video_only", "audio_only", "neither"]


def test_agreement_tables(inputs: Inputs, report: Path) -> None:
    page = parse(report.read_text(encoding="utf-8"))
    agreement = json.loads((inputs.healthy / "agreement.json").read_text())
    judges = page.tables["agreement-judges"]
    assert [t for t, _ in judges[0]][:9] == ["Judge", "AH", "ER", "MSA", "MEA", "DSLP", "Pooled", "Mean", "Gate"]
    assert [r[0][0] for r in judges[1:]] == ["rule", "strict", "lenient"]
    pooled = judges[1][6]
    assert pooled[0] == f"{agreement['rows'][0]['pooled']:.3f}" and "agreement.json" in pooled[1]
    pairs = page.tables["agreement-pairs"]
    assert len(pairs) == 4 and [t for t, _ in pairs[0]][2:4] == ["Agreement", "κ"]
    assert any("Krippendorff" in r[0][0] for r in page.tables["agreement-summary"])


def test_footer_lists_every_input_with_its_sha256(inputs: Inputs, report: Path) -> None:
    page = parse(report.read_text(encoding="utf-8"))
    rows = page.tables["inputs"][1:]
    listed = {Path(report.parent, r[2][0]).resolve(): r[4][0] for r in rows}
    expected = [inputs.healthy / "scores.json", inputs.healthy / "manifest.json", inputs.healthy / "agreement.json"]
    expected += [inputs.failing / "scores.json", inputs.unscored / "scores.json"]
    for grid in (inputs.ablation, inputs.refused):
        expected += [grid / "ablation.json"] + [grid / c / "scores.json" for c in ("both", "neither")]
    for path in expected:
        assert listed[path.resolve()] == hashlib.sha256(path.read_bytes()).hexdigest(), path
    # every reference [n] in a tooltip points at a listed file
    html = report.read_text(encoding="utf-8")
    refs = {int(n) for n in re.findall(r'title="[^"]*?\[(\d+)\] ', html)}
    assert refs and refs <= set(range(1, len(rows) + 1))


def test_a_directory_given_twice_is_one_row(inputs: Inputs, tmp_path: Path) -> None:
    from omnivchat.report import load_inputs

    loaded = load_inputs([inputs.ablation, inputs.ablation / "both", inputs.ablation / "both" / "scores.json"])
    assert len(loaded.runs) == 1 and len(loaded.ablations) == 1
    assert loaded.runs[0].dir == inputs.ablation / "both"


def test_errors_name_the_directory(inputs: Inputs, tmp_path: Path) -> None:
    from omnivchat.report import ReportError, build_report

    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ReportError, match=r"empty: neither scores\.json nor ablation\.json.*omnivchat score RUN_DIR"):
        build_report([inputs.healthy, empty], tmp_path / "r.html")
    unscored = tmp_path / "unscored-run"
    unscored.mkdir()
    shutil.copyfile(inputs.healthy / "manifest.json", unscored / "manifest.json")
    with pytest.raises(ReportError, match=rf"not been scored.*omnivchat score {re.escape(str(unscored))}"):
        build_report([unscored], tmp_path / "r.html")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "scores.json").write_text('{"schema": "something-else"}')
    with pytest.raises(ReportError, match=r"bad/scores\.json: schema 'something-else'"):
        build_report([bad], tmp_path / "r.html")
    assert not (tmp_path / "r.html").exists()


def test_cli(inputs: Inputs, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from omnivchat.cli import app

    out = tmp_path / "report.html"
    result = CliRunner().invoke(app, ["report", str(inputs.healthy), str(inputs.ablation), "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert f"wrote {out}" in " ".join(result.output.split())
    assert "<h2>Table 1</h2>" in out.read_text(encoding="utf-8")
    again = CliRunner().invoke(app, ["report", str(inputs.healthy), "--output", str(out)])
    assert again.exit_code == 2 and "exists; pass --force" in again.output  # never over a file unasked
    forced = CliRunner().invoke(app, ["report", str(inputs.healthy), "--output", str(out), "--force"])
    assert forced.exit_code == 0, forced.output
    result = CliRunner().invoke(app, ["report", str(tmp_path / "nowhere"), "-o", str(out), "--force"])
    assert result.exit_code == 2 and "nowhere" in result.output
    assert "report" in CliRunner().invoke(app, ["--help"]).output


# ---------------------------------------------------------------------------------------------------------------
# In a real browser (Debian's chromium; .ci/run installs it)


def _chromium() -> str | None:
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


def _browse(binary: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    flags = [
        "--headless",
        "--no-sandbox",  # CI runs as root, where Chromium's sandbox cannot start
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
    ]
    return subprocess.run([binary, *flags, *args], capture_output=True, text=True, timeout=120, check=False)


def test_chromium_shows_the_tables_and_plots(report: Path, tmp_path: Path) -> None:
    from PIL import Image

    binary = _chromium()
    if binary is None:
        pytest.skip("no chromium binary found (apt-get install chromium; .ci/run installs it)")
    dom = _browse(binary, tmp_path / "profile", "--dump-dom", report.resolve().as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    page = parse(dom.stdout)
    for table in ("table1", "failures", "subcategories", "conditions", "metrics", "agreement-judges", "inputs"):
        assert page.tables.get(table), table
    assert "sim:video-blind" in dom.stdout and "Fusion gain" in dom.stdout and "REFUSED" in dom.stdout
    assert len(page.images) == 3

    shot = tmp_path / "report.png"
    result = _browse(
        binary, tmp_path / "profile2", f"--screenshot={shot}", "--window-size=1280,2000", report.resolve().as_uri()
    )
    assert result.returncode == 0 and shot.is_file(), result.stderr[-2000:]
    assert shot.stat().st_size > 20_000
    image = Image.open(shot).convert("RGB")
    assert image.size == (1280, 2000)
    colours = image.getcolors(1 << 20)
    assert colours is None or len(colours) > 50  # text, tables and a plot: far from a blank page
    keep = os.environ.get("OMNIVCHAT_KEEP_SCREENSHOT")
    if keep:  # opt-in, to look at the page by hand
        shutil.copyfile(shot, keep)
