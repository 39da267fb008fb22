"""The bad-input corpus: every command over every bad input it can meet.

Each case must end with a non-zero exit status, no traceback, the bad file (or path) named in the output, no
secret anywhere in the output, and no file changed outside the command's own output (run-directory `.lock`
files, which writers take before they look at anything, are the one exception).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnivchat.cli import app

EXAMPLES = Path(__file__).parent.parent / "examples"
KEY = "sk-corpus-" + secrets.token_hex(12)
runner = CliRunner()


@dataclass
class World:
    """Good inputs in one folder; each case breaks a copy of one of them."""

    root: Path
    bench: Path
    hits: Path
    run: Path
    judges: Path
    key_file: Path


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    shutil.copytree(EXAMPLES / "bench", root / "bench")
    shutil.copy(EXAMPLES / "hits.jsonl", root / "hits.jsonl")
    args = ["eval", "--bench", str(root / "bench"), "--model", "sim:healthy", "-o", str(root / "run"), "--no-progress"]
    assert runner.invoke(app, args).exit_code == 0
    assert runner.invoke(app, ["score", str(root / "run"), "--panel", "rule", "--allow-incomplete"]).exit_code == 0
    (root / "judges.json").write_text(json.dumps({"judges": [{"name": "j", "model": "judge-model"}]}))
    (root / "private.env").write_text(f"DASHSCOPE_API_KEY={KEY}\n")
    return root


@pytest.fixture
def world(pristine: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    root = tmp_path / "w"
    shutil.copytree(pristine, root)
    monkeypatch.setenv("DASHSCOPE_API_KEY", KEY)
    monkeypatch.setenv("OMNIVCHAT_HOME", str(tmp_path / "home"))
    return World(root, root / "bench", root / "hits.jsonl", root / "run", root / "judges.json", root / "private.env")


# --------------------------------------------------------------------------------------------- bad inputs
# Each returns the path to name in the error (and breaks the world in place).


def corrupt_store(w: World) -> str:
    (w.run / "store.sqlite").write_bytes(b"this is not a database" * 100)
    for side in ("store.sqlite-wal", "store.sqlite-shm"):
        (w.run / side).unlink(missing_ok=True)
    return "store.sqlite"


def truncated_manifest(w: World) -> str:
    text = (w.run / "manifest.json").read_text()
    (w.run / "manifest.json").write_text(text[: len(text) // 2])
    return "manifest.json"


def foreign_manifest(w: World) -> str:
    (w.run / "manifest.json").write_text(json.dumps({"protocol": "someone-elses-tool", "items": 3}))
    return "manifest.json"


def nested_manifest(w: World) -> str:
    (w.run / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    return "manifest.json"


def non_utf8_instances(w: World) -> str:
    path = w.bench / "instances.jsonl"
    path.write_bytes(path.read_bytes().replace(b"\n", b"\n\xff\xfe broken\n", 1))
    return "instances.jsonl:2"


def nested_instances(w: World) -> str:
    with (w.bench / "instances.jsonl").open("a") as handle:
        handle.write("[" * 100_000 + "]" * 100_000 + "\n")
    return "instances.jsonl:"


def non_utf8_bench_yaml(w: World) -> str:
    (w.bench / "bench.yaml").write_bytes(b"name: \xff\xfe\n")
    return "bench.yaml"


def non_utf8_hits(w: World) -> str:
    w.hits.write_bytes(b"\xff\xfe{}\n")
    return "hits.jsonl:1"


def nested_hits(w: World) -> str:
    w.hits.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    return "hits.jsonl:1"


def non_utf8_key_file(w: World) -> str:
    w.key_file.write_bytes(b"DASHSCOPE_API_KEY=\xff\xfe" + KEY.encode() + b"\n")
    return "private.env"


def nested_judges(w: World) -> str:
    w.judges.write_text("[" * 100_000 + "]" * 100_000)
    return "judges.json"


def non_utf8_judges(w: World) -> str:
    w.judges.write_bytes(b'{"judges": "\xff"}')
    return "judges.json"


def nested_scores(w: World) -> str:
    (w.run / "scores.json").write_text("[" * 100_000 + "]" * 100_000)
    return "scores.json"


def missing_dir(w: World) -> str:
    return "nowhere"


# --------------------------------------------------------------------------------------------- commands
# Each builds the command line for the world; "OUT" is the command's own output (allowed to change).

Command = Callable[[World], list[str]]


def validate(w: World) -> list[str]:
    return ["validate", str(w.bench)]


def score_hits(w: World) -> list[str]:
    return ["score", "--bench", str(w.bench), "--hits", str(w.hits)]


def score_run(w: World) -> list[str]:
    return ["score", str(w.run), "--panel", "rule"]


def score_with_judges(w: World) -> list[str]:
    return ["score", str(w.run), "--judges", str(w.judges), "--panel", "j"]


def score_run_on_bench(w: World) -> list[str]:
    return ["score", str(w.run), "--bench", str(w.bench), "--panel", "rule"]


def judge_on_bench(w: World) -> list[str]:
    return ["judge", str(w.run), "--bench", str(w.bench), "--judges", str(w.judges), "--no-progress"]


def eval_sim(w: World) -> list[str]:
    return ["eval", "--bench", str(w.bench), "--model", "sim:healthy", "-o", str(w.run), "--no-progress"]


def eval_hosted_key_file(w: World) -> list[str]:
    return [
        "eval", "--bench", str(w.bench), "--model", "qwen3-omni-flash", "--base-url", "http://127.0.0.1:9/v1",
        "--key-file", str(w.key_file), "--key-field", "DASHSCOPE_API_KEY", "-o", str(w.root / "OUT"), "--no-progress",
    ]  # fmt: skip


def judge(w: World) -> list[str]:
    return ["judge", str(w.run), "--judges", str(w.judges), "--no-progress"]


def runs_show(w: World) -> list[str]:
    return ["runs", "show", str(w.run)]


def export(w: World) -> list[str]:
    return ["export", str(w.run), "-o", str(w.root / "OUT.json")]


def report(w: World) -> list[str]:
    return ["report", str(w.run), "-o", str(w.root / "OUT.html")]


def ablate(w: World) -> list[str]:
    return [
        "ablate", "--bench", str(w.bench), "--model", "sim:healthy", "-o", str(w.root / "OUT"), "--skip-self-check",
        "--no-progress",
    ]  # fmt: skip


def agree(w: World) -> list[str]:
    return ["judges", "agree", str(w.run), "--judges", "rule,j"]


CASES: list[tuple[Callable[[World], str], list[Command]]] = [
    (corrupt_store, [score_run, score_with_judges, eval_sim, judge, runs_show, export, agree]),
    (truncated_manifest, [score_run, score_with_judges, eval_sim, judge, runs_show, export, agree]),
    (foreign_manifest, [score_run, score_with_judges, eval_sim, judge, runs_show, export, agree]),
    (nested_manifest, [score_run, score_with_judges, eval_sim, judge, runs_show, export, agree]),
    (non_utf8_instances, [validate, score_hits, score_run_on_bench, judge_on_bench, eval_sim, ablate]),
    (nested_instances, [validate, score_hits, score_run_on_bench, judge_on_bench, eval_sim, ablate]),
    (non_utf8_bench_yaml, [validate, score_hits, score_run_on_bench, judge_on_bench, eval_sim, ablate]),
    (non_utf8_hits, [score_hits]),
    (nested_hits, [score_hits]),
    (non_utf8_key_file, [eval_hosted_key_file]),
    (nested_judges, [judge, score_with_judges]),
    (non_utf8_judges, [judge, score_with_judges]),
    (nested_scores, [report]),
]
PAIRS = [(bad, command) for bad, commands in CASES for command in commands]


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file() and p.name != ".lock" and not p.name.startswith("OUT")
    }


@pytest.mark.parametrize(("bad", "command"), PAIRS, ids=[f"{b.__name__}-{c.__name__}" for b, c in PAIRS])
def test_bad_input(world: World, bad: Callable[[World], str], command: Command) -> None:
    name = bad(world)
    before = _snapshot(world.root)
    result = runner.invoke(app, command(world))
    out = result.output
    assert result.exit_code not in (0, None), out
    assert isinstance(result.exception, SystemExit), f"an exception escaped: {result.exception!r}\n{out}"
    assert "Traceback" not in out
    assert name in out, f"{name} not named:\n{out}"
    assert KEY not in out and KEY[:12] not in out
    assert _snapshot(world.root) == before, "a file outside the command's own output changed"


def test_missing_paths_and_null_bytes_in_every_path_argument(world: World) -> None:
    """A path that is not there, or that holds a null byte, is one line naming it, for every command."""
    lines = {
        "validate": ["validate", "{p}"],
        "score": ["score", "{p}", "--panel", "rule"],
        "runs show": ["runs", "show", "{p}"],
        "export": ["export", "{p}", "-o", str(world.root / "OUT.json")],
        "report": ["report", "{p}", "-o", str(world.root / "OUT.html")],
        "judge": ["judge", "{p}"],
        "eval": ["eval", "--bench", "{p}", "--model", "sim:healthy", "-o", str(world.root / "OUT")],
        "repair-tails": ["repair-tails", "{p}", "--dry-run"],
    }
    for label, template in lines.items():
        for path in (str(world.root / "nowhere"), str(world.root / "bad\x00name")):
            result = runner.invoke(app, [a.replace("{p}", path) for a in template])
            assert result.exit_code not in (0, None), (label, result.output)
            assert isinstance(result.exception, SystemExit), (label, repr(result.exception), result.output)
            assert ("nowhere" in result.output) or ("null byte" in result.output) or ("bad" in result.output), (
                label,
                result.output,
            )


@pytest.mark.parametrize(
    "model", ["sim:nope", "sim:healthy?video=2", "sim:healthy?video", "sim:healthy?zzz=1"], ids=str
)
def test_an_unknown_simulated_model_in_every_command(world: World, model: str) -> None:
    commands = [
        ["eval", "--bench", str(world.bench), "--model", model, "-o", str(world.root / "OUT")],
        ["ablate", "--bench", str(world.bench), "--model", model, "-o", str(world.root / "OUT2"), "--skip-self-check"],
        ["check-route", "--model", model],
    ]
    for args in commands:
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and isinstance(result.exception, SystemExit), (args, result.output)
        assert model.split("?")[0].removeprefix("sim:") in result.output or "sim:" in result.output


def test_output_paths_of_the_wrong_kind_in_every_command(world: World) -> None:
    a_file = world.root / "a-file"
    a_file.write_text("x")
    for args in (
        ["export", str(world.run), "-o", str(world.root)],  # a folder
        ["export", str(world.run), "-o", str(a_file / "x.json")],  # under a file
        ["score", str(world.run), "--panel", "rule", "-o", str(world.root)],
        ["report", str(world.run), "-o", str(a_file / "r.html")],
        ["eval", "--bench", str(world.bench), "--model", "sim:healthy", "-o", str(a_file)],
        ["check-route", "--model", "sim:healthy", "-o", str(world.root)],
        ["bench", "make", "-o", str(a_file)],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and isinstance(result.exception, SystemExit), (args, result.output)
        assert str(world.root) in result.output, (args, result.output)
    assert a_file.read_text() == "x"


def test_a_bom_is_not_an_error(world: World) -> None:
    for path in (world.bench / "instances.jsonl", world.bench / "bench.yaml", world.hits):
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    result = runner.invoke(app, score_hits(world))
    assert result.exit_code == 0, result.output


def test_the_corpus_covers_every_bad_input_and_command() -> None:
    """The count stated in the issue note: command x bad-input pairs run by `test_bad_input`."""
    assert len(PAIRS) >= 50
    assert sqlite3.sqlite_version  # the store's engine is present (the corrupt-store cases rely on it)
