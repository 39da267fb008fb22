"""The typed files of a run directory (omnivchat.runs): manifests of every kind, the status of a run directory and
the export of a native run. Writer and reader use the same model; a manifest written by the code before typed
files (plain dicts) resumes with the new code; older files load with defaults that say what they meant; a damaged
file is one line naming it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import omnivchat
from omnivchat._canonical import sha256_file, sha256_json, sha256_text
from omnivchat.bench import Bench, Instance
from omnivchat.benchmarks import BenchmarkExport, read_export
from omnivchat.benchmarks import export as export_run
from omnivchat.benchmarks import status as run_status
from omnivchat.benchmarks.native import (
    RunManifest,
    build_manifest,
    load_manifest,
    run_eval,
)
from omnivchat.cli import app
from omnivchat.routes import Route, get_route
from omnivchat.runs import (
    PROTOCOL,
    Manifest,
    RunError,
    RunStatus,
    read_manifest,
    write_or_check_manifest,
)
from omnivchat.runs._manifest import source_hash
from omnivchat.socialomni import (
    SOCIALOMNI_JUDGING_PROTOCOL,
    SOCIALOMNI_PROTOCOL,
    SocialOmniJudgingManifest,
    SocialOmniManifest,
)

EXPORT_SCHEMA = "omnivchat-benchmark-export-v1"  # one export schema for every benchmark
runner = CliRunner()


# ---------------------------------------------------------------------------------------------------------------
# What omnivchat wrote before run files were typed: build_manifest, bench_identity and route_identity as dicts,
# copied from that code, and written as json.dumps(manifest, indent=2, ensure_ascii=False).


def legacy_manifest(
    bench: Bench,
    instances: list[Instance],
    route: Route,
    system_prompt: str,
    label: str,
    sampling: dict[str, Any],
    condition: str,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    clips: dict[str, str] = {}
    for instance in instances:
        for turn in instance.turns:
            if turn.video not in clips:
                path = bench.media_path(turn)
                clips[turn.video] = sha256_file(path) if path.is_file() else "missing"
    rows = [json.loads(i.model_dump_json()) for i in instances]
    settings = route.settings.model_dump(mode="json", exclude={"base_url"})
    return {
        "protocol": "omnivchat-run-v1",
        "benchmark": "omnivchat",
        "bench": {
            "name": bench.info.name,
            "version": bench.info.version,
            "instances_sha256": sha256_json(rows),
            "n_instances": len(instances),
            "clips": clips,
        },
        "prompts": {"system": {"sha256": sha256_text(system_prompt), "source": label}},
        "route": {
            "model": route.model_id,
            "kind": route.settings.route,
            "endpoint": route.endpoint,
            "settings": settings,
        },
        "sampling": sampling,
        "condition": condition,
        "simulated": route.settings.route == "sim",
        "package": {"version": omnivchat.__version__, "source_sha256": source_hash()},
        **(extra or {}),
    }


def write_legacy(run_dir: Path, manifest: dict[str, Any]) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def run(bench: Bench, run_dir: Path, **kwargs: Any):
    return run_eval(
        bench,
        get_route("sim:healthy"),
        run_dir,
        system_prompt="Be brief.",
        system_prompt_label="test",
        progress=False,
        **kwargs,
    )


# ---------------------------------------------------------------------------------------------------------------
# The native manifest


def test_the_manifest_model_writes_the_json_the_dict_version_wrote(small_bench: Bench, tmp_path: Path) -> None:
    route = get_route("sim:healthy")
    extra = {"ablation": {"self_check": "ran"}}
    sampling = {"temperature": 0.3, "top_p": None, "max_tokens": None, "seed": None}
    typed = build_manifest(
        bench=small_bench,
        instances=small_bench.instances,
        route=route,
        system_prompt="Be brief.",
        system_prompt_label="test",
        sampling=sampling,
        condition="video_only:mute",
        extra=extra,
    )
    old = legacy_manifest(
        small_bench, small_bench.instances, route, "Be brief.", "test", sampling, "video_only:mute", extra
    )
    # the one field added since: which prompt ran, said plainly (a manifest without it still loads and resumes)
    old["prompt_labels"] = {"system": "user file test (sha256 " + hashlib.sha256(b"Be brief.").hexdigest()[:12] + ")"}
    assert isinstance(typed, RunManifest) and typed.dump() == old  # field order aside
    assert typed.value("ablation") == {"self_check": "ran"}  # a caller's field, kept as given
    write_or_check_manifest(tmp_path / "run", typed)
    assert json.loads((tmp_path / "run" / "manifest.json").read_text()) == old
    assert read_manifest(tmp_path / "run") == typed  # writer and reader agree


def test_a_run_made_by_the_dict_code_resumes_with_the_typed_code(small_bench: Bench, tmp_path: Path) -> None:
    """The manifest the previous code wrote, then the run resumed: no "what changed" list, no code warning."""
    out = tmp_path / "run"
    sampling = {"temperature": None, "top_p": None, "max_tokens": None, "seed": None}
    old = legacy_manifest(
        small_bench, small_bench.instances, get_route("sim:healthy"), "Be brief.", "test", sampling, "both"
    )
    write_legacy(out, old)
    summary = run(small_bench, out)
    assert summary.resumed and summary.done == 4 and summary.notes == []
    assert json.loads((out / "manifest.json").read_text()) == old  # left as it was
    again = run(small_bench, out)
    assert again.resumed and again.reused == 4


def test_a_manifest_without_benchmark_resumes_and_reads_as_the_native_bench(small_bench: Bench, tmp_path: Path):
    out = tmp_path / "run"
    sampling = {"temperature": None, "top_p": None, "max_tokens": None, "seed": None}
    old = legacy_manifest(
        small_bench, small_bench.instances, get_route("sim:healthy"), "Be brief.", "test", sampling, "both"
    )
    del old["benchmark"]  # made before benchmark names were recorded
    write_legacy(out, old)
    assert run(small_bench, out).resumed  # the protocol implies the benchmark
    old["written_by_a_newer_version"] = {"kept": True}  # read (not resumed: it is not this version's run)
    write_legacy(out, old)
    manifest = load_manifest(out)
    assert manifest.benchmark == "omnivchat" and manifest.value("written_by_a_newer_version") == {"kept": True}
    assert manifest.dump(as_read=True) == old  # read back as written, no default filled in
    assert "benchmark" not in json.loads((out / "manifest.json").read_text())
    shown = runner.invoke(app, ["runs", "show", str(out)])
    assert shown.exit_code == 0 and "small v1" in shown.output


def test_a_changed_setting_still_lists_what_changed(small_bench: Bench, tmp_path: Path) -> None:
    from omnivchat.runs import ManifestMismatch

    out = tmp_path / "run"
    run(small_bench, out)
    with pytest.raises(ManifestMismatch, match="condition"):
        run(small_bench, out, condition="neither:blank")


def test_a_manifest_from_another_code_version_warns(small_bench: Bench, tmp_path: Path) -> None:
    out = tmp_path / "run"
    sampling = {"temperature": None, "top_p": None, "max_tokens": None, "seed": None}
    old = legacy_manifest(
        small_bench, small_bench.instances, get_route("sim:healthy"), "Be brief.", "test", sampling, "both"
    )
    old["package"] = {"version": "0.0.1", "source_sha256": "0" * 64}
    write_legacy(out, old)
    summary = run(small_bench, out)
    assert summary.resumed and "version 0.0.1" in summary.notes[0]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{not json", "cannot read the manifest"),
        ('{"protocol": "omnivchat-run-v1", "bench": 3}', "not a valid omnivchat-run-v1 manifest (bench"),
        ("[1, 2]", "not a run manifest"),
    ],
)
def test_a_damaged_manifest_is_one_line_naming_it(tmp_path: Path, text: str, expected: str) -> None:
    (tmp_path / "manifest.json").write_text(text)
    (tmp_path / "store.sqlite").write_bytes(b"")
    with pytest.raises(RunError) as caught:
        run_status(tmp_path)
    message = str(caught.value)
    assert str(tmp_path / "manifest.json") in message and expected in message and "\n" not in message
    shown = runner.invoke(app, ["runs", "show", str(tmp_path)])
    assert shown.exit_code == 2 and "Traceback" not in shown.output


# ---------------------------------------------------------------------------------------------------------------
# SocialOmni manifests: read typed, hashed as written


SO_MANIFEST = {  # the seed-003 format, as omnivchat wrote it before benchmark names were recorded
    "protocol": "omnivchat-socialomni-v1",
    "model": "gemini-3.8-flash",
    "endpoint": "https://example.invalid/v1",
    "route": {"route": "openai", "thinking": False, "api_key_env": "OPENAI_API_KEY"},
    "source_sha256": {"level1": "a" * 64, "level2": None},
    "source_media_sha256": {"who-1": "b" * 64, "when-video_0001": "c" * 64, "how-video_0001": "c" * 64},
    "prompts": {"who": "d" * 64, "when": "e" * 64, "how": "f" * 64},
    "temperature": 0.3,
    "top_p": 1,
    "max_tokens": 8192,
    "prefix_encoding": {"video": "libx264", "crf": 18},
    "who_cutoff_rule": "interval-end-or-explicit-point",
    "tasks": ["when", "how", "who"],
    "limit": None,
    "harness_sha256": "9" * 64,
}


def test_a_socialomni_manifest_reads_typed_and_hashes_as_written(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps(SO_MANIFEST))
    manifest = read_manifest(tmp_path)
    assert isinstance(manifest, SocialOmniManifest)
    assert manifest.benchmark == "socialomni" and manifest.condition is None and manifest.tasks == SO_MANIFEST["tasks"]
    assert manifest.value("top_p") == 1 and manifest.value("temperature") == 0.3  # kept as written: int stays int
    assert manifest.sha256() == sha256_json(SO_MANIFEST)  # what a judging directory records of its run
    assert manifest.dump(as_read=True) == SO_MANIFEST


def test_the_socialomni_manifest_model_writes_the_seed_format(tmp_path: Path) -> None:
    new = {**SO_MANIFEST, "benchmark": "socialomni"}
    typed = SocialOmniManifest.model_validate(new)
    assert typed.dump() == new  # no condition written for the clips as they are, no default added
    with_condition = SocialOmniManifest.model_validate({**new, "condition": "neither:blank"})
    assert with_condition.dump()["condition"] == "neither:blank"


def test_a_judging_manifest_reads_typed(tmp_path: Path) -> None:
    judging = {
        "protocol": SOCIALOMNI_JUDGING_PROTOCOL,
        "panel": "standard",
        "candidate_manifest_sha256": sha256_json(SO_MANIFEST),
        "candidate_rows_sha256": "1" * 64,
        "contexts_sha256": "2" * 64,
        "rubric_sha256": "3" * 64,
        "judges": [{"name": "a", "model": "m"}, {"name": "b", "model": "m"}],
        "sampling": {"temperature": 0.0},
        "harness_sha256": "4" * 64,
    }
    (tmp_path / "manifest.json").write_text(json.dumps(judging))
    manifest = read_manifest(tmp_path)
    assert isinstance(manifest, SocialOmniJudgingManifest) and manifest.judge_names == ["a", "b"]
    assert manifest.dump() == judging  # no benchmark field added to the seed format
    assert SOCIALOMNI_PROTOCOL + "-judging" == SOCIALOMNI_JUDGING_PROTOCOL


def test_another_benchmarks_manifest_reads_as_the_generic_model(tmp_path: Path) -> None:
    data = {"protocol": "toyqa-run-v1", "benchmark": "toyqa", "items": ["q1"]}
    (tmp_path / "manifest.json").write_text(json.dumps(data))
    manifest = read_manifest(tmp_path)
    assert type(manifest) is Manifest and manifest.value("items") == ["q1"] and manifest.dump() == data
    (tmp_path / "manifest.json").write_text(json.dumps({"items": []}))
    assert read_manifest(tmp_path, Manifest).protocol == PROTOCOL  # the first manifests had no protocol field
    with pytest.raises(RunError, match="not a valid omnivchat-run-v1 manifest"):
        read_manifest(tmp_path)  # read as a native one: it lacks what a native manifest has


# ---------------------------------------------------------------------------------------------------------------
# Status and export


def test_status_and_export_are_models_and_the_export_reads_back(small_bench: Bench, tmp_path: Path) -> None:
    out = tmp_path / "run"
    run(small_bench, out, limit=3)
    status = run_status(out)
    assert isinstance(status, RunStatus) and status.kind == "run" and status.tasks is None and status.judges is None
    assert status.instances is not None and (status.instances.declared, status.instances.done) == (4, 3)
    assert status.instances.not_run == 1 and status.bench == "small v1" and status.simulated
    exported = export_run(out, allow_incomplete=True)
    assert (
        isinstance(exported, BenchmarkExport) and exported.schema_ == EXPORT_SCHEMA and exported.status == "incomplete"
    )
    assert exported.counts["candidate"].done == 3 and exported.n_records == 3
    assert exported.records[0].meta["subcategory"] == "SVMR"  # the item's metadata, kept from the store
    written = runner.invoke(app, ["export", str(out), "-o", str(tmp_path / "x.json"), "--allow-incomplete"])
    assert written.exit_code == 0, written.output
    data = json.loads((tmp_path / "x.json").read_text())
    assert data["schema"] == EXPORT_SCHEMA and "endpoint" not in data["manifest"]["route"]
    back = read_export(tmp_path / "x.json")
    assert isinstance(back, BenchmarkExport) and back == exported


def test_an_export_written_before_typed_files_reads(tmp_path: Path) -> None:
    old = {  # an export of the previous code: its record fields in its order, counts without tokens
        "schema": "omnivchat-export-v1",
        "status": "complete",
        "simulated": False,
        "manifest": {"protocol": PROTOCOL},
        "counts": {"instances": 1, "done": 1, "failed": 0, "not_run": 0, "failure_kinds": {}},
        "records": [{"id": "s1", "subcategory": "SVMR", "status": "done", "reply": "Hi.", "attempts": 1}],
    }
    (tmp_path / "old.json").write_text(json.dumps(old))
    back = read_export(tmp_path / "old.json")
    assert isinstance(back, BenchmarkExport) and back.schema_ == EXPORT_SCHEMA and back.records[0].reply == "Hi."
    assert back.records[0].meta == {"subcategory": "SVMR"} and back.tokens == {}
    (tmp_path / "bad.json").write_text(json.dumps({**old, "records": "none"}))
    with pytest.raises(Exception, match=r"bad\.json: not a valid export") as caught:
        read_export(tmp_path / "bad.json")
    assert "\n" not in str(caught.value)
