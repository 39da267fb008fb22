"""The cascade model (`--model cascade:FILE`) against loopback servers: its ASR stage on `/audio/transcriptions`,
its captioner and text model on `/chat/completions`, run through `eval` on a byo multiple-choice set of real
rendered clips. Every stage request is stored, priced and reused on resume; a failed stage fails the item with
its kind; the manifest lists the stages without secrets; a bad FILE is one error line naming the file and key."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from omnivchat.benchmarks import ScoreOptions
from omnivchat.benchmarks.byo import BYO
from omnivchat.cli import app
from omnivchat.routes import get_route
from omnivchat.routes._cascade import CascadeError
from omnivchat.runs import RunStore
from omnivchat.testing import Behaviour, LoopbackServer, message_text

runner = CliRunner()
HEARD = "which colour is the square"
SPEECH = "Which colour is the square?"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A byo multiple-choice set: two items on one rendered clip whose question is spoken, and one on a clip with
    no audio track."""
    from omnivchat import media
    from omnivchat.synth import render_clip

    root = tmp_path_factory.mktemp("cascade")
    scene = {
        "size": [160, 90],
        "background": "navy",
        "objects": [{"shape": "square", "color": "red", "position": "center"}],
        "speech": [{"text": SPEECH, "language": "en", "start": 0.2}],
    }
    clip = render_clip(scene, root / "media" / "spoken.mp4").path
    media.strip_audio(clip, out=root / "media" / "mute.mp4")
    options = ["red", "blue", "green", "yellow"]
    rows = [
        {
            "qid": "q1",
            "question": "Pick the colour.",
            "options": options,
            "answer": "A",
            "requires": ["audio"],
            "video": "media/spoken.mp4",
        },
        {
            "qid": "q2",
            "question": "Pick again.",
            "options": options,
            "answer": "A",
            "requires": ["audio"],
            "video": "media/spoken.mp4",
        },
        {
            "qid": "q3",
            "question": "And here?",
            "options": options,
            "answer": "A",
            "requires": ["audio"],
            "video": "media/mute.mp4",
        },
    ]
    path = root / "mc.json"
    path.write_text(json.dumps(rows))
    return path


def cascade_file(tmp_path: Path, server: LoopbackServer, *, captioner: bool = False) -> Path:
    base = server.base_url
    text = f'[asr]\nmodel = "whisper-1"\nbase_url = "{base}"\napi_key_env = "CASCADE_TEST_KEY"\n\n'
    if captioner:
        text += f'[captioner]\nmodel = "vision"\nbase_url = "{base}"\napi_key_env = "CASCADE_TEST_KEY"\n'
        text += "frames_per_second = 2\n\n"
    text += f'[llm]\nmodel = "text"\nbase_url = "{base}"\napi_key_env = "CASCADE_TEST_KEY"\ntemperature = 0\n'
    path = tmp_path / "cascade.toml"
    path.write_text(text)
    return path


def rules(asr: Behaviour, captions: Behaviour | None = None, llm: Behaviour | None = None) -> Any:
    def choose(payload: dict[str, Any]) -> Behaviour | None:
        if payload.get("transcription"):
            return asr
        if payload.get("model") == "vision":
            return captions or Behaviour(text="A red square on a dark blue background.")
        return llm or Behaviour(text="A", usage={"prompt_tokens": 50, "completion_tokens": 1, "total_tokens": 51})

    return choose


def eval_args(data: Path, model_file: Path, run_dir: Path, *more: str) -> list[str]:
    model = f"cascade:{model_file}"
    return ["eval", "--benchmark", "byo", "--data", str(data), "--model", model, "-o", str(run_dir), "--no-progress"]


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    value = "sk-" + secrets.token_hex(16)  # built at run time: no key-like string in the fixtures
    monkeypatch.setenv("CASCADE_TEST_KEY", value)
    return value


def test_happy_path_stores_every_stage_and_resumes_without_sending(data: Path, tmp_path: Path, key: str) -> None:
    asr = Behaviour(text=HEARD + "?", usage={"prompt_tokens": 0, "completion_tokens": 6, "total_tokens": 6})
    with LoopbackServer(rules=rules(asr), api_key=key) as server:
        model_file = cascade_file(tmp_path, server)
        run_dir = tmp_path / "run"
        result = runner.invoke(app, eval_args(data, model_file, run_dir))
        assert result.exit_code == 0, result.output
        posts = [r for r in server.requests if r.method == "POST"]
        transcriptions = [r for r in posts if r.path.endswith("/audio/transcriptions")]
        chats = [r for r in posts if r.path.endswith("/chat/completions")]
        # one transcription for the one audible clip (q1 and q2 share it; q3 has no audio track), one text request
        # per item, each holding the transcript and the benchmark's prompt
        assert len(transcriptions) == 1 and transcriptions[0].json["language"] == "en"
        assert len(chats) == 3
        prompts = {r.text for r in chats}
        assert sum(HEARD in p for p in prompts) == 2 and any("(no speech)" in p for p in prompts)
        assert all("A. red" in p or "red" in p for p in prompts)
        assert all(r.headers["Authorization"] == f"Bearer {key}" for r in posts)

        with RunStore(run_dir / "store.sqlite", read_only=True) as store:
            asr_rows = store.items("mc4/asr")
            # q1 and q2 share one transcription: asked at once, the second waits for the first (one row); asked one
            # after the other (a busy machine), the second finds it stored (its own row, the same key, no request)
            assert {r["item_id"] for r in asr_rows} in ({"q1"}, {"q2"}, {"q1", "q2"})
            assert len({r["key"] for r in asr_rows}) == 1
            assert store.result(asr_rows[0]["key"]).text == HEARD + "?"  # type: ignore[union-attr]  # done: stored
            assert {r["item_id"] for r in store.items("mc4/llm")} == {"q1", "q2", "q3"}
            assert {r["status"] for r in store.items("mc4")} == {"done"}
            notes = {(row["kind"], row["note"]) for row in store.cost_rows()}
        # every attempt priced: the loopback text model has no price, so its cost is stated as unknown, never 0
        assert ("mc4", "billed by its stages") in notes and ("mc4/llm", "no price") in notes
        scores = BYO.score(None, run_dir, ScoreOptions())
        assert scores.complete and scores.metrics["overall"]["accuracy"] == 1.0

        manifest = (run_dir / "manifest.json").read_text()
        stages = json.loads(manifest)["route"]["settings"]["stages"]
        assert set(stages) == {"asr", "llm"} and stages["asr"]["kind"] == "openai-transcriptions"
        assert stages["llm"]["endpoint"] == "http://127.0.0.1/v1/chat/completions"  # no port
        assert key not in manifest and str(server.base_url) not in manifest and "CASCADE_TEST_KEY" not in manifest

        before = server.count
        again = runner.invoke(app, eval_args(data, model_file, run_dir))
        assert again.exit_code == 0, again.output
        assert server.count == before  # resumed: nothing re-sent


def test_an_interrupted_item_resumes_from_its_stored_transcript(data: Path, tmp_path: Path, key: str) -> None:
    asr = Behaviour(text=HEARD)
    failing = Behaviour(status=400, error_message="bad request")
    with LoopbackServer(rules=rules(asr, llm=failing), api_key=key) as server:
        model_file = cascade_file(tmp_path, server)
        run_dir = tmp_path / "run"
        result = runner.invoke(app, eval_args(data, model_file, run_dir))
        assert result.exit_code == 1 or "failed" in result.output
        with RunStore(run_dir / "store.sqlite", read_only=True) as store:
            items = store.items("mc4")
            assert {(r["status"], r["error_kind"]) for r in items} == {("failed", "http_error")}
            assert all(r["error"].startswith("cascade llm: HTTP 400") for r in items)
        server.rules = rules(asr)  # the text model is back
        transcribed = sum(r.path.endswith("/audio/transcriptions") for r in server.requests)
        result = runner.invoke(app, eval_args(data, model_file, run_dir))
        assert result.exit_code == 0, result.output
        assert sum(r.path.endswith("/audio/transcriptions") for r in server.requests) == transcribed  # reused
        with RunStore(run_dir / "store.sqlite", read_only=True) as store:
            assert {r["status"] for r in store.items("mc4")} == {"done"}


@pytest.mark.parametrize(
    ("asr", "kind"),
    [
        (Behaviour(status=500), "server_error"),
        (Behaviour(bad_chunk="<html>proxy error</html>"), "malformed"),
        (Behaviour(malformed=True), "malformed"),
    ],
)
def test_a_failing_asr_stage_fails_its_items_with_its_kind(
    data: Path, tmp_path: Path, key: str, asr: Behaviour, kind: str
) -> None:
    with LoopbackServer(rules=rules(asr), api_key=key) as server:
        model_file = cascade_file(tmp_path, server)
        run_dir = tmp_path / "run"
        runner.invoke(app, [*eval_args(data, model_file, run_dir), "--max-attempts", "2"])
        with RunStore(run_dir / "store.sqlite", read_only=True) as store:
            rows = {r["item_id"]: r for r in store.items("mc4")}
            attempts = store.attempts()
        # the audible items fail with the stage's kind (never an answer); the silent one needs no ASR
        assert {rows["q1"]["error_kind"], rows["q2"]["error_kind"]} == {kind}
        assert rows["q3"]["status"] == "done"
        assert sum(r.path.endswith("/audio/transcriptions") for r in server.requests) == 2  # its 2 attempts, once
        assert sum(a["status"] == "failed" for a in attempts) >= 2
        scores = BYO.score(None, run_dir, ScoreOptions())
        assert not scores.complete  # failures are no score


def test_a_garbage_text_model_reply_fails_the_item(data: Path, tmp_path: Path, key: str) -> None:
    garbage = Behaviour(bad_chunk="not json at all")
    with LoopbackServer(rules=rules(Behaviour(text=HEARD), llm=garbage), api_key=key) as server:
        run_dir = tmp_path / "run"
        runner.invoke(app, [*eval_args(data, cascade_file(tmp_path, server), run_dir), "--max-attempts", "1"])
        with RunStore(run_dir / "store.sqlite", read_only=True) as store:
            assert {r["error_kind"] for r in store.items("mc4")} == {"malformed"}


def test_captioner_sees_frames_and_a_blanked_video_gets_no_captions(data: Path, tmp_path: Path, key: str) -> None:
    from omnivchat import media

    with LoopbackServer(rules=rules(Behaviour(text=HEARD)), api_key=key) as server:
        route = get_route(f"cascade:{cascade_file(tmp_path, server, captioner=True)}")
        clip = data.parent / "media" / "spoken.mp4"
        blank = media.blank_video(clip)
        from omnivchat.routes import ChatRequest

        async def ask(path: Path) -> str:
            prepared = route.prepare(ChatRequest(item_id="x", clip=path, text="Which colour?"))
            return (await route.send(prepared)).text

        import asyncio

        async def both() -> None:
            try:
                await ask(clip)
                await ask(blank)
            finally:
                await route.aclose()

        asyncio.run(both())
        vision = [r for r in server.requests if isinstance(r.json, dict) and r.json.get("model") == "vision"]
        assert len(vision) == 1  # the blanked clip was not captioned
        parts = vision[0].json["messages"][-1]["content"]
        assert sum(p["type"] == "image_url" for p in parts) >= 2 and not any(p["type"] == "input_audio" for p in parts)
        texts = [r.text for r in server.requests if isinstance(r.json, dict) and r.json.get("model") == "text"]
        assert "A red square on a dark blue background." in texts[0]
        assert "The video shows" in texts[0] and "The video shows" not in texts[1] and HEARD in texts[1]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[asr\nmodel = 1", "not valid TOML"),
        ('[llm]\nmodel = "x"\n', "asr: Field required"),
        ('[asr]\nmodel = "whisper-tiny.en"\n[llm]\nmodel = "x"\nmodle = "y"\n', "llm.modle: Extra inputs"),
        (
            '[asr]\nmodel = "w"\n[captioner]\nmodel = "v"\nframes_per_second = 0\n[llm]\nmodel = "x"\n',
            "captioner.frames_per_second",
        ),
        ('[asr]\nmodel = "whisper-tiny.en"\n[llm]\nmodel = "x"\n[judge]\nmodel = "z"\n', "judge: Extra inputs"),
        # a stage's server: named by the file's key, never by the --base-url a cascade refuses
        (
            '[asr]\nmodel = "whisper-1"\nno_key = true\n[llm]\nmodel = "x"\nbase_url = "http://127.0.0.1:5/v1"\n',
            "asr.base_url: whisper-1 needs a base_url (an OpenAI-compatible /audio/transcriptions server)",
        ),
        (
            '[asr]\nmodel = "whisper-tiny.en"\n[captioner]\nmodel = "v"\n[llm]\nmodel = "x"\nbase_url = "http://h/v1"\n',
            "captioner.base_url: v needs a base_url (an OpenAI-compatible /chat/completions server)",
        ),
        (
            '[asr]\nmodel = "whisper-tiny.en"\n[llm]\nmodel = "x"\nbase_url = "ftp://nowhere"\n',
            "llm.base_url: must be http(s)://host/... (got scheme 'ftp')",
        ),
        (
            '[asr]\nmodel = "whisper-tiny.en"\n[llm]\nmodel = "x"\nbase_url = "http://u:p@127.0.0.1:5/v1"\n',
            "llm.base_url: must not embed credentials",
        ),
        # a stage that is a cascade (here any file; the test below names the file itself): a RecursionError before
        (
            '[asr]\nmodel = "whisper-tiny.en"\n[llm]\nmodel = "cascade:other.toml"\n',
            "llm.model: cascade:other.toml is a cascade; a stage names one model",
        ),
    ],
)
def test_a_bad_cascade_file_is_one_line_naming_file_and_key(
    data: Path, tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(CascadeError) as info:
        get_route(f"cascade:{path}")
    assert str(info.value).startswith(f"{path}: ") and message in str(info.value) and "\n" not in str(info.value)
    assert "--base-url" not in str(info.value)
    result = runner.invoke(app, eval_args(data, path, tmp_path / "run"), env={"COLUMNS": "400"})
    assert result.exit_code == 2 and message in result.output and not (tmp_path / "run").exists()


def test_a_cascade_naming_itself_as_its_text_model_is_one_line(data: Path, tmp_path: Path) -> None:
    path = tmp_path / "self.toml"
    path.write_text(f'[asr]\nmodel = "whisper-tiny.en"\n[llm]\nmodel = "cascade:{path}"\n')
    result = runner.invoke(app, eval_args(data, path, tmp_path / "run"), env={"COLUMNS": "400"})
    assert result.exit_code == 2 and f"{path}: llm.model: cascade:{path} is a cascade" in result.output
    assert "RecursionError" not in result.output and not (tmp_path / "run").exists()


def test_a_missing_key_is_refused_before_anything_is_sent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CASCADE_TEST_KEY", raising=False)
    with LoopbackServer() as server:
        from omnivchat.routes import CredentialError

        with pytest.raises(CredentialError, match=r"\[asr\] needs its key in CASCADE_TEST_KEY"):
            get_route(f"cascade:{cascade_file(tmp_path, server)}")
        assert server.count == 0


def test_a_key_echoed_by_a_stage_is_masked_in_the_store(data: Path, tmp_path: Path, key: str) -> None:
    from omnivchat.testing import API_KEY

    asr = Behaviour(text=f"{HEARD} {API_KEY}")  # the server echoes the key it was sent into the transcript
    with LoopbackServer(rules=rules(asr), api_key=key) as server:
        run_dir = tmp_path / "run"
        result = runner.invoke(app, eval_args(data, cascade_file(tmp_path, server), run_dir))
        assert result.exit_code == 0, result.output
        texts = [r.text for r in server.requests if r.path.endswith("/chat/completions")]
    assert not any(key in text for text in texts)  # the text model was sent the masked transcript
    with RunStore(run_dir / "store.sqlite", read_only=True) as store:
        stored = store.result(store.items("mc4/asr")[0]["key"])
        assert stored is not None and stored.redacted and key not in stored.text and HEARD in stored.text
        assert store.redacted_counts() == {"mc4/asr": 1}
    for path in run_dir.rglob("*"):  # the store, its side files, the manifest: nowhere
        assert path.is_dir() or key.encode() not in path.read_bytes(), path


def test_a_budget_is_refused_before_anything_is_written(data: Path, tmp_path: Path, key: str) -> None:
    with LoopbackServer(rules=rules(Behaviour(text=HEARD)), api_key=key) as server:
        run_dir = tmp_path / "run"
        result = runner.invoke(app, [*eval_args(data, cascade_file(tmp_path, server), run_dir), "--budget", "1"])
        assert result.exit_code == 2 and "--budget does not cover the stages" in result.output
        assert server.count == 0 and not (run_dir / "manifest.json").exists()


def test_ablate_finds_the_cascade_ignoring_the_video(data: Path, tmp_path: Path, key: str) -> None:
    """A text model that answers right exactly when it is told the spoken question: the grid runs the cascade in
    all four conditions and finds it ignoring the video (it never sees it) while relying on the audio."""
    knows = Behaviour(text="A")

    def choose(payload: dict[str, Any]) -> Behaviour | None:
        if payload.get("transcription"):
            return Behaviour(text=HEARD)
        return knows if HEARD in message_text(payload) else Behaviour(text="B")

    with LoopbackServer(rules=choose, api_key=key) as server:
        out = tmp_path / "grid"
        args = [
            "ablate",
            "--benchmark",
            "byo",
            "--data",
            str(data),
            "--model",
            f"cascade:{cascade_file(tmp_path, server)}",
        ]
        result = runner.invoke(app, [*args, "-o", str(out), "--skip-self-check", "--no-progress"])
        assert result.exit_code == 0, result.output
    d = json.loads((out / "ablation.json").read_text())["diagnosis"]
    # q3's clip has no audio track: wrong everywhere; q1 and q2 are right whenever the audio is there
    assert d["means"] == pytest.approx({"both": 2 / 3, "video_only": 0.0, "audio_only": 2 / 3, "neither": 0.0})
    assert d["video_reliance"] == 0.0 and d["intervals"]["video_reliance"] == [0.0, 0.0]
    assert "video_ignored" in d["flags"] and "audio_ignored" not in d["flags"] and "video ignored" in d["verdict"]


def test_a_multi_turn_dialogue_is_heard_turn_by_turn(small_bench_dir: Path, tmp_path: Path, key: str) -> None:
    """The native bench's dialogue m1 (two spoken turns): each turn's clip is transcribed (its own stored ASR
    request), and the text model gets the earlier turn with its reply, then the last turn."""

    def choose(payload: dict[str, Any]) -> Behaviour | None:
        if payload.get("transcription"):
            return Behaviour(text=f"words of {payload['file_sha256'][:8]}")
        return Behaviour(text="One square.")

    with LoopbackServer(rules=choose, api_key=key) as server:
        run_dir = tmp_path / "run"
        model = f"cascade:{cascade_file(tmp_path, server)}"
        args = ["eval", "--bench", str(small_bench_dir), "--model", model, "-o", str(run_dir), "--no-progress"]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        prompts = {r.json["messages"][-1]["content"] for r in server.requests if r.path.endswith("/completions")}
    with RunStore(run_dir / "store.sqlite", read_only=True) as store:
        heard = {r["item_id"]: store.result(r["key"]).text for r in store.items("candidate/asr")}  # type: ignore[union-attr]  # done rows have results
        assert {r["status"] for r in store.items()} == {"done"}
    assert {"s1", "s2", "s3", "m1", "m1#turn1"} == set(heard)
    dialogue = next(p for p in prompts if "Earlier turn 1" in p)
    assert f"Earlier turn 1, the user's speech: {heard['m1#turn1']}" in dialogue
    assert "Earlier turn 1, your reply: There is one square." in dialogue
    assert f"Speech in the video: {heard['m1']}" in dialogue


def test_a_dry_run_says_the_stages_cost_is_not_estimated(data: Path, tmp_path: Path, key: str) -> None:
    with LoopbackServer(api_key=key) as server:
        run_dir = tmp_path / "run"
        args = [*eval_args(data, cascade_file(tmp_path, server), run_dir), "--dry-run"]
        result = runner.invoke(app, args, env={"COLUMNS": "300"})
        assert result.exit_code == 0, result.output
        assert "cost unknown (the stages of a cascade are not estimated" in result.output and "$0" not in result.output
        assert server.count == 0


def test_a_spoken_reply_is_refused_before_anything_is_sent(data: Path, tmp_path: Path, key: str) -> None:
    from omnivchat.routes import ChatRequest, ReplyAudio, RouteError

    with LoopbackServer(api_key=key) as server:
        route = get_route(f"cascade:{cascade_file(tmp_path, server)}")
        request = ChatRequest(item_id="x", text="Hi", reply_audio=ReplyAudio(voice="alloy"))
        with pytest.raises(RouteError) as info:
            route.prepare(request)
        assert info.value.kind == "unsupported" and "text only" in info.value.message and server.count == 0


def invocation_cost(output: str) -> str:
    return next(line for line in output.splitlines() if line.startswith("cost of this invocation: "))


def test_the_invocation_counts_its_stages_requests_and_costs(data: Path, tmp_path: Path, key: str) -> None:
    from omnivchat.runs import tally

    asr = Behaviour(text=HEARD, usage={"prompt_tokens": 0, "completion_tokens": 6, "total_tokens": 6})
    with LoopbackServer(rules=rules(asr), api_key=key) as server:
        model_file = cascade_file(tmp_path, server)
        # the text model priced, the ASR not: 3 priced attempts of 51 tokens, 1 of unknown cost
        model_file.write_text(model_file.read_text() + "price = {input_per_mtok = 2.0, output_per_mtok = 8.0}\n")
        run_dir = tmp_path / "run"
        result = runner.invoke(app, eval_args(data, model_file, run_dir), env={"COLUMNS": "400"})
        assert result.exit_code == 0, result.output
        sent = sum(r.method == "POST" for r in server.requests)
    assert sent == 4 and "4 requests sent" in result.output
    with RunStore(run_dir / "store.sqlite", read_only=True) as store:
        stored = tally(store.cost_rows()).total
    assert stored.attempts == 4 and stored.priced == 3 and stored.spent_usd == pytest.approx(3 * (100 + 8) / 1e6)
    line = invocation_cost(result.output)
    assert line == f"cost of this invocation: {stored.describe()}"
    assert "$0.000324 for 3 attempts, and 1 more of unknown cost (no price: 1)" in line


def test_an_unpriced_cascade_costs_unknown_never_0(data: Path, tmp_path: Path, key: str) -> None:
    with LoopbackServer(rules=rules(Behaviour(text=HEARD)), api_key=key) as server:
        run_dir = tmp_path / "run"
        result = runner.invoke(app, eval_args(data, cascade_file(tmp_path, server), run_dir), env={"COLUMNS": "400"})
        assert result.exit_code == 0, result.output
    assert invocation_cost(result.output) == "cost of this invocation: cost unknown (no price: 4; 4 attempts)"
    assert "$0" not in result.output
    shown = runner.invoke(app, ["runs", "show", str(run_dir)], env={"COLUMNS": "400"})
    assert shown.exit_code == 0, shown.output
    assert "$0" not in shown.output and "cost unknown" in shown.output


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--base-url", "http://127.0.0.1:5/v1"], "--base-url"),
        (["--base-url", "http://127.0.0.1:5/v1", "--base-url", "http://127.0.0.1:6/v1"], "--base-url"),
        (["--no-key"], "--no-key"),
        (["--key-file", "keys.env", "--key-field", "K"], "--key-file, --key-field"),
        (["--timeout", "5", "--trust-env"], "--timeout, --trust-env"),
    ],
)
def test_a_route_flag_is_refused_for_a_cascade(
    data: Path, tmp_path: Path, key: str, flags: list[str], named: str
) -> None:
    with LoopbackServer(rules=rules(Behaviour(text=HEARD)), api_key=key) as server:
        model_file = cascade_file(tmp_path, server)
        run_dir = tmp_path / "run"
        args = [*eval_args(data, model_file, run_dir), *flags]
        result = runner.invoke(app, args, env={"COLUMNS": "400"})
        assert server.count == 0
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and f"{named} cannot be used with a cascade" in lines[0]
    assert "each stage's base_url" in lines[0] and str(model_file) in lines[0] and not run_dir.exists()


def test_get_route_refuses_a_base_url_for_a_cascade(tmp_path: Path, key: str) -> None:
    from omnivchat.routes import SettingsError

    with LoopbackServer() as server, pytest.raises(SettingsError, match="each stage's base_url"):
        get_route(f"cascade:{cascade_file(tmp_path, server)}", base_url="http://127.0.0.1:5/v1")


@pytest.mark.parametrize("given", ["", " "])
def test_an_empty_cascade_path_says_a_file_is_needed(data: Path, tmp_path: Path, given: str) -> None:
    with pytest.raises(CascadeError, match=r"^cascade: needs a FILE"):
        get_route(f"cascade:{given}")
    args = ["eval", "--benchmark", "byo", "--data", str(data), "--model", f"cascade:{given}", "-o", str(tmp_path / "r")]
    result = runner.invoke(app, args, env={"COLUMNS": "400"})
    assert result.exit_code == 2 and "cascade: needs a FILE" in result.output and "directory" not in result.output
