"""`omnivchat rl dataset`: the Table 4 training set, written for TRL, verl and ms-swift and read back with each
engine's own loader (where installed) and our reward adapter for that engine."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from omnivchat.bench import Instance
from omnivchat.cli import app
from omnivchat.media import probe, sample_frames
from omnivchat.rl.dataset import (
    DatasetError,
    Settings,
    build_dataset,
    estimate_method,
    estimate_text_tokens,
    qwen_audio_tokens,
    qwen_video_tokens,
    select_dialogues,
    smart_resize,
)
from tests.bench_factory import instance, write_bench

RUNNER = CliRunner()
QUESTION = "What colour is the square on my left?"
# Machine checks, so the offline rule judge grades the replies (weights 1 / 0.5 / 0.1 / 0)
RUBRIC = [
    {"tier": 0, "text": "The reply is in English.", "check": {"language": "en"}},
    {"tier": 1, "text": "Says the left door is closed.", "check": {"all_of": ["closed"]}},
    {"tier": 2, "text": "Mentions the right door.", "check": {"any_of": ["right"]}},
]
REPLIES = ["The door on your left is closed.", ""]
# r = 1/2 (tier 1 met, tier 2 not), f = 1, ρ = 1/2 / 7 -> e = 1; the empty reply: r = f = e = 0
TOTALS = [0.5 + 0.5 + 0.1, 0.0]


@pytest.fixture(scope="module", autouse=True)
def media_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The derived-clip cache in a temp dir (nothing touches ~/.cache)."""
    old = os.environ.get("OMNIVCHAT_CACHE_DIR")
    os.environ["OMNIVCHAT_CACHE_DIR"] = str(tmp_path_factory.mktemp("media-cache"))
    yield
    if old is None:
        os.environ.pop("OMNIVCHAT_CACHE_DIR", None)
    else:
        os.environ["OMNIVCHAT_CACHE_DIR"] = old


def _render(path: Path, seconds: float, line: str, seed: int) -> None:
    from omnivchat.synth import render_clip

    spec = {
        "size": [160, 90], "duration": seconds, "seed": seed, "background": "navy",
        "objects": [{"shape": "square", "color": "red", "position": "left"}],
        "speech": [{"text": line, "language": "en", "start": 0.2}],
    }  # fmt: skip
    render_clip(spec, path)


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bench of real clips with real speech: a 3 s single-turn dialogue, an 11 s one (22 frames at 2 fps, so
    16 are kept), a 3-turn dialogue, and one of 11 turns (more than Table 4's ten clips)."""
    root = tmp_path_factory.mktemp("bench")
    rows = [
        instance("short", "SVMR", 1, rubric=RUBRIC),
        instance("long", "SVMR", 1, rubric=RUBRIC),
        instance("multi", "MRR", 3, rubric=RUBRIC),
        instance("eleven", "MRR", 11, rubric=RUBRIC),
    ]
    rows[2]["turns"][1]["text"] = "typed beside the clip"
    write_bench(root, rows)
    _render(root / "media/short/turn1.mp4", 3.0, QUESTION, 1)
    _render(root / "media/long/turn1.mp4", 11.0, QUESTION, 2)
    for n in (1, 2, 3):
        _render(root / f"media/multi/turn{n}.mp4", 2.0, f"This is turn {n}.", 10 + n)
    for n in range(1, 12):
        (root / f"media/eleven/turn{n}.mp4").write_bytes((root / "media/short/turn1.mp4").read_bytes())
    return root


def _manifest(out: Path) -> dict[str, Any]:
    return json.loads((out / "manifest.json").read_text(encoding="utf-8"))


def _instance_of(text: str) -> Instance:
    return Instance.model_validate_json(text)


# ------------------------------------------------------------------------------------------------- pure parts


def test_qwen_token_arithmetic_by_hand() -> None:
    # Qwen2.5-Omni, 28-pixel blocks: 160 x 90 is below the 128-block minimum (100,352 px), so it is scaled up by
    # sqrt(100352 / 14400) = 2.64: h = ceil(90 x 2.64 / 28) x 28 = 252, w = ceil(160 x 2.64 / 28) x 28 = 448
    assert smart_resize(90, 160, 28, 128 * 28 * 28, 768 * 28 * 28) == (252, 448)
    # 16 frames = 8 temporal patches x (252 / 28) x (448 / 28) = 8 x 9 x 16
    assert qwen_video_tokens(16, 90, 160, "qwen2.5-omni") == 8 * 9 * 16
    assert qwen_video_tokens(5, 90, 160, "qwen2.5-omni") == 3 * 9 * 16  # an odd last frame is padded to a pair
    # Qwen3-Omni, 32-pixel blocks: scaled by sqrt(131072 / 14400) = 3.02 to 288 x 512, 9 x 16 blocks again
    assert smart_resize(90, 160, 32, 128 * 32 * 32, 768 * 32 * 32) == (288, 512)
    assert qwen_video_tokens(16, 90, 160) == 8 * 9 * 16
    # 1080p is above the 768-block maximum
    h, w = smart_resize(1080, 1920, 32, 128 * 32 * 32, 768 * 32 * 32)
    assert h * w <= 768 * 32 * 32 and h % 32 == 0 and w % 32 == 0
    # 1 s of audio, 100 hops. Qwen2.5-Omni: 50 after the stride-2 convolution, 25 after pooling.
    assert qwen_audio_tokens(1.0, "qwen2.5-omni") == 25
    assert qwen_audio_tokens(11.0, "qwen2.5-omni") == 275
    # Qwen3-Omni: 13 per whole 100-hop window; a 50-hop rest halves three times: 25, 13, 7
    assert qwen_audio_tokens(1.0) == 13 and qwen_audio_tokens(11.0) == 143 and qwen_audio_tokens(1.5) == 13 + 7
    assert qwen_audio_tokens(0.0) == 0
    assert estimate_text_tokens("abcdefgh") == 2
    assert estimate_text_tokens("你好吗") == 3
    assert estimate_text_tokens("你好 ab") == 2 + 1


def test_select_dialogues_leaves_out_more_than_ten_clips(bench: Path) -> None:
    from omnivchat.bench import load_bench

    kept, left = select_dialogues(load_bench(bench).instances, 10)
    assert [i.id for i in kept] == ["short", "long", "multi"]
    assert [(x.id, x.reason) for x in left] == [("eleven", "11 clips, more than the 10 allowed")]


def test_bad_settings_are_refused() -> None:
    with pytest.raises(DatasetError, match="fps must be positive"):
        Settings(fps=0)
    with pytest.raises(DatasetError, match="budgets"):
        Settings(max_prompt_tokens=0)


# ------------------------------------------------------------------------------------------------------- swift


def test_swift_set_media_manifest_and_reward(bench: Path, tmp_path: Path) -> None:
    from omnivchat.rl.swift import OmnivchatORM

    out = tmp_path / "swift"
    result = build_dataset(bench, out, "swift")
    lines = (out / "train.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    assert [_instance_of(r["instance"]).id for r in rows] == ["short", "long", "multi"]

    # multi-turn: system, then clip / earlier reference reply pairs in turn order, one <video> tag per clip
    multi = rows[2]
    roles = [m["role"] for m in multi["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    assert [m["content"] for m in multi["messages"][1:]] == [
        "<video>",
        "reply 1",
        "<video>typed beside the clip",
        "reply 2",
        "<video>",
    ]
    assert multi["videos"] == [str((out / f"media/multi/turn{n}.mp4").resolve()) for n in (1, 2, 3)]
    assert multi["audios"] == []
    assert "prompt_id" not in multi  # ms-swift makes its own

    # Table 4 media: 2 fps, at most 16 frames, the clip's length and its whole audio track kept
    short, long_ = probe(rows[0]["videos"][0]), probe(rows[1]["videos"][0])
    assert (short.n_frames, long_.n_frames) == (6, 16)
    assert short.has_audio and long_.has_audio
    assert abs(long_.video_duration - 11.0) < 0.05 and abs(long_.audio_duration - 11.0) < 0.05
    source = probe(bench / "media/long/turn1.mp4")
    assert source.n_frames == 275
    # sampling the prepared clip at 2 fps gives back its 16 frames
    assert len(sample_frames(rows[1]["videos"][0], 2.0, 16)) == 16

    manifest = _manifest(out)
    assert manifest["engine"] == "swift" and manifest["complete"] is True
    assert manifest["table4"]["fps"] == 2.0 and manifest["table4"]["max_frames_per_clip"] == 16
    assert manifest["table4"]["max_prompt_tokens"] == 11072 and manifest["table4"]["max_reply_tokens"] == 1024
    assert manifest["tokens"]["method"] == estimate_method("qwen3-omni") and manifest["tokens"]["processor"] is None
    assert set(manifest["tokens"]["prompt"]) == {"short", "long", "multi"}
    # the long clip's 16 frames and 11 s of audio cost more than the short one's 6 frames and 3 s (Qwen3-Omni:
    # 9 x 16 tokens per pair of frames, 13 audio tokens a second)
    tokens = manifest["tokens"]["prompt"]
    assert tokens["long"] - tokens["short"] == (8 - 3) * 9 * 16 + (143 - 39)
    assert manifest["left_out"] == [{"id": "eleven", "reason": "11 clips, more than the 10 allowed"}]
    assert manifest["counts"] == {"bench": 4, "written": 3, "left_out": 1}
    assert len(manifest["source"]["instances_sha256"]) == 64
    assert set(manifest["source"]["clips_sha256"]) == {
        "media/short/turn1.mp4",
        "media/long/turn1.mp4",
        *(f"media/multi/turn{n}.mp4" for n in (1, 2, 3)),
    }
    assert manifest["media"]["engine_settings"]["environment"]["USE_AUDIO_IN_VIDEO"] == "true"
    assert result.rows == 3

    # ms-swift's GRPO passes every column to the ORM, plus its own prompt_id per distinct prompt
    orm = OmnivchatORM()
    try:
        replies = [*REPLIES, "Closed. The right one is open.", "Closed."]
        picked = [rows[0]] * 2 + [rows[2]] * 2
        scores = orm(
            replies,
            instance=[r["instance"] for r in picked],
            prompt_id=["prompt_0", "prompt_0", "prompt_1", "prompt_1"],
            messages=[r["messages"] for r in picked],
        )
    finally:
        orm.close()
    # the multi-turn group: r = 1 (w = 6) and r = 1/2 (w = 1): ρ = 1/6 and 1/2 -> e = 0 and 1
    assert scores == pytest.approx([*TOTALS, 1.0 + 0.5, 0.5 + 0.5 + 0.1])


def test_swift_jsonl_loads_with_the_json_loader_ms_swift_calls(bench: Path, tmp_path: Path) -> None:
    """ms-swift reads a .jsonl with Hugging Face datasets' json loader (swift/dataset/loader.py)."""
    datasets = pytest.importorskip("datasets", reason="the `rl` extra brings datasets")
    out = tmp_path / "swift"
    build_dataset(bench, out, "swift")
    rows = [json.loads(line) for line in (out / "train.jsonl").read_text(encoding="utf-8").splitlines()]
    loaded = datasets.load_dataset(
        "json", data_files=str(out / "train.jsonl"), split="train", cache_dir=str(tmp_path / "hf")
    )
    assert loaded.num_rows == 3
    for got, row in zip(loaded, rows, strict=True):
        assert got["messages"] == row["messages"] and got["videos"] == row["videos"]
        assert got["instance"] == row["instance"] and not got["audios"]


def test_over_budget_dialogues_are_left_out_and_listed(bench: Path, tmp_path: Path) -> None:
    out = tmp_path / "budget"
    first = build_dataset(bench, tmp_path / "measure", "swift")
    tokens = first.tokens
    # a budget between the short and the long dialogue's prompts
    budget = (tokens["short"] + tokens["long"]) // 2
    assert tokens["short"] <= budget < tokens["long"]
    result = build_dataset(bench, out, "swift", settings=Settings(max_prompt_tokens=budget))
    manifest = _manifest(out)
    over = [x for x in manifest["left_out"] if x["id"] != "eleven"]
    assert {x["id"] for x in over} == {i for i, n in tokens.items() if n > budget}
    assert "long" in {x["id"] for x in over}
    assert over[0]["reason"].endswith(f"over the {budget}-token budget")
    assert manifest["tokens"]["prompt"]["long"] == tokens["long"]  # measured, then left out
    assert not (out / "media/long").exists()
    assert result.rows == 3 - len(over)


def test_cli_prints_outputs_and_refuses_a_folder_it_did_not_make(bench: Path, tmp_path: Path) -> None:
    out = tmp_path / "cli"
    got = RUNNER.invoke(app, ["rl", "dataset", str(bench), "-o", str(out), "--engine", "swift"])
    assert got.exit_code == 0, got.output
    assert "3 dialogues written for swift, 1 left out" in got.output
    assert "left out eleven: 11 clips, more than the 10 allowed" in " ".join(got.output.split())
    assert f"wrote {out / 'train.jsonl'}" in got.output and "USE_AUDIO_IN_VIDEO" in got.output

    # its own folder is rebuilt; any other non-empty folder is refused
    again = RUNNER.invoke(app, ["rl", "dataset", str(bench), "-o", str(out), "--engine", "swift", "--max-clips", "2"])
    assert again.exit_code == 0, again.output
    assert _manifest(out)["counts"] == {"bench": 4, "written": 2, "left_out": 2}
    assert not (out / "media/multi").exists()

    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine", encoding="utf-8")
    refused = RUNNER.invoke(app, ["rl", "dataset", str(bench), "-o", str(other), "--engine", "swift"])
    assert refused.exit_code == 2
    assert "is not empty and is not an `omnivchat rl dataset` folder" in " ".join(refused.output.split())
    assert sorted(p.name for p in other.iterdir()) == ["notes.txt"]

    bad = RUNNER.invoke(app, ["rl", "dataset", str(bench), "-o", str(tmp_path / "x"), "--engine", "openrlhf"])
    assert bad.exit_code == 2 and "--engine is one of trl, verl, swift" in bad.output
    args = ["rl", "dataset", str(bench), "-o", str(tmp_path / "y"), "--engine", "swift", "--estimate", "gpt-4o"]
    bad = RUNNER.invoke(app, args)
    assert bad.exit_code == 2 and "--estimate is one of qwen3-omni, qwen2.5-omni" in bad.output
    assert not (tmp_path / "y").exists()


def test_a_corrupt_clip_names_the_file_and_the_instance(bench: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    rows = [instance("good", "SVMR", 1), instance("bad", "SVMR", 1)]
    write_bench(broken, rows)
    (broken / "media/good/turn1.mp4").write_bytes((bench / "media/short/turn1.mp4").read_bytes())
    data = (bench / "media/long/turn1.mp4").read_bytes()
    (broken / "media/bad/turn1.mp4").write_bytes(data[: len(data) // 3])  # truncated
    with pytest.raises(DatasetError) as err:
        build_dataset(broken, tmp_path / "out", "swift")
    message = str(err.value)
    assert "instances.jsonl:2 instance bad, turn 1" in message
    assert str(broken / "media/bad/turn1.mp4") in message
    assert "\n" not in message


# --------------------------------------------------------------------------------------------------------- verl


def test_verl_parquet_loads_and_feeds_the_verl_reward(bench: Path, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet", reason="the `hf` extra (pyarrow) writes verl's parquet")
    from omnivchat.rl.verl import make_compute_score

    out = tmp_path / "verl"
    build_dataset(bench, out, "verl")
    rows = pq.read_table(out / "train.parquet").to_pylist()
    assert [r["extra_info"]["id"] for r in rows] == ["short", "long", "multi"]
    assert [r["extra_info"]["index"] for r in rows] == [0, 1, 2]
    assert {r["data_source"] for r in rows} == {"omnivchat"}
    multi = rows[2]
    assert [m["content"].count("<video>") for m in multi["prompt"] if m["role"] == "user"] == [1, 1, 1]
    assert [v["video"] for v in multi["videos"]] == [
        (out / f"media/multi/turn{n}.mp4").resolve().as_uri() for n in (1, 2, 3)
    ]
    assert {(v["fps"], v["max_frames"]) for v in multi["videos"]} == {(2.0, 16)}
    assert multi["reward_model"]["ground_truth"] == _instance_of(multi["extra_info"]["instance"]).reference
    manifest = _manifest(out)
    assert manifest["media"]["engine_settings"]["data.max_prompt_length"] == 11072
    assert manifest["media"]["engine_settings"]["data.max_response_length"] == 1024

    # verl's batch reward manager: one call per batch, the rows' extra_info, in a reordered batch
    scorer = make_compute_score()
    try:
        batch = [rows[0], rows[2], rows[0], rows[2]]
        scores = scorer(
            data_sources=[r["data_source"] for r in batch],
            solution_strs=[REPLIES[0], "Closed. The right one is open.", REPLIES[1], "Closed."],
            ground_truths=[r["reward_model"]["ground_truth"] for r in batch],
            extra_infos=[r["extra_info"] for r in batch],
        )
    finally:
        scorer.close()
    assert scores == pytest.approx([TOTALS[0], 1.0 + 0.5, TOTALS[1], 0.5 + 0.5 + 0.1])

    # the same file through Hugging Face datasets' parquet loader, as verl's RLHFDataset reads it
    datasets = pytest.importorskip("datasets", reason="the `rl` extra brings datasets")
    loaded = datasets.load_dataset(
        "parquet", data_files=str(out / "train.parquet"), split="train", cache_dir=str(tmp_path / "hf")
    )
    assert loaded.num_rows == 3 and loaded[2]["extra_info"]["index"] == 2


# ---------------------------------------------------------------------------------------------------------- TRL


def test_trl_dataset_loads_and_feeds_the_trl_reward(bench: Path, tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets", reason="the `rl` extra (trl) brings datasets")
    from omnivchat.rl.trl import make_reward_function

    out = tmp_path / "trl"
    build_dataset(bench, out, "trl")
    loaded = datasets.load_from_disk(str(out / "dataset"))
    assert loaded.num_rows == 3 and {"prompt", "instance", "prompt_id"} <= set(loaded.column_names)
    multi = loaded[2]
    assert multi["prompt_id"] == "multi"
    roles = [m["role"] for m in multi["prompt"]]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    videos = [p["path"] for m in multi["prompt"] for p in m["content"] if p["type"] == "video"]
    assert videos == [str((out / f"media/multi/turn{n}.mp4").resolve()) for n in (1, 2, 3)]
    texts = [p["text"] for m in multi["prompt"] if m["role"] == "assistant" for p in m["content"]]
    assert texts == ["reply 1", "reply 2"]

    # TRL passes every column but `prompt` to the reward function, one value per completion
    reward = make_reward_function(group_size=2)
    try:
        picked = [loaded[0], loaded[0], loaded[2], loaded[2]]
        totals = reward(
            prompts=[r["prompt"] for r in picked],
            completions=[
                [{"role": "assistant", "content": REPLIES[0]}],
                [{"role": "assistant", "content": REPLIES[1]}],
                [{"role": "assistant", "content": "Closed. The right one is open."}],
                [{"role": "assistant", "content": "<think>hm</think>Closed."}],
            ],
            instance=[r["instance"] for r in picked],
            prompt_id=[r["prompt_id"] for r in picked],
        )
    finally:
        reward.close()
    # the thinking reply: r = 1/2, f = 0, w = 4 (think, hm, think, Closed): ρ = 1/8 < 1/6, so e = 0 and 1
    assert totals == pytest.approx([*TOTALS, 1.0 + 0.5 + 0.1, 0.5])


def test_processor_counts_text_with_the_policy_tokenizer(bench: Path, tmp_path: Path) -> None:
    pytest.importorskip("transformers", reason="the `rl` extra brings transformers")
    pytest.importorskip("tokenizers", reason="the `rl` extra brings tokenizers")
    from omnivchat.rl.smoke import build_tokenizer

    folder = tmp_path / "tokenizer"
    tokenizer = build_tokenizer([QUESTION, "reply 1 reply 2 typed beside the clip"])
    tokenizer.save_pretrained(str(folder))
    out = tmp_path / "counted"
    result = build_dataset(bench, out, "swift", processor=folder)
    assert result.method.startswith(f"processor {folder}: text by its chat template")
    assert "qwen3-omni estimate" in result.method  # a tokenizer alone has no video token count
    # the short dialogue: its chat through the tokenizer's own template, plus 6 frames and 3 s of audio
    system = (Path(__file__).parents[2] / "src/omnivchat/prompts/spoken_assistant.txt").read_text(encoding="utf-8")
    chat = [{"role": "system", "content": system}, {"role": "user", "content": ""}]
    ids = tokenizer.apply_chat_template(chat, tokenize=True, add_generation_prompt=True)
    text = len(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)
    assert result.tokens["short"] == text + 3 * 9 * 16 + 39 + 4
    assert _manifest(out)["tokens"]["processor"] == str(folder.resolve())

    with pytest.raises(DatasetError, match="not a folder"):
        build_dataset(bench, tmp_path / "none", "swift", processor=tmp_path / "missing")


def test_the_estimate_is_qwen_omni_processor_arithmetic() -> None:
    """The stated estimate against transformers' own Qwen-Omni code: the processors' frame bounds, the frame
    resize, the video grid (get_num_of_video_patches) and the audio encoders' output lengths."""
    pytest.importorskip("transformers", reason="the `rl` extra brings transformers")
    from transformers.models.qwen2_5_omni import processing_qwen2_5_omni as qwen25
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize as hf_smart_resize
    from transformers.models.qwen3_omni_moe import processing_qwen3_omni_moe as qwen3

    for model, processor in (
        ("qwen2.5-omni", qwen25.Qwen2_5OmniProcessor),
        ("qwen3-omni", qwen3.Qwen3OmniMoeProcessor),
    ):
        size = processor.videos_kwargs["size"]
        block = {"qwen2.5-omni": 28, "qwen3-omni": 32}[model]
        assert (size["shortest_edge"], size["longest_edge"]) == (128 * block**2, 768 * block**2)
        assert processor.audio_kwargs["sampling_rate"] == 16000
        for height, width in [(90, 160), (1080, 1920), (1920, 1080), (720, 1280), (480, 640), (28, 2000)]:
            ours = smart_resize(height, width, block, size["shortest_edge"], size["longest_edge"])
            assert ours == hf_smart_resize(height, width, block, size["shortest_edge"], size["longest_edge"])
            h, w = ours
            patch = block // 2
            for frames in (1, 2, 5, 16):
                grid = (frames + -frames % 2) // 2 * (h // patch) * (w // patch)  # get_num_of_video_patches
                assert qwen_video_tokens(frames, height, width, model) == grid // 4
    for seconds in (0.5, 1.0, 1.5, 2.96, 3.0, 11.0, 29.99):
        samples = round(seconds * 16000)
        # Qwen2.5-Omni's _get_num_audio_tokens: ceil(samples / hop); Qwen3-Omni's: samples // hop
        assert qwen_audio_tokens(seconds, "qwen2.5-omni") == int(
            qwen25._get_feat_extract_output_lengths(-(-samples // 160))
        )
        assert qwen_audio_tokens(seconds, "qwen3-omni") == int(qwen3._get_feat_extract_output_lengths(samples // 160))


def test_a_clip_slower_than_the_sampling_keeps_its_length(bench: Path, tmp_path: Path) -> None:
    """A 1 fps source sampled at 2 fps: each frame fills two slots, and the clip still lasts 3 s with 6 frames."""
    import subprocess

    from omnivchat.media import ffmpeg_exe, sample_video, sampled_frame_indices

    slow = tmp_path / "slow.mp4"
    args = [ffmpeg_exe(), "-loglevel", "error", "-i", str(bench / "media/short/turn1.mp4"), "-vf", "fps=1"]
    subprocess.run([*args, "-c:v", "libx264", "-c:a", "copy", str(slow)], check=True)
    source = probe(slow)
    assert sampled_frame_indices(source, 2.0, 16) == [0, 0, 1, 1, 2, 2]
    got = probe(sample_video(slow, 2.0, 16, out=tmp_path / "sampled.mp4"))
    assert got.n_frames == 6 and abs(got.video_duration - 3.0) < 0.05 and abs(got.audio_duration - 3.0) < 0.05
