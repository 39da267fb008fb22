"""Hostile and broken input against the newer surfaces: replicas, spoken replies, costs and budgets.

The key-leak checks extend tests/security/test_key_never_written.py to the fields those features keep: the model
name and system_fingerprint of every result (runs show's "served"), a spoken reply's server transcript and audio
file, where each attempt went (the replica), and what `compare` writes. Costs: a server's usage that is garbage
(negative, NaN, strings, numbers past any float) is "unknown", never a crash nor an invented or infinite spend;
a price or a budget that is not a finite amount is refused.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnivchat.cli import app
from omnivchat.routes import Price, attempt_cost
from omnivchat.routes._audio import wav_from_pcm16
from omnivchat.testing import API_KEY, AUTHORIZATION, Behaviour, LoopbackServer, rotation
from omnivchat.testing._hostile import straddling

runner = CliRunner()


def invoke(scan, label: str, args: list) -> object:
    result = scan.add_result(label, runner.invoke(app, [str(a) for a in args]))
    assert result.exception is None or isinstance(result.exception, SystemExit), (label, result.output)
    return result


@pytest.fixture(scope="module")
def byo_bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A byo benchmark (it scores spoken replies): one rendered clip, two questions."""
    from omnivchat.synth import render_clip

    root = tmp_path_factory.mktemp("byo")
    scene = {
        "size": [160, 90],
        "background": "navy",
        "objects": [{"shape": "square", "color": "red", "position": "left"}],
        "speech": [{"text": "What colour is the square?", "language": "en", "start": 0.2}],
    }
    render_clip(scene, root / "media" / "red.mp4")
    rows = [
        {"qid": "q1", "question": "What colour is the square?", "answer": "red"},
        {"qid": "m1", "question": "Which colour?", "options": ["red", "blue"], "answer": "A"},
    ]
    rows = [{**row, "video": "media/red.mp4", "requires": ["video"], "category": "video-only"} for row in rows]
    (root / "bench.json").write_text(json.dumps(rows), encoding="utf-8")
    return root / "bench.json"


def test_key_echoed_by_replicas_in_model_fingerprint_transcript_and_audio_never_kept(
    byo_bench, tmp_path, key, key_file, scan
):
    """Two replicas echo the caller's key into the model name, the system_fingerprint, the spoken reply's
    transcript, the audio bytes themselves, and 5xx error bodies; nothing the run wrote or printed holds it."""
    audio = wav_from_pcm16(b"\x01\x00" * 2400 + key.encode() + b"\x00" * (len(key) % 2) + b"\x02\x00" * 2400, 24000)
    spoken = Behaviour(
        text=f"B {API_KEY}",
        model=straddling(API_KEY, 3),
        system_fingerprint=straddling(AUTHORIZATION, 4, offset=3),
        audio=audio,
        audio_transcript=f"the answer is B, {straddling(API_KEY, 3)}",
        usage={"prompt_tokens": 10, "completion_tokens": 2, API_KEY: AUTHORIZATION},
    )
    failing = Behaviour(status=503, error_message=f"replica down: {AUTHORIZATION}", retry_after=0.01)
    runs = []
    with (
        LoopbackServer(rules=rotation([spoken, failing, spoken])) as a,
        LoopbackServer(rules=rotation([failing, spoken, spoken])) as b,
    ):
        for name in ("run-a", "run-b"):
            out = tmp_path / name
            args = [
                "eval", "--benchmark", "byo", "--data", byo_bench, "--model", "hostile-omni", "--base-url", a.base_url,
                "--base-url", b.base_url, "-o", out, "--key-file", key_file, "--key-field", "OMNIVCHAT_TEST_KEY",
                "--max-attempts", "4", "--no-progress", "--reply-audio", "alloy",
            ]  # fmt: skip
            result = invoke(scan, f"eval {name}", args)
            assert "2 done" in result.output, result.output
            runs.append(out)
        assert a.chat_requests and b.chat_requests  # both replicas served
    assert list((runs[0] / "audio").iterdir()), "no spoken reply was kept"
    for run in runs:
        invoke(scan, "runs show", ["runs", "show", run])
        invoke(scan, "export", ["export", run, "-o", tmp_path / f"{run.name}.json", "--allow-incomplete"])
        invoke(scan, "score", ["score", run, "--allow-incomplete"])
        invoke(scan, "report", ["report", run, "-o", tmp_path / f"{run.name}.html"])
    invoke(scan, "compare", ["compare", runs[0], runs[1], "-o", tmp_path / "comparison.json"])
    scan.assert_clean()


# ------------------------------------------------------------------------------------------------- costs


PRICE = Price(input_per_mtok=1.0, output_per_mtok=2.0)


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": -5, "completion_tokens": 3},
        {"prompt_tokens": 5, "completion_tokens": -3},
        {"prompt_tokens": math.nan, "completion_tokens": 3},
        {"prompt_tokens": math.inf, "completion_tokens": 3},
        {"prompt_tokens": "5", "completion_tokens": 3},
        {"prompt_tokens": True, "completion_tokens": 3},
        {"prompt_tokens": 10**400, "completion_tokens": 1},  # Python's json reads this: no float holds it
        {"prompt_tokens": 1e308, "completion_tokens": 1e308},  # a float, but its cost is inf
        [1, 2],
        "usage",
        None,
    ],
    ids=lambda u: repr(u)[:40],
)
def test_garbage_usage_is_unknown_never_a_crash_nor_a_made_up_cost(usage):
    cost = attempt_cost(usage, PRICE)
    assert cost.usd is None and cost.note == "no usage"


def test_a_cost_past_any_float_is_unknown_not_infinite():
    huge = Price(input_per_mtok=1e308, output_per_mtok=1e308)
    cost = attempt_cost({"prompt_tokens": 1000, "completion_tokens": 1000}, huge)
    assert cost.usd is None and "out of range" in cost.note


@pytest.mark.parametrize("value", [math.inf, math.nan, -1.0])
def test_a_price_that_is_not_a_finite_amount_is_refused(value):
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        Price(input_per_mtok=value, output_per_mtok=1.0)
    with pytest.raises(ValidationError):
        Price(input_per_mtok=1.0, output_per_mtok=1.0, audio_input_per_mtok=value)


@pytest.mark.parametrize("price", [".inf", ".nan"])
def test_an_infinite_price_in_a_defaults_file_names_the_file(small_bench, tmp_path, price):
    """An infinite price made every cost NaN ("priced"), and a NaN spend never reaches a budget."""
    defaults = tmp_path / "prices.yaml"
    defaults.write_text(f"omni-test:\n  price:\n    input_per_mtok: {price}\n    output_per_mtok: 1\n", "utf-8")
    with LoopbackServer(default=Behaviour(usage={"prompt_tokens": 1, "completion_tokens": 1})) as server:
        args = [
            "eval", "--bench", small_bench.root, "--model", "omni-test", "--base-url", server.base_url, "--no-key",
            "-o", tmp_path / "run", "--no-progress", "--defaults", defaults, "--budget", "1",
        ]  # fmt: skip
        result = runner.invoke(app, [str(a) for a in args])
        assert server.count == 0
    assert result.exit_code == 2, result.output
    assert "prices.yaml [omni-test]" in result.output and "finite" in result.output
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("budget", ["inf", "nan", "0", "-1"])
def test_a_budget_that_is_not_a_positive_finite_amount_is_refused(small_bench, tmp_path, budget):
    defaults = tmp_path / "prices.yaml"
    defaults.write_text("omni-test:\n  price:\n    input_per_mtok: 1\n    output_per_mtok: 1\n", "utf-8")
    with LoopbackServer() as server:
        args = [
            "eval", "--bench", small_bench.root, "--model", "omni-test", "--base-url", server.base_url, "--no-key",
            "-o", tmp_path / "run", "--no-progress", "--defaults", defaults, "--budget", budget,
        ]  # fmt: skip
        result = runner.invoke(app, [str(a) for a in args])
        assert server.count == 0  # an infinite budget once ran with no limit at all
    assert result.exit_code == 2, result.output
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("count", [10**400, math.nan, -math.inf, -5, "12"], ids=repr)
def test_garbage_usage_from_a_server_runs_to_the_end_with_the_cost_unknown(small_bench, tmp_path, count):
    """A server whose usage held a count no float can hold crashed the run (OverflowError) after the answer was
    stored, and then `runs show` (a validation error); now the cost is unknown, the run completes, every reader
    works and the export stays JSON."""
    defaults = tmp_path / "prices.yaml"
    defaults.write_text("omni-test:\n  price:\n    input_per_mtok: 1\n    output_per_mtok: 1\n", "utf-8")
    usage = {"prompt_tokens": count, "completion_tokens": 1, "total_tokens": count, "cost": count}
    huge = Behaviour(text="B", usage=usage)
    out = tmp_path / "run"
    with LoopbackServer(default=huge) as server:
        args = [
            "eval", "--bench", small_bench.root, "--model", "omni-test", "--base-url", server.base_url, "--no-key",
            "-o", out, "--no-progress", "--defaults", defaults, "--max-attempts", "1",
        ]  # fmt: skip
        result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    assert "cost unknown (no usage: 4; 4 attempts)" in result.output
    shown = runner.invoke(app, ["runs", "show", str(out)])
    assert shown.exit_code == 0, shown.output
    assert "nan" not in shown.output.lower() and "-inf" not in shown.output.lower()
    exported = runner.invoke(app, ["export", str(out), "-o", str(tmp_path / "e.json")])
    assert exported.exit_code == 0, exported.output
    json.loads((tmp_path / "e.json").read_text(encoding="utf-8"), parse_constant=_no_constant)


def _no_constant(name: str) -> None:
    raise AssertionError(f"an export holds {name}: not JSON")


# ---------------------------------------------------------------------------------------------- spoken replies


@pytest.mark.parametrize(
    ("offset", "fmt", "value"),
    [(22, "<H", 0), (32, "<H", 0), (24, "<I", 0), (34, "<H", 0)],
    ids=["no channels", "no frame size", "0 Hz", "0-bit samples"],
)
def test_a_wav_whose_header_lies_about_its_format_is_not_kept(offset, fmt, value):
    """A WAV at 0 Hz or with 0-bit samples was kept as a spoken reply (only channels and frame size were
    checked); no decoder can play it, so it fails the attempt as malformed, like a cut one."""
    import struct

    from omnivchat.routes import RouteError
    from omnivchat.routes._audio import checked_wav

    wav = bytearray(wav_from_pcm16(b"\x01\x00" * 100, 24000))
    assert checked_wav(bytes(wav), "q1") == bytes(wav)
    struct.pack_into(fmt, wav, offset, value)
    with pytest.raises(RouteError) as caught:
        checked_wav(bytes(wav), "q1")
    assert caught.value.kind == "malformed" and "item q1" in str(caught.value)


# ------------------------------------------------------------------------------------------------- bad files


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_an_endpoints_or_defaults_file_nested_too_deeply_is_one_clear_error(tmp_path, suffix):
    """A list nested past Python's recursion limit raised a bare RecursionError (a traceback) out of both."""
    from omnivchat.routes import ReplicaError, SettingsError, load_endpoints, resolve_settings

    path = tmp_path / f"deep{suffix}"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(ReplicaError, match=f"{path}: not valid"):
        load_endpoints(path)
    with pytest.raises(SettingsError, match=f"{path}: not valid"):
        resolve_settings("omni-test", user_file=path)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("http://127.0.0.1:8001/v1\nhttp://127.0.0.1:8001/v1/", "listed twice"),
        ("http://LOCALHOST:8001/v1\nhttp://localhost:8001/v1", "listed twice"),
        ("http://user:sk-in-the-url@127.0.0.1:8001/v1", "embeds credentials"),
        ("http://127.0.0.1:8001/v1 0", "at least 1"),
        ("http://127.0.0.1:8001/v1 -2", "at least 1"),
        ("http://127.0.0.1:99999/v1", "not a URL"),
        ("ftp://127.0.0.1/v1", "not an http"),
        ("http://127.0.0.1:8001/v1\nhttp://127.0.0.1:8002/v2", "same API path"),
    ],
)
def test_bad_endpoints_lines_are_refused_before_anything_is_sent(tmp_path, line, message):
    from omnivchat.routes import ReplicaError, load_endpoints

    path = tmp_path / "endpoints.txt"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(ReplicaError, match=message) as caught:
        load_endpoints(path)
    assert str(path) in str(caught.value) and "sk-in-the-url" not in str(caught.value)
