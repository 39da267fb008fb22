"""Table 3 and the paired comparisons in the HTML report, from real runs: a bench with single-turn subcategories
and their multi-turn extensions (clips from examples/bench), run on the simulated route through `eval`, scored by
the offline rule judge through `score`, compared through `compare`, reported through `report`; every number on
the page checked against a computation of its own from the scores files."""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import statistics
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnivchat.bench import Bench, BenchInfo, Instance, load_bench, save_bench
from omnivchat.cli import app

EXAMPLES = Path(__file__).parent.parent.parent / "examples" / "bench"
runner = CliRunner()
# Per subcategory: how many items, and what each needs (the simulated models' skills decide who answers what).
LAYOUT = {
    "ICC": 4,
    "MDCC": 3,
    "SVMR": 4,
    "MVMS": 3,
    "AR": 2,
    "DR": 3,
    "MRR": 3,
    "SPSD": 3,
    "MIST": 2,
    "STIC": 3,
    "MTIC": 1,  # one multi-turn item: a mean, but no standard error
    "AOR": 2,  # in no pair
}
NEEDS = (["video", "audio"], ["audio"], ["video"])
PAIRS = (("ICC",), "MDCC"), (("SVMR",), "MVMS"), (("AR", "DR"), "MRR"), (("SPSD",), "MIST"), (("STIC",), "MTIC")
MODEL = "sim:healthy?video=0.6&audio=0.7&fusion=0.8&seed=2"  # per-pair means that vary on both sides


def rubric(unchecked: bool) -> list[dict]:
    return [
        {"tier": 0, "text": "English.", "check": {"language": "en"}},
        {"tier": 1, "text": "Names the mug.", "check": {"any_of": ["mug"]}},
        {"tier": 2, "text": "Says where.", **({} if unchecked else {"check": {"any_of": ["shelf"]}})},
    ]


def make_bench(root: Path) -> Bench:
    """Items of every subcategory in LAYOUT on the example clips (multi-turn items reuse the MDCC example's two
    turns); one SVMR item has a criterion with no machine check, so it stays unscored."""
    instances = []
    for code, count in LAYOUT.items():
        multi = code in ("MDCC", "MVMS", "MRR", "MIST", "MTIC")
        for k in range(count):
            id_ = f"{code.lower()}-{k}"
            source = EXAMPLES / "media" / ("ex-mdcc-en" if multi else "ex-dr-en")
            turns = []
            for n in (1, 2) if multi else (1,):
                video = f"media/{id_}/turn{n}.mp4"
                (root / video).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source / f"turn{n}.mp4", root / video)
                turns.append({"video": video, **({"reply": "Sure, go ahead."} if multi and n == 1 else {})})
            instances.append(
                Instance.model_validate(
                    {
                        "id": id_,
                        "subcategory": code,
                        "language": "en",
                        "turns": turns,
                        # each its own reference: identical requests would share one stored reply
                        "reference": f"Your mug is on the top shelf ({id_}).",
                        "rubric": rubric(unchecked=id_ == "svmr-3"),
                        "requires": NEEDS[k % 3],
                    }
                )
            )
    save_bench(Bench(root=root, info=BenchInfo(name="extensions", version="1"), instances=instances))
    return load_bench(root)


def invoke(*args: str | Path) -> str:
    result = runner.invoke(app, list(map(str, args)), env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.output


@dataclass
class Made:
    model: Path
    blind: Path
    partial: Path
    comparison: Path
    report: Path


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Made:
    root = tmp_path_factory.mktemp("analyses")
    bench = make_bench(root / "bench").root
    dirs = {}
    for name, model, extra in (
        ("model", MODEL, ()),
        ("blind", "sim:video-blind", ()),
        ("partial", "sim:healthy", ("--limit", "20")),  # incomplete: the last 13 items never run
    ):
        run = root / "runs" / name
        invoke("eval", "--bench", bench, "--model", model, "-o", run, "--no-progress", *extra)
        invoke("score", run, "--allow-incomplete")
        dirs[name] = run
    comparison = root / "model-vs-blind.json"
    invoke("compare", dirs["blind"], dirs["model"], "-o", comparison)
    report = root / "report.html"
    invoke("report", dirs["model"], dirs["blind"], dirs["partial"], comparison, "-o", report)
    return Made(dirs["model"], dirs["blind"], dirs["partial"], comparison, report)


def expected_table3(run: Path) -> dict:
    """Table 3 from scores.json by a route of its own: statistics, math and scipy on the items."""
    from scipy.stats import pearsonr, spearmanr, ttest_rel

    items = [i["detail"] for i in json.loads((run / "scores.json").read_text())["items"]]
    rows, pairs = [], []
    for singles, multi in PAIRS:
        sides = []
        for codes in (singles, (multi,)):
            all_ = [i for i in items if i["subcategory"] in codes]
            scored = [i["score"] for i in all_ if i["score"] is not None]
            mean = statistics.fmean(scored) if scored else None
            sd = statistics.stdev(scored) if len(scored) > 1 else 0.0
            se = sd / math.sqrt(len(scored)) if sd > 0 else None  # no SE of n=1, nor of scores that are all equal
            sides.append((mean, se, f"{len(scored)} / {len(all_)}"))
        (sm, sse, sn), (mm, mse, mn) = sides
        gap = None if sm is None or mm is None else mm - sm
        gap_se = None if sse is None or mse is None else math.sqrt(sse**2 + mse**2)
        rows.append((sm, sse, sn, mm, mse, mn, gap, gap_se))
        if gap is not None:
            pairs.append((sm, mm))
    singles_, multis = [p[0] for p in pairs], [p[1] for p in pairs]
    t = ttest_rel(multis, singles_) if len(pairs) >= 2 else None
    return {
        "rows": rows,
        "n": len(pairs),
        "mean_gap": statistics.fmean(m - s for s, m in pairs) if pairs else None,
        "t": t,
        "pearson": pearsonr(singles_, multis) if len(pairs) >= 3 else None,
        "spearman": spearmanr(singles_, multis) if len(pairs) >= 3 else None,
    }


def blocks(html: str, section: str) -> list[str]:
    part = html.split(f'<section id="{section}">')[1].split("</section>")[0]
    return part.split("<article")[1:]


def fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def test_table3_matches_the_scores_files(made: Made) -> None:
    from report.test_report import parse

    html = made.report.read_text(encoding="utf-8")
    articles = blocks(html, "table3")
    assert len(articles) == 3 and "sim:healthy?video=0.6" in articles[0] and "sim:video-blind" in articles[1]
    for run, article in zip((made.model, made.blind), articles[:2], strict=True):
        page = parse("<table" + article.split("<table", 1)[1])
        want = expected_table3(run)
        got = page.tables["table3"]
        assert [t for t, _ in got[0]] == [
            "Single", "Multi", "Single mean", "SE", "Scored / items", "Multi mean", "SE", "Scored / items", "Gap",
            "SE (gap)", "|Gap| ≤ SE",
        ]  # fmt: skip
        assert [r[0][0] for r in got[1:]] == ["ICC", "SVMR", "AR and DR", "SPSD", "STIC"]
        for row, (sm, sse, sn, mm, _, mn, gap, gap_se) in zip(got[1:], want["rows"], strict=True):
            text = [t for t, _ in row]
            assert text[2] == fmt(sm) and text[4] == sn and text[5] == fmt(mm) and text[7] == mn
            n = sn.split(" / ")[0]
            assert text[3] == (
                fmt(sse) if sse is not None else "n/a (n=1)" if n == "1" else "n/a (every score is the same)"
            )
            assert text[8] == fmt(gap)
            if gap_se is not None:
                assert text[9] == fmt(gap_se) and text[10] == ("yes" if abs(gap) <= gap_se else "no")
            assert "scores.json" in row[2][1]  # every number traces to its file
        stic = [t for t, _ in got[5]]
        assert stic[6] == "n/a (n=1)" and stic[9] == "n/a (multi-turn: n=1)"  # one MTIC item: a mean, no SE
        svmr = [t for t, _ in got[2]]
        assert svmr[4] == "3 / 4"  # the unchecked SVMR item is counted, not averaged
        summary = {r[0][0]: r[1][0] for r in page.tables["table3-tests"][1:]}
        assert summary["Pairs with both means"] == str(want["n"]) == "5"
        assert summary["Mean gap"] == fmt(want["mean_gap"])
        t = want["t"]
        assert summary["Paired t-test, multi − single (t(4))"] == f"{t.statistic:.2f}"
        assert summary["t-test p (two-sided)"] in (f"{t.pvalue:.3f}", f"{t.pvalue:.1e}")
        for name, key in (("Pearson r", "pearson"), ("Spearman ρ", "spearman")):
            value = want[key].statistic
            shown = summary[f"{name}, single vs multi means"]
            assert shown == ("n/a (every single-turn mean is the same)" if math.isnan(value) else f"{value:.3f}")


def test_an_incomplete_run_is_flagged_and_its_gaps_say_why(made: Made) -> None:
    from report.test_report import parse

    article = blocks(made.report.read_text(encoding="utf-8"), "table3")[2]
    assert "INCOMPLETE" in article and "incomplete: 13 of 33 items have no reply" in article
    page = parse("<table" + article.split("<table", 1)[1])
    rows = {r[0][0]: [t for t, _ in r] for r in page.tables["table3"][1:]}
    # --limit 20 ran ICC, MDCC, SVMR, MVMS (14 items), AR, DR and one MRR item: the rest have no reply
    assert rows["SPSD"][2] == "n/a (0 of 3 scored)" and rows["SPSD"][5] == "n/a (0 of 2 scored)"
    assert rows["SPSD"][8] == "n/a"
    assert rows["AR and DR"][5] == "1.000" and rows["AR and DR"][6] == "n/a (n=1)" and rows["AR and DR"][7] == "1 / 3"
    # a gap, but no standard error of it: each side says why (every single-turn score is 1; one multi-turn item)
    assert rows["AR and DR"][3] == "n/a (every score is the same)"
    assert rows["AR and DR"][9] == "n/a (single-turn: every score is the same; multi-turn: n=1)"
    summary = {r[0][0]: r[1][0] for r in page.tables["table3-tests"][1:]}
    assert summary["Pairs with both means"] == "3"
    # sim:healthy answers every item it ran: every mean is 1, every gap 0: t, its p and the correlations are
    # undefined, and say so (the p was printed as 1.000 beside "every difference is 0")
    assert summary["Paired t-test, multi − single (t(2))"] == "n/a (every difference is 0)"
    assert summary["t-test p (two-sided)"] == "n/a (every difference is 0)"
    assert summary["Pearson r, single vs multi means"] == "n/a (every single-turn mean is the same)"
    assert summary["Spearman ρ p"] == "n/a (every single-turn mean is the same)"
    assert "1.000" not in [v for k, v in summary.items() if "t-test" in k or " p" in k]


def test_paired_comparison_section(made: Made) -> None:
    from report.test_report import parse

    c = json.loads(made.comparison.read_text())
    html = made.report.read_text(encoding="utf-8")
    assert '<a href="#comparisons">Paired comparisons</a>' in html
    (article,) = blocks(html, "comparisons")
    assert f"Verdict: <strong>{c['verdict']}</strong>" in article
    page = parse("<table" + article.split("<table", 1)[1])
    runs = page.tables["comparison-runs"]
    assert [r[1][0].split(" simulated")[0] for r in runs[1:]] == ["sim:video-blind", MODEL]
    assert runs[1][5][0] == f"{c['stats']['mean_a']:.3f}" and runs[2][5][0] == f"{c['stats']['mean_b']:.3f}"
    assert runs[1][3][0] == f"{c['a']['n_scored']} / {c['a']['n_items']}" == "32 / 33"
    stats = {r[0][0]: r[1] for r in page.tables["comparison-stats"][1:]}
    assert stats["Items paired (scored in both runs)"][0] == str(c["n_paired"]) == "32"
    assert stats["Mean difference B − A"][0] == f"{c['stats']['difference']:+.3f}"
    assert "model-vs-blind.json → stats.difference = " in stats["Mean difference B − A"][1]  # traced to its file
    lo, hi = c["stats"]["ci"]
    assert stats["95% paired-bootstrap interval (10000 resamples, seed 0)"][0] == f"[{lo:+.3f}, {hi:+.3f}]"
    assert stats["Items unscored in A or B"][0] == "1"
    left = page.tables["comparison-left-out"]
    assert [t for t, _ in left[1]][:1] == ["candidate/svmr-3"] and "no machine check" in left[1][1][0]
    inputs = {Path(r[2][0]).name: r[4][0] for r in parse(html).tables["inputs"][1:]}
    assert inputs["model-vs-blind.json"] == hashlib.sha256(made.comparison.read_bytes()).hexdigest()


def test_bad_comparison_files_are_named(made: Made, tmp_path: Path) -> None:
    from omnivchat.report import ReportError, build_report

    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(ReportError, match=r"broken\.json: not valid JSON"):
        build_report([made.model, broken], tmp_path / "r.html")
    other = tmp_path / "other.json"
    other.write_text('{"schema": "something-else"}')
    with pytest.raises(ReportError, match=r"other\.json: not a comparison file \(schema 'something-else'"):
        build_report([other], tmp_path / "r.html")
    damaged = tmp_path / "damaged.json"
    data = json.loads(made.comparison.read_text())
    del data["stats"]
    damaged.write_text(json.dumps(data))
    with pytest.raises(ReportError, match=r"damaged\.json: not a valid comparison file \(stats: Field required"):
        build_report([damaged], tmp_path / "r.html")
    # a directory holding comparison.json is read like the file
    folder = tmp_path / "cmp"
    folder.mkdir()
    shutil.copyfile(made.comparison, folder / "comparison.json")
    build_report([folder], tmp_path / "only-comparison.html")
    assert "Paired comparisons" in (tmp_path / "only-comparison.html").read_text(encoding="utf-8")
    assert not (tmp_path / "r.html").exists()
