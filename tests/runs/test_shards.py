"""Shards: `eval --shard I/N` runs a part of the items chosen by their keys, and `runs merge` joins the shards into
one run whose export is the unsharded run's (the sim model, the native example bench and a public MC benchmark)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from omnivchat.cli import app
from omnivchat.runs import Shard, ShardError, shard_of
from tests.benchmarks.test_public_benchmarks import SPECS, clips, releases  # noqa: F401 (fixtures)

runner = CliRunner()
BENCH = Path(__file__).parents[2] / "examples" / "bench"
ENV = {"COLUMNS": "200"}


def run(*args: str) -> Any:
    return runner.invoke(app, list(args), env=ENV)


def native(out: Path, *extra: str) -> Any:
    return run("eval", "--bench", str(BENCH), "--model", "sim:healthy", "-o", str(out), "--no-progress", *extra)


def exported(run_dir: Path, tmp_path: Path, *extra: str) -> dict[str, Any]:
    target = tmp_path / f"{run_dir.name}.export.json"
    result = run("export", str(run_dir), "-o", str(target), *extra)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(target.read_text())
    return data


def manifest(run_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / "manifest.json").read_text())
    return data


# --- choosing the items -----------------------------------------------------------------------------------------


def test_shard_choice_is_stable_disjoint_and_covering() -> None:
    keys = [f"item-{i}" for i in range(300)]
    for count in (1, 2, 3, 7):
        parts = [[k for k in keys if Shard(index=i, count=count).holds(k)] for i in range(1, count + 1)]
        assert sorted(k for part in parts for k in part) == sorted(keys)  # covering, each once
        assert sum(len(p) for p in parts) == len(keys)  # disjoint
        assert all(parts) or count > len(keys)
        # by identity, not position: the same key lands in the same shard in any order
        assert [k for k in reversed(keys) if Shard(index=1, count=count).holds(k)] == parts[0][::-1]
    # pinned: the sha256 of the key, so the same on every machine and Python (no hash seed)
    assert [shard_of(k, 3) for k in ("ex-svmr-en", "ex-pla-en", "ex-aor-en", "vidA/task1")] == [3, 1, 2, 2]


@pytest.mark.parametrize("text", ["0/3", "4/3", "x", "1/0", "1/2/3", "-1/3", ""])
def test_a_bad_shard_is_one_error_line_before_any_work(text: str, tmp_path: Path) -> None:
    with pytest.raises(ShardError):
        Shard.parse(text)
    result = native(tmp_path / "run", "--shard", text)
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: --shard") and "numbered from 1" in lines[0], result.output
    assert not (tmp_path / "run").exists()


def test_a_shard_runs_its_items_only_and_resumes_only_as_itself(tmp_path: Path) -> None:
    first = native(tmp_path / "s1", "--shard", "1/2")
    assert first.exit_code == 0, first.output
    assert "ran 4 items of shard 1/2" in first.output
    record = manifest(tmp_path / "s1")["shard"]
    assert record["index"] == 1 and record["count"] == 2
    assert sorted(record["items"]["candidate"]) == ["ex-dr-en", "ex-fgc-zh", "ex-mdcc-en", "ex-svmr-en"]
    again = native(tmp_path / "s1", "--shard", "1/2")  # a rerun chooses the same items and sends nothing
    assert again.exit_code == 0 and "4 done (4 reused), 0 failed, 0 requests sent" in again.output
    other = native(tmp_path / "s1", "--shard", "2/2")
    assert other.exit_code == 2 and "holds a different run" in other.output and "shard.index: 1 -> 2" in other.output
    whole = native(tmp_path / "s1")
    assert whole.exit_code == 2 and "shard.index: removed" in whole.output
    shown = run("runs", "show", str(tmp_path / "s1"))
    assert shown.exit_code == 0 and "│         4 │    4 │" in shown.output  # 4 declared, not the bench's 8
    assert "Shard 1/2: the counts are this shard's items" in shown.output
    export = exported(tmp_path / "s1", tmp_path)
    assert export["status"] == "complete" and len(export["records"]) == 4


# --- merging ----------------------------------------------------------------------------------------------------


def test_two_shards_merged_export_equals_one_run(tmp_path: Path) -> None:
    """The whole export file is compared, key by key: an export holds no run timestamp or id (the manifest's
    shareable part, every record's reply, usage, attempts, request hash and cost, the counts and tokens)."""
    for i in (1, 2):
        assert native(tmp_path / f"s{i}", "--shard", f"{i}/2").exit_code == 0
    assert native(tmp_path / "whole").exit_code == 0
    merged = run("runs", "merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "-o", str(tmp_path / "merged"))
    assert merged.exit_code == 0, merged.output
    assert "merged 2 shards: 8 of 8 items done" in merged.output
    assert "shard" not in manifest(tmp_path / "merged")
    assert manifest(tmp_path / "merged") == manifest(tmp_path / "whole")
    assert exported(tmp_path / "merged", tmp_path) == exported(tmp_path / "whole", tmp_path)
    # every attempt and cost row of both shards, none made up
    with sqlite3.connect(tmp_path / "merged" / "store.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM attempts").fetchone()[0] == 8
        assert db.execute("SELECT COUNT(*) FROM attempt_costs").fetchone()[0] == 8
    invocations = (tmp_path / "merged" / "invocations.jsonl").read_text().splitlines()
    assert len(invocations) == 3 and "merge" in json.loads(invocations[-1])
    # the merged run is a run: it resumes as the unsharded one (nothing sent again)
    resumed = native(tmp_path / "merged")
    assert resumed.exit_code == 0 and "8 done (8 reused), 0 failed, 0 requests sent" in resumed.output
    # never over what exists
    again = run("runs", "merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "-o", str(tmp_path / "merged"))
    assert again.exit_code == 2 and "exists" in again.output


def test_a_public_mc_benchmark_shards_and_merges_the_same(releases: dict[str, Path], tmp_path: Path) -> None:  # noqa: F811
    data = releases["worldsense"] / SPECS["worldsense"].annotations

    def ws(out: Path, *extra: str) -> Any:
        args = ("eval", "--benchmark", "worldsense", "--data", str(data), "--model", "sim:healthy", "-o", str(out))
        return run(*args, "--no-progress", *extra)

    for i in (1, 2, 3):
        assert ws(tmp_path / f"w{i}", "--shard", f"{i}/3").exit_code == 0
    assert manifest(tmp_path / "w3")["shard"]["items"] == {}  # no key hashes to 3: an empty shard, said so
    assert ws(tmp_path / "whole").exit_code == 0
    dirs = [str(tmp_path / f"w{i}") for i in (1, 2, 3)]
    merged = run("runs", "merge", *dirs, "-o", str(tmp_path / "merged"))
    assert merged.exit_code == 0, merged.output
    assert exported(tmp_path / "merged", tmp_path) == exported(tmp_path / "whole", tmp_path)
    missing = run("runs", "merge", *dirs[:2], "-o", str(tmp_path / "m2"))
    assert missing.exit_code == 2 and "shard 3/3 missing" in missing.output
    assert not (tmp_path / "m2").exists()


@pytest.fixture
def shards(tmp_path: Path) -> list[Path]:
    dirs = [tmp_path / "s1", tmp_path / "s2"]
    for i, d in enumerate(dirs, start=1):
        assert native(d, "--shard", f"{i}/2").exit_code == 0
    return dirs


def merge(*dirs: Path, out: Path, extra: tuple[str, ...] = ()) -> Any:
    return run("runs", "merge", *map(str, dirs), "-o", str(out), *extra)


def table1(run_dir: Path) -> dict[str, Any]:
    """The Table 1 row of a run with every item replied, under the rule judge: it cannot decide some subcategories
    of the example bench, so the row is incomplete for that reason alone (no Mean over all of them)."""
    result = run("score", str(run_dir), "--panel", "rule", "--allow-incomplete")
    assert result.exit_code == 0, result.output
    scores: dict[str, Any] = json.loads((run_dir / "scores.json").read_text())
    figures: dict[str, Any] = scores["metrics"]["table1"]
    assert figures["n_failed_requests"] == figures["n_not_run"] == 0, result.output
    assert figures["unscored_subcategories"] and scores["incomplete"].startswith("incomplete: Mean over ")
    return figures


def test_a_merged_native_run_scores_as_the_unsharded_run(shards: list[Path], tmp_path: Path) -> None:
    """score, judge and view find the bench in the run's invocations: the merge's line names the shards' bench, and
    the look-up takes the last line that names one (a merge written before it did, or another kind of line)."""
    assert native(tmp_path / "whole").exit_code == 0
    assert merge(*shards, out=tmp_path / "merged").exit_code == 0
    log = tmp_path / "merged" / "invocations.jsonl"
    last = json.loads(log.read_text().splitlines()[-1])
    assert "merge" in last and last["bench"] == str(BENCH.resolve())
    whole = table1(tmp_path / "whole")
    assert whole["n_instances"] == 8 and whole["n_scored"] > 0
    assert table1(tmp_path / "merged") == whole
    # a merge line that names no bench (an older merge): the shards' lines before it still name it
    log.write_text("\n".join([*log.read_text().splitlines()[:-1], json.dumps({"merge": [], "time": 0})]) + "\n")
    assert table1(tmp_path / "merged") == whole
    # a log that is not JSON lines: one error line naming it, no traceback
    log.write_text(log.read_text() + "{not json\n")
    damaged = run("score", str(tmp_path / "merged"), "--panel", "rule")
    assert damaged.exit_code == 2
    assert "invocations.jsonl: line 4 is not JSON" in damaged.output, damaged.output


def test_a_shard_is_scored_against_its_own_items(tmp_path: Path) -> None:
    """score counts a shard's declared items (its manifest's shard.items), as runs show and export do: a complete
    shard is complete, an incomplete one says how many of its own items have no reply."""
    assert native(tmp_path / "s1", "--shard", "1/2").exit_code == 0
    figures = table1(tmp_path / "s1")
    assert figures["n_instances"] == 4 and figures["n_not_run"] == 0
    scores = json.loads((tmp_path / "s1" / "scores.json").read_text())
    assert sorted(i["key"] for i in scores["items"]) == sorted(manifest(tmp_path / "s1")["shard"]["items"]["candidate"])
    # --limit 3: only those of the run's first 3 items that are in shard 2 run; the shard still declares its 4
    assert native(tmp_path / "s2", "--shard", "2/2", "--limit", "3").exit_code == 0
    declared = manifest(tmp_path / "s2")["shard"]["items"]["candidate"]
    with sqlite3.connect(tmp_path / "s2" / "store.sqlite") as db:
        ran = db.execute("SELECT COUNT(*) FROM items WHERE kind = 'candidate'").fetchone()[0]
    assert len(declared) == 4 and 0 < ran < 4
    partial = run("score", str(tmp_path / "s2"), "--panel", "rule")
    assert f"incomplete: {4 - ran} of 4 items have no reply (0 failed requests, {4 - ran} not run)" in partial.output
    scores = json.loads((tmp_path / "s2" / "scores.json").read_text())
    assert scores["complete"] is False and scores["metrics"]["table1"]["n_instances"] == 4


def test_a_missing_or_duplicated_shard_or_item_is_refused(shards: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "merged"
    missing = merge(shards[0], out=out)
    assert missing.exit_code == 2 and "shard 2/2 missing" in missing.output
    twice = merge(shards[0], shards[0], shards[1], out=out)
    assert twice.exit_code == 2 and "shard 1/2 given twice" in twice.output
    # an item in two shards (a manifest edited by hand): named
    path = shards[0] / "manifest.json"
    original = path.read_text()
    data = json.loads(original)
    data["shard"]["items"]["candidate"].append("ex-er-en")
    path.write_text(json.dumps(data))
    dup = merge(*shards, out=out)
    assert dup.exit_code == 2 and "item ex-er-en (candidate) is in two shards" in dup.output, dup.output
    # an item in no shard: named
    data = json.loads(original)
    data["shard"]["items"]["candidate"].remove("ex-dr-en")
    path.write_text(json.dumps(data))
    lost = merge(*shards, out=out)
    assert lost.exit_code == 2 and "an item is missing" in lost.output, lost.output
    assert not out.exists() and not any(p.name.startswith(".merged") for p in tmp_path.iterdir())
    not_a_shard = tmp_path / "whole"
    assert native(not_a_shard).exit_code == 0
    plain = merge(not_a_shard, shards[1], out=out)
    assert plain.exit_code == 2 and "not a shard" in plain.output


def test_an_output_inside_equal_to_or_holding_a_shard_is_refused(shards: list[Path], tmp_path: Path) -> None:
    before = {p: p.stat().st_mtime_ns for d in shards for p in sorted(d.rglob("*"))}
    for out, where in [
        (shards[0] / "inside", "is inside"),
        (shards[1] / "deep" / "er", "is inside"),
        (shards[1], "is"),
        (tmp_path, "contains"),
    ]:
        result = merge(*shards, out=out)
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert result.exit_code == 2 and len(lines) == 1, result.output
        assert f"{out} {where} the shard" in lines[0] and "apart from the shards" in lines[0], result.output
    assert {p: p.stat().st_mtime_ns for d in shards for p in sorted(d.rglob("*"))} == before  # nothing written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s1", "s2"]


def test_shards_of_different_runs_are_refused(shards: list[Path], tmp_path: Path) -> None:
    other = tmp_path / "other2"
    assert native(other, "--shard", "2/2", "--temperature", "0.7").exit_code == 0
    result = merge(shards[0], other, out=tmp_path / "merged")
    assert result.exit_code == 2 and "is a shard of another run" in result.output and "temperature" in result.output
    three = tmp_path / "t2"
    assert native(three, "--shard", "2/3").exit_code == 0
    split = merge(shards[0], three, out=tmp_path / "merged")
    assert split.exit_code == 2 and "split the items differently" in split.output
    assert not (tmp_path / "merged").exists()


def test_an_incomplete_shard_is_refused_unless_allowed_and_then_the_run_says_so(tmp_path: Path) -> None:
    done = tmp_path / "s1"
    assert native(done, "--shard", "1/2").exit_code == 0
    broken = tmp_path / "s2"
    result = native(broken, "--shard", "2/2", "--limit", "3")  # of the bench's first 3, the 2 in this shard
    assert result.exit_code == 0, result.output
    assert len(manifest(broken)["shard"]["items"]["candidate"]) == 4  # it declares its whole part
    refused = merge(done, broken, out=tmp_path / "merged")
    assert refused.exit_code == 2 and f"incomplete shard: {broken} (shard 2/2)" in refused.output
    allowed = merge(done, broken, out=tmp_path / "merged", extra=("--allow-incomplete",))
    assert allowed.exit_code == 0 and "the merged run is incomplete" in allowed.output
    assert "merged 2 shards: 6 of 8 items done" in allowed.output
    export = exported(tmp_path / "merged", tmp_path, "--allow-incomplete")
    assert export["status"] == "incomplete" and export["counts"]["candidate"]["not_run"] == 2
    refused_export = run("export", str(tmp_path / "merged"), "-o", str(tmp_path / "x.json"))
    assert refused_export.exit_code == 2 and "incomplete" in refused_export.output


def test_socialomni_shards_merge_to_the_unsharded_run_and_its_summary(tmp_path: Path) -> None:
    from socialomni_factory import make_socialomni

    annotations, media, _ = make_socialomni(tmp_path / "so")

    def so(out: Path, *extra: str) -> Any:
        args = ("eval", "--benchmark", "socialomni", "--data", str(annotations), "--media", str(media))
        return run(*args, "--model", "sim:healthy", "--limit", "4", "-o", str(out), "--no-progress", *extra)

    for i in (1, 2):
        assert so(tmp_path / f"s{i}", "--shard", f"{i}/2").exit_code == 0
    assert so(tmp_path / "whole").exit_code == 0
    merged = run("runs", "merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "-o", str(tmp_path / "merged"))
    assert merged.exit_code == 0, merged.output
    assert "10 of 10 items done" in merged.output
    # How is judged later: both exports are incomplete alike; compared as JSON values (the order of keys aside)
    ours = exported(tmp_path / "merged", tmp_path, "--allow-incomplete")
    assert ours == exported(tmp_path / "whole", tmp_path, "--allow-incomplete")
    summary = json.loads((tmp_path / "merged" / "summary.json").read_text())  # written again from the merged store
    assert summary == json.loads((tmp_path / "whole" / "summary.json").read_text())


def test_a_damaged_or_busy_shard_is_one_error_line(shards: list[Path], tmp_path: Path) -> None:
    from omnivchat.runs import run_lock

    with run_lock(shards[1], "eval"):  # a writer at work: its counts are progress, not a shard to merge
        busy = merge(*shards, out=tmp_path / "merged")
    assert busy.exit_code == 2 and f"{shards[1]}: being written now by pid" in busy.output
    (shards[1] / "store.sqlite").write_bytes(b"not a database" * 100)
    damaged = merge(*shards, out=tmp_path / "merged")
    assert damaged.exit_code == 2, damaged.output
    assert len(damaged.output.strip().splitlines()) == 1 and str(shards[1]) in damaged.output
    assert not (tmp_path / "merged").exists() and not any(p.name.startswith(".merged") for p in tmp_path.iterdir())


def test_shards_judged_before_the_merge_keep_their_verdicts_in_the_merged_run(
    shards: list[Path], tmp_path: Path
) -> None:
    """Each shard judged by an LLM panel on its own machine, then merged: the merged run holds every verdict (a
    judge pass on it sends nothing) and scores as the unsharded run judged by the same panel."""
    from omnivchat.testing import Behaviour, LoopbackServer, message_text

    def verdicts(request: dict[str, Any]) -> Behaviour:  # judge A meets every tier, judge B the gate only
        if "checklist of 7" in message_text(request):
            return Behaviour(text='{"hits": [1, 2, 3, 4, 5, 6, 7], "reasoning": "fine"}')
        hits = [1, 2, 3] if request["model"] == "judge-a" else [1]
        return Behaviour(text=json.dumps({"hits": hits, "reasoning": "checked"}))

    with LoopbackServer(rules=verdicts) as server:
        judges = tmp_path / "judges.json"
        entries = [{"name": n, "model": f"judge-{n.lower()}", "base_url": server.base_url} for n in ("A", "B")]
        judges.write_text(json.dumps({"judges": entries, "panels": {"default": ["A", "B"]}}))
        panel = ("--judges", str(judges), "--panel", "default", "--style-judge", "A", "--no-progress")
        assert native(tmp_path / "whole").exit_code == 0
        for run_dir in [*shards, tmp_path / "whole"]:
            judged = run("judge", str(run_dir), *panel)
            assert judged.exit_code == 0, judged.output
        sent = server.count
        assert sent == 2 * 3 * 8  # each of the 8 replies judged by A, B and for style, on the shards and on whole
        assert merge(*shards, out=tmp_path / "merged").exit_code == 0
        again = run("judge", str(tmp_path / "merged"), *panel)
        assert again.exit_code == 0, again.output
        assert server.count == sent  # every verdict came with the shards
    scored = {}
    for name in ("whole", "merged"):
        result = run("score", str(tmp_path / name), *panel[:-1])
        assert result.exit_code == 0, result.output
        scores = json.loads((tmp_path / name / "scores.json").read_text())
        assert scores["complete"] is True
        scored[name] = scores["metrics"]["table1"]
    assert scored["merged"] == scored["whole"] and scored["whole"]["n_scored"] == 8
