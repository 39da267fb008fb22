"""`omnivchat studio run` and `omnivchat studio trace` over bad input, damaged outputs, interruptions and a second
writer.

What must hold (the project's rules): bad input ends with one `error:` line naming the file, line or item and
exit status 2, never a traceback; nothing already done is lost; the tool never writes into, deletes or overwrites
what it did not make; a second writer on the same directory is refused by the lock, which names the holder; an
interrupted run (Ctrl-C, SIGKILL) resumes by rerunning the same command and ends as an uninterrupted one would;
repeating a finished command adds nothing; every bench produced passes `omnivchat validate`.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

import omnivchat.studio
from omnivchat.cli import app
from omnivchat.studio.config import SHIPPED_DIR, read_config_data

runner = CliRunner()
OMNIVCHAT = Path(sys.executable).with_name("omnivchat")
DEFAULT_CORPUS = Path(omnivchat.studio.__file__).parent / "corpus" / "default.jsonl"
ICC = read_config_data(SHIPPED_DIR / "icc.yaml")


# ------------------------------------------------------------------------------------------------- helpers


def studio_run(*args: object) -> Result:
    return runner.invoke(app, ["studio", "run", *map(str, args), "--no-progress"])


def studio_trace(*args: object) -> Result:
    return runner.invoke(app, ["studio", "trace", *map(str, args)])


def no_crash(result: Result) -> None:
    """No exception escaped the command (the user would see a traceback)."""
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"an exception escaped (a traceback for the user): {result.exception!r}\n{result.output}"
    )
    assert "Traceback" not in result.output


def user_error(result: Result, *names: str) -> str:
    """Exit status 2, no traceback, exactly one `error:` line on stderr, naming each of ``names``."""
    no_crash(result)
    assert result.exit_code == 2, f"exit {result.exit_code}, want 2\n{result.output}"
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), f"want one error line, got:\n{result.stderr}"
    for name in names:
        assert name in lines[0], f"{name!r} is not named in: {lines[0]}"
    return lines[0]


def usage_error(result: Result, option: str) -> None:
    """A command-line usage error (typer's own check): status 2, the option named, no traceback."""
    no_crash(result)
    assert result.exit_code == 2, result.output
    assert option in result.output


def ok(result: Result) -> None:
    no_crash(result)
    assert result.exit_code == 0, result.output


def validate(bench: Path) -> None:
    result = runner.invoke(app, ["validate", str(bench)])
    assert result.exit_code == 0, f"omnivchat validate {bench} failed:\n{result.output}"


def snapshot(root: Path, *, skip: tuple[str, ...] = (".lock",)) -> dict[str, str]:
    """Every file under ``root`` (relative path -> sha256), lock files (and ``skip`` prefixes) aside."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith(skip)
    }


def instance_ids(bench: Path) -> list[str]:
    path = bench / "instances.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line)["id"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def ended(bench: Path) -> dict[str, str]:
    """Instance id -> status ('accepted' or 'discarded') of every trace."""
    return {
        p.stem: json.loads(p.read_text(encoding="utf-8"))["status"]
        for p in sorted((bench / "studio" / "traces").glob("*.json"))
    }


def write_config(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def cli(*args: object) -> list[str]:
    return [str(OMNIVCHAT), *map(str, args)]


def wait_for(predicate: Any, proc: subprocess.Popen[Any], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the command ended (status {proc.returncode}) before {what}:\n{out}\n{err}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.01)


# ------------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished synthesis: ICC, --n 1, seed 0 (one accepted instance). Tests damage copies of it."""
    out = tmp_path_factory.mktemp("base") / "bench"
    ok(studio_run("--config", "ICC", "--n", 1, "-o", out))
    validate(out)
    assert len(instance_ids(out)) == 1
    return out


@pytest.fixture
def synth(base: Path, tmp_path: Path) -> Path:
    """A private copy of ``base``."""
    out = tmp_path / "bench"
    shutil.copytree(base, out)
    return out


@pytest.fixture(scope="module")
def made_bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bench made by `omnivchat bench make` (not a Studio synthesis)."""
    out = tmp_path_factory.mktemp("made") / "bench"
    ok(runner.invoke(app, ["bench", "make", "-o", str(out), "-n", "1", "--languages", "en"]))
    return out


def icc_args(out: Path, *extra: object) -> list[object]:
    return ["--config", "ICC", "--n", 1, "-o", out, *extra]


# ------------------------------------------------------------------------------------------------- corpus


def _good_lines() -> list[str]:
    return DEFAULT_CORPUS.read_text(encoding="utf-8").splitlines()


def _passage(pid: str, language: str = "en") -> str:
    return json.dumps({"id": pid, "language": language, "topic": "t", "text": f"Passage {pid}."})


CORPUS_CASES: dict[str, tuple[bytes | None, list[str]]] = {
    # name: (content; None = no such file; b"<dir>" = a directory), what the error must name besides the path
    "missing": (None, []),
    "directory": (b"<dir>", []),
    "not-utf8": ((_passage("a") + "\n").encode() + b'{"id": "b", "language": "en", "text": "caf\xe9"}\n', [":2"]),
    "invalid-json": ((_passage("a") + "\n" + '{"id": "b", "language": \n').encode(), [":2"]),
    "missing-field": (
        (_passage("a") + "\n" + json.dumps({"id": "b", "text": "no language"}) + "\n").encode(),
        [":2", "language"],
    ),
    "duplicate-id": ("\n".join([_passage("a"), _passage("b"), _passage("a")]).encode(), [":3", "'a'"]),
    "too-few": ("\n".join([_passage("a"), _passage("b")]).encode(), ["3"]),
    "empty": (b"", []),
}


@pytest.mark.parametrize("case", sorted(CORPUS_CASES))
def test_bad_corpus_is_one_clear_error_and_writes_nothing(case: str, tmp_path: Path) -> None:
    content, names = CORPUS_CASES[case]
    corpus = tmp_path / f"{case}.jsonl"
    if content == b"<dir>":
        corpus.mkdir()
    elif content is not None:
        corpus.write_bytes(content)
    out = tmp_path / "out"
    result = studio_run(*icc_args(out, "--corpus", corpus))
    user_error(result, str(corpus), *names)
    assert not out.exists(), "a refused run left an output folder behind"


def test_corpus_with_byte_order_mark_works(tmp_path: Path) -> None:
    corpus = tmp_path / "bom.jsonl"
    corpus.write_bytes(b"\xef\xbb\xbf" + DEFAULT_CORPUS.read_bytes())
    out = tmp_path / "out"
    ok(studio_run(*icc_args(out, "--corpus", corpus)))
    assert len(instance_ids(out)) == 1
    validate(out)


def test_corpus_in_one_language_works(tmp_path: Path) -> None:
    """A corpus with Mandarin passages only: three distinct passages per instance, all from that language."""
    lines = [line for line in _good_lines() if json.loads(line)["language"] == "zh"]
    assert len(lines) >= 3
    corpus = tmp_path / "zh.jsonl"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    zh_ids = {json.loads(line)["id"] for line in lines}
    out = tmp_path / "out"
    ok(studio_run("--config", "ICC", "--n", 2, "--corpus", corpus, "-o", out))
    records = [json.loads(line) for line in (out / "instances.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(records) == 2
    for record in records:
        passages = record["meta"]["passages"]
        assert len(passages) == 3 and len(set(passages)) == 3 and set(passages) <= zh_ids
    validate(out)


# ------------------------------------------------------------------------------------------------- --config


def _break(mutate: Any) -> dict[str, Any]:
    data = copy.deepcopy(ICC)
    mutate(data)
    return data


def _probabilities_off(d: dict[str, Any]) -> None:
    d["attributes"]["language"]["values"]["en"]["probability"] = 0.7


def _unknown_preference_attribute(d: dict[str, Any]) -> None:
    d["preferences"][0]["when"]["no_such_attribute"] = "x"


def _no_language(d: dict[str, Any]) -> None:
    del d["attributes"]["language"]


def _multi_without_turns(d: dict[str, Any]) -> None:
    d["turns"] = "multi"


SCHEMA_CASES = {
    "probabilities-not-one": (_probabilities_off, ["language", "sum"]),
    "unknown-preference-attribute": (_unknown_preference_attribute, ["no_such_attribute"]),
    "missing-language": (_no_language, ["language"]),
    "multi-without-turns": (_multi_without_turns, ["turns"]),
}


@pytest.mark.parametrize("case", sorted(SCHEMA_CASES))
def test_config_breaking_the_schema_is_one_clear_error(case: str, tmp_path: Path) -> None:
    mutate, names = SCHEMA_CASES[case]
    config = write_config(tmp_path / f"{case}.yaml", _break(mutate))
    out = tmp_path / "out"
    user_error(studio_run("--config", config, "--n", 1, "-o", out), str(config), *names)
    assert not out.exists()


def test_unknown_subcategory_code(tmp_path: Path) -> None:
    out = tmp_path / "out"
    user_error(studio_run("--config", "NOPE", "--n", 1, "-o", out), "NOPE")
    assert not out.exists()


def test_config_yaml_that_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "missing.yaml"
    out = tmp_path / "out"
    user_error(studio_run("--config", missing, "--n", 1, "-o", out), str(missing))
    assert not out.exists()


def test_malformed_yaml_is_one_line_naming_file_and_line(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("code: ICC\nname: [unclosed\n", encoding="utf-8")
    out = tmp_path / "out"
    line = user_error(studio_run("--config", config, "--n", 1, "-o", out), str(config))
    assert re.search(r"\b2\b", line), f"the line of the problem (2) is not named: {line}"
    assert not out.exists()


@pytest.mark.parametrize(
    ("case", "content"),
    [("empty", b""), ("a-list", b"- a\n- b\n"), ("not-utf8", b'code: ICC\nname: "caf\xe9"\n')],
)
def test_config_yaml_that_is_not_a_configuration(case: str, content: bytes, tmp_path: Path) -> None:
    config = tmp_path / f"{case}.yaml"
    config.write_bytes(content)
    out = tmp_path / "out"
    user_error(studio_run("--config", config, "--n", 1, "-o", out), str(config))
    assert not out.exists()


def test_config_without_offline_template_is_a_clear_error(tmp_path: Path) -> None:
    """A valid configuration whose code the offline Director has no template for (XYZ): refused up front with a
    clear error, not a traceback and not a silently empty bench."""
    config = write_config(tmp_path / "xyz.yaml", {**copy.deepcopy(ICC), "code": "XYZ"})
    out = tmp_path / "out"
    user_error(studio_run("--config", config, "--n", 1, "-o", out), "XYZ")
    assert not (out / "instances.jsonl").exists()


def test_config_language_without_offline_support_is_a_clear_error(tmp_path: Path) -> None:
    """A valid configuration whose only language (fr) the offline backend cannot script."""
    data = copy.deepcopy(ICC)
    data["attributes"]["language"]["values"] = {"fr": {"probability": 1.0, "description": "French."}}
    data["validator"]["forbidden_phrases"] = []
    config = write_config(tmp_path / "french.yaml", data)
    out = tmp_path / "out"
    user_error(studio_run("--config", config, "--n", 1, "-o", out), "fr")
    assert not (out / "instances.jsonl").exists()


def test_same_code_twice_is_refused_or_counted_once(tmp_path: Path) -> None:
    """`--config ICC --config icc` asks for the same subcategory twice: refused naming it, or run once (one
    instance, and a summary that does not count it twice)."""
    out = tmp_path / "out"
    result = studio_run("--config", "ICC", "--config", "icc", "--n", 1, "-o", out)
    no_crash(result)
    if result.exit_code == 2:
        user_error(result, "ICC")
        return
    assert result.exit_code == 0, result.output
    assert len(instance_ids(out)) == 1 and len(ended(out)) == 1
    assert "accepted 1 of 1" in result.stdout, result.stdout
    validate(out)


def test_two_different_configs_with_one_code_are_refused(tmp_path: Path) -> None:
    """The shipped ICC and a different YAML that also says `code: ICC` would make the same instance ids from two
    configurations (and the manifest keeps only one hash): refused naming the code."""
    config = write_config(tmp_path / "icc-variant.yaml", {**copy.deepcopy(ICC), "name": "A variant of ICC"})
    out = tmp_path / "out"
    user_error(studio_run("--config", "ICC", "--config", config, "--n", 1, "-o", out), "ICC")
    assert not (out / "instances.jsonl").exists()


# ------------------------------------------------------------------------------------------------- flags


def test_all_with_config_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    user_error(studio_run("--all", "--config", "ICC", "--n", 1, "-o", out), "--all", "--config")
    assert not out.exists()


def test_neither_all_nor_config_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    user_error(studio_run("--n", 1, "-o", out), "--all", "--config")
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--n", 0], "--n"),
        (["--n", 1, "--defect-rate", 1.5], "--defect-rate"),
        (["--n", 1, "--concurrency", 0], "--concurrency"),
    ],
)
def test_out_of_range_option_is_a_usage_error(args: list[object], option: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    usage_error(studio_run("--config", "ICC", *args, "-o", out), option)
    assert not out.exists()


@pytest.mark.parametrize("backend", ["hosted", "nonsense"])
def test_unavailable_backend_is_refused(backend: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    user_error(studio_run(*icc_args(out, "--backend", backend)), backend)
    assert not out.exists()


# ------------------------------------------------------------------------------------------------- output


def test_output_that_is_a_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "a-file"
    target.write_text("keep me\n")
    user_error(studio_run(*icc_args(target)), str(target))
    assert target.read_text() == "keep me\n"


def test_output_under_a_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "a-file"
    target.write_text("keep me\n")
    user_error(studio_run(*icc_args(target / "sub")), str(target))
    assert target.read_text() == "keep me\n"


def test_foreign_non_empty_folder_is_refused_and_untouched(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("my notes\n")
    (folder / "studio").mkdir()  # even a folder named like ours does not make it ours
    before = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))
    user_error(studio_run(*icc_args(folder)), str(folder))
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == before
    assert (folder / "notes.txt").read_text() == "my notes\n"


def test_bench_made_by_bench_make_is_refused_and_untouched(made_bench: Path, tmp_path: Path) -> None:
    bench = tmp_path / "bench"
    shutil.copytree(made_bench, bench)
    before = snapshot(bench)
    user_error(studio_run(*icc_args(bench)), str(bench))
    assert snapshot(bench) == before


@pytest.mark.parametrize(
    ("change", "differs"),
    [(["--seed", 5], r"\bseed\b"), (["--n", 2], r"\bn\b"), (["--defect-rate", 0.5], r"defect")],
)
def test_synthesis_with_other_settings_is_refused_naming_what_differs(
    synth: Path, change: list[object], differs: str
) -> None:
    before = snapshot(synth)
    args = ["--config", "ICC", "--n", 1, "-o", synth]
    if change[0] == "--n":
        args[3] = change[1]
    else:
        args += change
    line = user_error(studio_run(*args), str(synth))
    assert re.search(differs, line), f"what differs ({differs}) is not named: {line}"
    assert snapshot(synth) == before


def test_other_config_set_is_refused(synth: Path) -> None:
    before = snapshot(synth)
    line = user_error(studio_run("--config", "AOR", "--n", 1, "-o", synth), str(synth))
    assert "config" in line
    assert snapshot(synth) == before


@pytest.mark.parametrize("damage", [b'{"version": 1, "configs": ', b"\xff\xfe not json", b"[]"])
def test_damaged_manifest_is_refused_naming_it(synth: Path, damage: bytes) -> None:
    manifest = synth / "studio" / "manifest.json"
    manifest.write_bytes(damage)
    before = snapshot(synth)
    user_error(studio_run(*icc_args(synth)), str(manifest))
    assert snapshot(synth) == before


def test_damaged_trace_on_rerun_and_on_trace(synth: Path) -> None:
    """A damaged trace: the rerun either refuses naming it (changing nothing) or redoes the instance; either way
    the accepted instance stays in the bench. `studio trace` names the damaged file."""
    (iid,) = instance_ids(synth)
    trace = synth / "studio" / "traces" / f"{iid}.json"
    trace.write_text('{"id": "' + iid[:5], encoding="utf-8")
    bench_before = (synth / "instances.jsonl").read_bytes()
    result = studio_run(*icc_args(synth))
    no_crash(result)
    if result.exit_code == 2:
        user_error(result, str(trace))
        assert (synth / "instances.jsonl").read_bytes() == bench_before
    else:
        assert result.exit_code == 0, result.output
        assert ended(synth) == {iid: "accepted"}
        validate(synth)
    assert instance_ids(synth) == [iid]
    if result.exit_code == 2:
        user_error(studio_trace(synth, iid), str(trace))
        user_error(studio_trace(synth, iid, "--json"), str(trace))


def test_deleted_clip_of_accepted_instance_is_restored_on_rerun(synth: Path) -> None:
    """The tool made the clip and still holds its source under studio/work: a rerun restores it (nothing done is
    lost) and the bench validates again."""
    (iid,) = instance_ids(synth)
    clip = synth / "media" / iid / "turn1.mp4"
    original = hashlib.sha256(clip.read_bytes()).hexdigest()
    clip.unlink()
    result = studio_run(*icc_args(synth))
    ok(result)
    assert clip.is_file(), "the deleted clip was not restored"
    assert hashlib.sha256(clip.read_bytes()).hexdigest() == original
    validate(synth)


def test_damaged_accepted_record_is_a_clear_error_or_restored(synth: Path) -> None:
    (iid,) = instance_ids(synth)
    record = synth / "studio" / "accepted" / f"{iid}.json"
    record.write_text('{"id": ', encoding="utf-8")
    result = studio_run(*icc_args(synth))
    no_crash(result)
    if result.exit_code == 2:
        user_error(result, str(record))
    else:
        assert result.exit_code == 0, result.output
        validate(synth)
    assert instance_ids(synth) == [iid], "the accepted instance was lost from instances.jsonl"


def test_deleted_accepted_record_does_not_lose_the_instance(synth: Path) -> None:
    """The record of an accepted instance is gone but its trace says accepted: the rerun must not rewrite
    instances.jsonl without it (it redoes the record, or refuses naming the instance)."""
    (iid,) = instance_ids(synth)
    (synth / "studio" / "accepted" / f"{iid}.json").unlink()
    result = studio_run(*icc_args(synth))
    no_crash(result)
    assert instance_ids(synth) == [iid], "the accepted instance was lost from instances.jsonl"
    if result.exit_code == 2:
        user_error(result, iid)
    else:
        assert result.exit_code == 0, result.output
        validate(synth)


def test_damaged_call_store_is_refused_naming_it(synth: Path) -> None:
    """An instance to resume (its trace removed) with a damaged run store: one clear error naming the store."""
    store = synth / "studio" / "calls.sqlite"
    store.write_bytes(b"not a database" * 50)
    for trace in (synth / "studio" / "traces").glob("*.json"):
        trace.unlink()
    before = snapshot(synth)
    user_error(studio_run(*icc_args(synth)), str(store))
    assert snapshot(synth) == before


def test_all_instances_discarded(tmp_path: Path) -> None:
    """Every instance discarded (defects at rate 1): the summary says so, with the reason; the trace of the
    discarded instance is kept and readable; no bench that fails `omnivchat validate` is left behind."""
    out = tmp_path / "out"
    result = studio_run(*icc_args(out, "--defect-rate", 1.0))
    no_crash(result)
    statuses = ended(out)
    assert list(statuses.values()) == ["discarded"], statuses
    assert "discarded" in result.output and "accepted 0" in result.output, result.output
    if result.exit_code != 0:
        lines = [line for line in result.stderr.splitlines() if line.startswith("error")]
        assert len(lines) <= 1 and result.stderr.count("\n") <= 1 + len(lines), result.stderr
    if (out / "instances.jsonl").exists() or (out / "bench.yaml").exists():
        validate(out)
    (iid,) = statuses
    shown = studio_trace(out, iid)
    ok(shown)
    assert "discarded:" in shown.stdout


def test_repeating_a_finished_command_adds_nothing(synth: Path) -> None:
    before = snapshot(synth, skip=(".lock", "calls.sqlite"))
    result = studio_run(*icc_args(synth))
    ok(result)
    assert "0 instance(s) synthesized now, 1 already done" in result.stdout
    assert snapshot(synth, skip=(".lock", "calls.sqlite")) == before
    validate(synth)


# ------------------------------------------------------------------------------------------------- resume


def test_sigkill_midway_then_rerun_equals_uninterrupted_run(tmp_path: Path) -> None:
    """Killed with SIGKILL once the first trace is written; rerunning the same command completes and ends exactly
    as an uninterrupted run in another folder (same seed): the same ids accepted and discarded, the same
    instances.jsonl. --n 3, not 2: a finished instance's trace is written by the main thread after its tail
    repair, which runs slowly while the next instance is synthesized, so with --n 2 the first trace lands only
    moments before the second and a kill then is not midway. Defects at 0.7, seed 5: two accepted, one discarded."""

    def command(out: Path) -> list[str]:
        return cli(
            "studio", "run", "--config", "ICC", "--n", 3, "--seed", 5, "--defect-rate", 0.7,
            "--concurrency", 1, "--no-progress", "-o", out,
        )  # fmt: skip

    killed, fresh = tmp_path / "killed", tmp_path / "fresh"
    traces = killed / "studio" / "traces"
    proc = subprocess.Popen(command(killed), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: traces.is_dir() and any(traces.glob("*.json")), proc, "the first trace")
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    assert 1 <= len(list(traces.glob("*.json"))) < 3, "the kill did not land midway"

    resumed = subprocess.run(command(killed), capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "Traceback" not in resumed.stderr
    assert "already done" in resumed.stdout and "0 already done" not in resumed.stdout, resumed.stdout
    reference = subprocess.run(command(fresh), capture_output=True, text=True, timeout=120)
    assert reference.returncode == 0, reference.stdout + reference.stderr

    statuses = ended(fresh)
    assert len(statuses) == 3 and set(statuses.values()) == {"accepted", "discarded"}, statuses
    assert ended(killed) == statuses
    assert (killed / "instances.jsonl").read_bytes() == (fresh / "instances.jsonl").read_bytes()
    validate(killed)
    validate(fresh)


def test_ctrl_c_then_rerun_completes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    command = cli(
        "studio", "run", "--config", "ICC", "--n", 3, "--seed", 12, "--concurrency", 1, "--no-progress", "-o", out
    )
    traces = out / "studio" / "traces"
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: traces.is_dir() and any(traces.glob("*.json")), proc, "the first trace")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    if proc.returncode != 0:  # it may have finished just before the signal landed
        assert proc.returncode == 130, err
        assert "Traceback" not in err and "rerun the same command" in err, err
    again = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(ended(out)) == 3
    validate(out)


# ------------------------------------------------------------------------------------------------- a second writer


def test_second_writer_is_refused_by_the_lock_naming_the_holder(tmp_path: Path) -> None:
    out = tmp_path / "out"
    command = cli(
        "studio", "run", "--config", "ICC", "--n", 4, "--seed", 21, "--concurrency", 1, "--no-progress", "-o", out
    )
    holder = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: (out / "studio" / "manifest.json").is_file(), holder, "the manifest")
        second = studio_run("--config", "ICC", "--n", 4, "--seed", 21, "-o", out)
        assert holder.poll() is None, "the first writer ended before the second one tried: the test proves nothing"
        user_error(second, str(out), "being written by", f"pid {holder.pid}")
    finally:
        out_text, err_text = holder.communicate(timeout=120)
    assert holder.returncode == 0, out_text + err_text
    assert len(ended(out)) == 4
    validate(out)


HOLD_LOCK = """
import sys
from pathlib import Path
from omnivchat.runs import run_lock
out = Path(sys.argv[1])
with run_lock(out, "studio run"):
    (out / "studio").mkdir()  # a first writer between taking the lock and landing its manifest
    print("ready", flush=True)
    sys.stdin.read()
"""


def test_second_writer_during_the_first_ones_start_is_refused_by_the_lock(tmp_path: Path) -> None:
    """While the first writer holds the lock but has not yet landed studio/manifest.json, a second one must be
    told the folder is being written (by whom), not that it is someone else's folder."""
    out = tmp_path / "out"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        user_error(studio_run(*icc_args(out)), str(out), "being written by", f"pid {holder.pid}")
    finally:
        holder.communicate(input="", timeout=30)


# ------------------------------------------------------------------------------------------------- studio trace


def test_trace_of_an_accepted_instance(base: Path) -> None:
    (iid,) = instance_ids(base)
    shown = studio_trace(base, iid)
    ok(shown)
    assert iid in shown.stdout and "accepted" in shown.stdout
    as_json = studio_trace(base, iid, "--json")
    ok(as_json)
    assert json.loads(as_json.stdout)["status"] == "accepted"


def test_trace_of_unknown_id_names_it_and_lists_known_ones(base: Path) -> None:
    (iid,) = instance_ids(base)
    user_error(studio_trace(base, "icc-nope"), "icc-nope", iid)


@pytest.mark.parametrize("bad_id", ["../manifest", "../../bench"])
def test_trace_id_with_a_path_is_an_unknown_id(base: Path, bad_id: str) -> None:
    """An id is a name, not a path: `../manifest` must not read studio/manifest.json as a trace."""
    line = user_error(studio_trace(base, bad_id), bad_id)
    assert "no trace" in line, line


def test_trace_on_a_folder_that_is_not_a_studio_output(made_bench: Path) -> None:
    line = user_error(studio_trace(made_bench, "icc-0001"), str(made_bench))
    assert re.search(r"not a studio|studio run|manifest", line, re.IGNORECASE), (
        f"the error should say the folder is not a Studio synthesis: {line}"
    )


def test_trace_on_a_missing_folder(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    user_error(studio_trace(missing, "icc-0001"), str(missing))
    assert not missing.exists()
