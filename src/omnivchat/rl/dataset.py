"""OmniVChat-RL's training set as Table 4 builds it, written in each engine's own format (TRL, verl, ms-swift).

Table 4 (Appendix E.1): each dialogue holds up to ten clips, video sampled at 2 fps with at most 16 frames per
clip, audio interleaved with the video by timestamp, and a prompt / reply budget of 11,072 / 1,024 tokens (the
prompt budget leaves out 34 of the 5,600 training dialogues). :func:`build_dataset` turns a bench into that set:

- every clip is re-encoded with only its sampled frames and its whole audio track
  (:func:`omnivchat.media.sample_video`), so an engine sampling it at 2 fps with at most 16 frames gets exactly
  those frames, and the audio stays in the clip, where Qwen-Omni's processors read it and interleave it with the
  frames by timestamp (``use_audio_in_video``);
- a multi-turn dialogue is the system prompt, then each turn's clip with the earlier turns' reference replies as
  history, in turn order; a dialogue with more clips than ``max_clips`` is left out and listed;
- each prompt is measured in tokens, with the policy's own processor when a local one is given, else with a stated
  estimate (:class:`EstimateCounter`); a prompt over the budget is left out and listed;
- the rows carry what the reward adapters read: :data:`~omnivchat.rl._adapt.INSTANCE_COLUMN` (the bench instance
  as JSON text) and a prompt id where the engine does not make its own (see each ``*_row`` function).

The pure parts (selection, token arithmetic, rows) are functions of their arguments; reading clips, running ffmpeg,
loading a processor and writing files happen in :func:`build_dataset` and the writers.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from omnivchat import __version__
from omnivchat._canonical import sha256_json, sha256_text
from omnivchat._files import check_output_dir, write_text_atomic
from omnivchat.bench import Instance, load_bench
from omnivchat.errors import OmnivchatError
from omnivchat.media import MediaError, content_hash, probe, sample_video
from omnivchat.prompts import load_prompt
from omnivchat.rl._adapt import INSTANCE_COLUMN, PROMPT_ID_COLUMN, instance_json
from omnivchat.rl.verl import INDEX_KEY

Engine = Literal["trl", "verl", "swift"]
ENGINES: tuple[Engine, ...] = ("trl", "verl", "swift")
MANIFEST_FILE = "manifest.json"
MANIFEST_KIND = "omnivchat rl dataset"
DATA_SOURCE = "omnivchat"
"""verl's ``data_source`` of every row."""
OUTPUT_FILES: dict[Engine, str] = {"trl": "dataset", "verl": "train.parquet", "swift": "train.jsonl"}
"""The set each engine gets, inside the output folder: a ``save_to_disk`` folder, a parquet file, a JSONL file."""
MEDIA_DIR = "media"

# Table 4 (Appendix E.1)
TABLE4_FPS = 2.0
TABLE4_MAX_FRAMES = 16
TABLE4_MAX_CLIPS = 10
TABLE4_MAX_PROMPT_TOKENS = 11_072
TABLE4_MAX_REPLY_TOKENS = 1_024

# The Qwen-Omni processors' defaults in transformers (models/qwen2_5_omni/processing_qwen2_5_omni.py and
# models/qwen3_omni_moe/processing_qwen3_omni_moe.py, with the Qwen2-VL video processor both use): a video frame
# resized to between 128 and 768 merged-patch blocks, one token per block for every 2 frames; audio at 16 kHz in
# 160-sample hops, then the audio encoder's ``_get_feat_extract_output_lengths``.
QWEN_TEMPORAL_PATCH = 2
QWEN_MIN_BLOCKS = 128
QWEN_MAX_BLOCKS = 768
QWEN_AUDIO_RATE = 16_000
QWEN_HOP = 160
QWEN_CLIP_WRAPPERS = 4
"""Tokens around each clip with its audio (Qwen2.5-Omni: ``<|vision_bos|><|audio_bos|> … <|audio_eos|>
<|vision_eos|>``; Qwen3-Omni: ``<|vision_start|><|audio_start|> … <|audio_end|><|vision_end|>``)."""
QWEN_CLIP_WRAPPERS_NO_AUDIO = 2
QWEN_BLOCK: dict[str, int] = {"qwen3-omni": 32, "qwen2.5-omni": 28}
"""Pixels per side of one video token's block: a 16- (Qwen3-Omni) or 14-pixel (Qwen2.5-Omni) patch merged 2 x 2."""
ESTIMATES = tuple(QWEN_BLOCK)
"""The models the estimate knows; the first, Qwen3-Omni (the paper's policy), is the default."""
MESSAGE_OVERHEAD = 4
"""Estimated template tokens per message (role marker, start and end tokens), when no tokenizer is given."""


def estimate_method(model: str = ESTIMATES[0]) -> str:
    """How :class:`EstimateCounter` counts, in words (recorded in the manifest)."""
    block = QWEN_BLOCK[model]
    audio = "13 audio tokens a second" if model == "qwen3-omni" else "25 audio tokens a second"
    return (
        "estimate (no --processor): text 1 token per CJK character and per 4 other characters, +4 per message; "
        f"video and audio by {model}'s processor defaults: ceil(frames/2) x (h/{block}) x (w/{block}) tokens per "
        f"clip with each frame resized to 128..768 {block}-pixel blocks, {audio}, 4 wrapper tokens per clip"
    )


class DatasetError(OmnivchatError, ValueError):
    """The training set cannot be built: the message names the bench, instance, clip or file concerned."""


# --------------------------------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class Settings:
    """Table 4's data settings (the defaults) as one run of :func:`build_dataset` uses them."""

    fps: float = TABLE4_FPS
    max_frames: int = TABLE4_MAX_FRAMES
    max_clips: int = TABLE4_MAX_CLIPS
    max_prompt_tokens: int = TABLE4_MAX_PROMPT_TOKENS
    max_reply_tokens: int = TABLE4_MAX_REPLY_TOKENS

    def __post_init__(self) -> None:
        if self.fps <= 0 or self.max_frames < 1 or self.max_clips < 1:
            raise DatasetError("fps must be positive, max frames and max clips at least 1")
        if self.max_prompt_tokens < 1 or self.max_reply_tokens < 1:
            raise DatasetError("the prompt and reply budgets must be at least 1 token")


@dataclass(frozen=True)
class ClipMedia:
    """One prepared clip: its file (absolute) and what the token count needs."""

    path: Path
    frames: int
    width: int
    height: int
    duration_s: float
    audio_s: float
    """Length of the audio track in seconds (0 without one)."""


@dataclass(frozen=True)
class Dialogue:
    """One training prompt: the instance, the system prompt and the prepared clip of each turn, in turn order."""

    instance: Instance
    system: str
    clips: tuple[ClipMedia, ...]


@dataclass(frozen=True)
class LeftOut:
    id: str
    reason: str


# ------------------------------------------------------------------------------------------------ pure parts


def select_dialogues(instances: Sequence[Instance], max_clips: int) -> tuple[list[Instance], list[LeftOut]]:
    """The instances with at most ``max_clips`` clips (one per turn), and the others with the reason."""
    kept: list[Instance] = []
    left: list[LeftOut] = []
    for instance in instances:
        if len(instance.turns) > max_clips:
            left.append(LeftOut(instance.id, f"{len(instance.turns)} clips, more than the {max_clips} allowed"))
        else:
            kept.append(instance)
    return kept, left


def smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """The frame size a Qwen-VL/Omni processor resizes to: both sides multiples of ``factor``, the area within
    [min_pixels, max_pixels], the aspect ratio kept as closely as possible (as transformers' ``smart_resize``)."""
    h = max(factor, round(height / factor) * factor)
    w = max(factor, round(width / factor) * factor)
    if h * w > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h = max(factor, math.floor(height / beta / factor) * factor)
        w = max(factor, math.floor(width / beta / factor) * factor)
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h = math.ceil(height * beta / factor) * factor
        w = math.ceil(width * beta / factor) * factor
    return h, w


def qwen_video_tokens(frames: int, height: int, width: int, model: str = ESTIMATES[0]) -> int:
    """Video tokens of one clip for ``model``'s processor defaults: one token per merged-patch block of every
    temporal patch of 2 frames (an odd last frame is padded to a pair)."""
    factor = QWEN_BLOCK[model]
    h, w = smart_resize(height, width, factor, QWEN_MIN_BLOCKS * factor**2, QWEN_MAX_BLOCKS * factor**2)
    return math.ceil(frames / QWEN_TEMPORAL_PATCH) * (h // factor) * (w // factor)


def qwen_audio_tokens(seconds: float, model: str = ESTIMATES[0]) -> int:
    """Audio tokens of ``seconds`` of sound at 16 kHz in 160-sample hops (100 a second).

    Qwen2.5-Omni: ``(n - 1) // 2 + 1`` after the stride-2 convolution, ``(n - 2) // 2 + 1`` after pooling (25 a
    second). Qwen3-Omni: 13 per whole 100-hop window, plus three stride-2 halvings of the rest.
    """
    samples = round(seconds * QWEN_AUDIO_RATE)
    if samples <= 0:
        return 0
    if model == "qwen2.5-omni":
        hops = math.ceil(samples / QWEN_HOP)
        after_conv = (hops - 1) // 2 + 1
        return (after_conv - 2) // 2 + 1
    hops = samples // QWEN_HOP
    rest = hops % 100
    halved = (rest - 1) // 2 + 1
    return ((halved - 1) // 2 + 1 - 1) // 2 + 1 + (hops // 100) * 13


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def estimate_text_tokens(text: str) -> int:
    """A stated estimate of a text's tokens: one per CJK character, one per 4 other characters (rounded up)."""
    cjk = len(_CJK.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


def text_messages(dialogue: Dialogue) -> list[dict[str, str]]:
    """The dialogue's chat as plain text messages, clips left out (they are counted separately)."""
    messages = [{"role": "system", "content": dialogue.system}] if dialogue.system else []
    for turn in dialogue.instance.turns:
        messages.append({"role": "user", "content": turn.text or ""})
        if turn.reply is not None:
            messages.append({"role": "assistant", "content": turn.reply})
    return messages


def media_tokens_estimate(clip: ClipMedia, model: str = ESTIMATES[0]) -> int:
    """Tokens of one clip with its audio for ``model``'s processor defaults, wrappers included."""
    wrappers = QWEN_CLIP_WRAPPERS if clip.audio_s > 0 else QWEN_CLIP_WRAPPERS_NO_AUDIO
    video = qwen_video_tokens(clip.frames, clip.height, clip.width, model)
    return video + qwen_audio_tokens(clip.audio_s, model) + wrappers


def estimate_prompt_tokens(dialogue: Dialogue, model: str = ESTIMATES[0]) -> int:
    """:func:`estimate_method`: the stated estimate of a whole prompt."""
    messages = text_messages(dialogue)
    text = sum(estimate_text_tokens(m["content"]) + MESSAGE_OVERHEAD for m in messages) + MESSAGE_OVERHEAD
    return text + sum(media_tokens_estimate(c, model) for c in dialogue.clips)


def over_budget(tokens: int, settings: Settings) -> str | None:
    """The reason a prompt of ``tokens`` is left out, or None when it fits the prompt budget."""
    if tokens > settings.max_prompt_tokens:
        return f"prompt of {tokens} tokens, over the {settings.max_prompt_tokens}-token budget"
    return None


def trl_row(dialogue: Dialogue) -> dict[str, Any]:
    """A TRL row: ``prompt`` in the conversational format, each clip a ``{"type": "video", "path": ...}`` part
    (its audio is in the file: Qwen-Omni's processor reads it with ``load_audio_from_video``), earlier replies as
    assistant messages; ``instance`` and ``prompt_id`` for :func:`omnivchat.rl.trl.make_reward_function`.

    Every content is a list of parts, so the column has one type in Arrow.
    """
    prompt: list[dict[str, Any]] = []
    if dialogue.system:
        prompt.append({"role": "system", "content": [{"type": "text", "text": dialogue.system}]})
    for turn, clip in zip(dialogue.instance.turns, dialogue.clips, strict=True):
        parts: list[dict[str, Any]] = [{"type": "video", "path": str(clip.path)}]
        if turn.text:
            parts.append({"type": "text", "text": turn.text})
        prompt.append({"role": "user", "content": parts})
        if turn.reply is not None:
            prompt.append({"role": "assistant", "content": [{"type": "text", "text": turn.reply}]})
    return {
        "prompt": prompt,
        INSTANCE_COLUMN: instance_json(dialogue.instance),
        PROMPT_ID_COLUMN: dialogue.instance.id,
    }


def _tagged_messages(dialogue: Dialogue) -> list[dict[str, str]]:
    """Messages whose user contents carry a ``<video>`` tag per clip (verl's and ms-swift's placeholder)."""
    messages = [{"role": "system", "content": dialogue.system}] if dialogue.system else []
    for turn in dialogue.instance.turns:
        messages.append({"role": "user", "content": "<video>" + (turn.text or "")})
        if turn.reply is not None:
            messages.append({"role": "assistant", "content": turn.reply})
    return messages


def verl_row(dialogue: Dialogue, index: int, settings: Settings) -> dict[str, Any]:
    """A verl row (``RLHFDataset``): ``prompt`` messages with a ``<video>`` placeholder per clip, ``videos`` as the
    dicts verl hands to ``qwen_vl_utils.fetch_video`` (``file://`` path, ``fps``, ``max_frames``), and
    ``extra_info`` with ``index`` (the prompt id that groups the N replies) and ``instance`` for
    :func:`omnivchat.rl.verl.compute_score`. verl mainline has no audio input: the clips keep their audio track for
    an engine that reads it."""
    return {
        "data_source": DATA_SOURCE,
        "prompt": _tagged_messages(dialogue),
        "videos": [
            {"video": clip.path.as_uri(), "fps": settings.fps, "max_frames": settings.max_frames}
            for clip in dialogue.clips
        ],
        "reward_model": {"style": "rule", "ground_truth": dialogue.instance.reference},
        "extra_info": {
            "split": "train",
            INDEX_KEY: index,
            "id": dialogue.instance.id,
            INSTANCE_COLUMN: instance_json(dialogue.instance),
        },
    }


def swift_row(dialogue: Dialogue) -> dict[str, Any]:
    """An ms-swift row: ``messages`` with a ``<video>`` tag per clip, ``videos`` (absolute paths), ``audios`` empty
    (the audio rides in each video: ``USE_AUDIO_IN_VIDEO=true`` makes ms-swift interleave it with the frames by
    timestamp; a separate audio file would be a second, non-interleaved copy), and ``instance`` for the ORM.
    No ``prompt_id``: ms-swift makes its own, one per distinct prompt."""
    return {
        "messages": _tagged_messages(dialogue),
        "videos": [str(clip.path) for clip in dialogue.clips],
        "audios": [],
        INSTANCE_COLUMN: instance_json(dialogue.instance),
    }


def engine_settings(engine: Engine, settings: Settings) -> dict[str, Any]:
    """What the engine must be told to read the set as Table 4 says (recorded in the manifest and printed)."""
    if engine == "verl":
        return {
            "data.train_files": OUTPUT_FILES["verl"],
            "data.prompt_key": "prompt",
            "data.video_key": "videos",
            "data.max_prompt_length": settings.max_prompt_tokens,
            "data.max_response_length": settings.max_reply_tokens,
            "video sampling": f"per row: fps {settings.fps:g}, max_frames {settings.max_frames}",
        }
    if engine == "swift":
        return {
            "--dataset": OUTPUT_FILES["swift"],
            "--max_completion_length": settings.max_reply_tokens,
            "--max_length": settings.max_prompt_tokens + settings.max_reply_tokens,
            "environment": {
                "USE_AUDIO_IN_VIDEO": "true",
                "FPS": f"{settings.fps:g}",
                "FPS_MAX_FRAMES": str(settings.max_frames),
                "ENABLE_AUDIO_OUTPUT": "0",
            },
        }
    return {
        "load": f"datasets.load_from_disk({OUTPUT_FILES['trl']!r})",
        "max_completion_length": settings.max_reply_tokens,
        "processor": f"load_audio_from_video=True (use_audio_in_video), fps {settings.fps:g}",
    }


# --------------------------------------------------------------------------------------------- token counting


class TokenCounter(Protocol):
    method: str

    def count(self, dialogue: Dialogue) -> int: ...


class EstimateCounter:
    """The stated estimate of :func:`estimate_method` for ``model`` (no processor)."""

    def __init__(self, model: str = ESTIMATES[0]) -> None:
        if model not in QWEN_BLOCK:
            raise DatasetError(f"--estimate is one of {', '.join(ESTIMATES)}, not {model!r}")
        self.model = model
        self.method = estimate_method(model)

    def count(self, dialogue: Dialogue) -> int:
        return estimate_prompt_tokens(dialogue, self.model)


class ProcessorCounter:
    """Counts with a local Hugging Face processor or tokenizer folder (never downloaded).

    Text: the tokenizer's chat template over the text messages (with generation prompt), or its plain encoding of
    the joined texts when it has no template. Video and audio: the processor's own per-input token counts
    (``_get_num_multimodal_tokens``, as vLLM asks for them) when it has them, else the ``estimate`` model's; the
    ``method`` says which.
    """

    def __init__(self, path: Path, estimate: str = ESTIMATES[0]) -> None:
        self.estimate = EstimateCounter(estimate)
        if not path.is_dir():
            raise DatasetError(f"--processor {path}: not a folder (a local Hugging Face processor or tokenizer)")
        try:
            from transformers import AutoProcessor
        except ImportError as err:
            raise DatasetError(
                f"--processor needs transformers ({err}): install the `rl` extra (docs/rl.md), or leave "
                "--processor out for the stated estimate"
            ) from None
        note = ""
        try:
            loaded = AutoProcessor.from_pretrained(str(path), local_files_only=True)
        except Exception as err:  # transformers raises many kinds (a missing torchvision for Qwen's video part)
            # The tokenizer alone still counts the text exactly; the media fall back to the estimate, said so.
            note = f" (its processor did not load: {str(err).splitlines()[0] if str(err) else type(err).__name__})"
            try:
                from transformers import AutoTokenizer

                loaded = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
            except Exception as err2:
                raise DatasetError(f"--processor {path}: cannot load a processor or tokenizer ({err2})") from None
        self.processor = loaded
        self.tokenizer = getattr(loaded, "tokenizer", loaded)
        self.media = callable(getattr(loaded, "_get_num_multimodal_tokens", None)) and hasattr(
            loaded, "video_processor"
        )
        media = (
            "video and audio by the processor's own token counts, 4 wrapper tokens per clip"
            if self.media
            else f"video and audio by the {estimate} estimate (the processor has no video token count)"
        )
        # A Qwen-Omni folder keeps its chat template with the processor (chat_template.json), not the tokenizer.
        template = getattr(loaded, "chat_template", None) or getattr(self.tokenizer, "chat_template", None)
        self.template = template if isinstance(template, str) else None
        text = "its chat template" if self.template else "its plain encoding"
        self.method = f"processor {path}: text by {text}; {media}{note}"

    def _text(self, messages: list[dict[str, str]]) -> int:
        tok = self.tokenizer
        if self.template:
            ids = tok.apply_chat_template(
                messages, chat_template=self.template, tokenize=True, add_generation_prompt=True
            )
            if isinstance(ids, Mapping):
                ids = ids["input_ids"]
            return len(ids)
        return len(tok("\n".join(m["content"] for m in messages))["input_ids"])

    def _clip(self, clip: ClipMedia) -> int:
        if not self.media:
            return media_tokens_estimate(clip, self.estimate.model)
        sizes: dict[str, list[Any]] = {"video_sizes": [(clip.frames, clip.height, clip.width)]}
        if clip.audio_s > 0:
            sizes["audio_lengths"] = [round(clip.audio_s * QWEN_AUDIO_RATE)]
        data = self.processor._get_num_multimodal_tokens(**sizes)
        video = int(data["num_video_tokens"][0])
        audio = int(data["num_audio_tokens"][0]) if clip.audio_s > 0 else 0
        return video + audio + (QWEN_CLIP_WRAPPERS if clip.audio_s > 0 else QWEN_CLIP_WRAPPERS_NO_AUDIO)

    def count(self, dialogue: Dialogue) -> int:
        return self._text(text_messages(dialogue)) + sum(self._clip(c) for c in dialogue.clips)


# ------------------------------------------------------------------------------------------------------- I/O


def prepare_clip(source: Path, target: Path, settings: Settings) -> ClipMedia:
    """The clip at ``source`` re-encoded at Table 4's sampling into ``target``, measured."""
    sample_video(source, settings.fps, settings.max_frames, out=target)
    info = probe(target, energy=False)
    if not info.has_video or not info.width or not info.height:
        raise MediaError(f"{source}: no video stream after sampling")
    return ClipMedia(
        path=target.resolve(),
        frames=info.n_frames or 1,
        width=info.width,
        height=info.height,
        duration_s=info.duration,
        audio_s=(info.audio_duration or info.duration) if info.has_audio else 0.0,
    )


@dataclass
class DatasetResult:
    """What :func:`build_dataset` wrote and left out."""

    output: Path
    engine: Engine
    written: list[Path]
    rows: int
    left_out: list[LeftOut]
    method: str
    tokens: dict[str, int] = field(default_factory=dict)
    """Measured prompt tokens of every dialogue measured (written or over budget), by instance id."""
    manifest: dict[str, Any] = field(default_factory=dict)


Progress = Callable[[int, int, str], None]


def is_dataset_dir(path: Path) -> bool:
    """Whether ``path`` is a folder this command wrote (its manifest says so)."""
    try:
        data = json.loads((path / MANIFEST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("kind") == MANIFEST_KIND


def _clear_own_outputs(out: Path) -> None:
    """Remove what an earlier run of this command wrote into ``out`` (its manifest said it made the folder)."""
    for name in (MEDIA_DIR, *OUTPUT_FILES.values()):
        target = out / name
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.exists() or target.is_symlink():
            target.unlink()


def write_trl(rows: list[dict[str, Any]], target: Path) -> Path:
    """The rows as a ``datasets.Dataset`` saved with ``save_to_disk`` (needs ``datasets``, which TRL brings)."""
    try:
        from datasets import Dataset
    except ImportError as err:
        raise DatasetError(
            f"--engine trl writes a datasets.Dataset and needs the `datasets` package ({err}): install the `rl` "
            "extra (docs/rl.md)"
        ) from None
    Dataset.from_list(rows).save_to_disk(str(target))
    return target


def write_verl(rows: list[dict[str, Any]], target: Path) -> Path:
    """The rows as verl's parquet (needs pyarrow: the `hf` or `rl` extra)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as err:
        raise DatasetError(
            f"--engine verl writes parquet and needs pyarrow ({err}): install the `hf` extra (docs/rl.md)"
        ) from None
    tmp = target.with_name(f".{target.name}.tmp")
    pq.write_table(pa.Table.from_pylist(rows), str(tmp))
    tmp.replace(target)
    return target


def write_swift(rows: list[dict[str, Any]], target: Path) -> Path:
    """The rows as ms-swift's JSONL, one object a line."""
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    return write_text_atomic(target, text)


WRITERS: dict[Engine, Callable[[list[dict[str, Any]], Path], Path]] = {
    "trl": write_trl,
    "verl": write_verl,
    "swift": write_swift,
}


def build_dataset(
    bench_dir: str | Path,
    output: str | Path,
    engine: str,
    *,
    settings: Settings | None = None,
    processor: str | Path | None = None,
    system_prompt: str | Path | None = None,
    estimate: str = ESTIMATES[0],
    on_progress: Progress | None = None,
) -> DatasetResult:
    """Write ``bench_dir``'s training set for ``engine`` into ``output`` (new, empty, or an earlier set of this
    command, which is replaced), with ``manifest.json`` recording the Table 4 settings, the source bench's hashes,
    every dialogue's measured prompt tokens and how they were measured, and the dialogues left out with reasons.

    ``processor``: a local processor or tokenizer folder to count tokens with (else the stated estimate for
    ``estimate``: "qwen3-omni", the paper's policy, or "qwen2.5-omni");
    ``system_prompt``: a prompt file (else omnivchat's default spoken-assistant prompt). A clip that cannot be
    read or re-encoded is a :class:`DatasetError` naming the instance and the file.
    """
    if engine not in ENGINES:
        raise DatasetError(f"--engine is one of {', '.join(ENGINES)}, not {engine!r}")
    settings = settings or Settings()
    out = Path(output)
    check_output_dir(out, ours=is_dataset_dir, kind="an `omnivchat rl dataset` folder")
    bench = load_bench(bench_dir)
    system, system_label = load_prompt(system_prompt)
    counter: TokenCounter = (
        ProcessorCounter(Path(processor), estimate) if processor is not None else EstimateCounter(estimate)
    )
    kept, left_out = select_dialogues(bench.instances, settings.max_clips)

    out.mkdir(parents=True, exist_ok=True)
    _clear_own_outputs(out)
    # A manifest first, marked unfinished: a run stopped half-way leaves a folder this command recognises.
    write_text_atomic(out / MANIFEST_FILE, json.dumps({"kind": MANIFEST_KIND, "complete": False}) + "\n")

    total = sum(len(i.turns) for i in kept)
    done = 0
    dialogues: list[Dialogue] = []
    for instance in kept:
        clips = []
        for number, turn in enumerate(instance.turns, start=1):
            source = bench.media_path(turn)
            target = out / MEDIA_DIR / instance.id / f"turn{number}.mp4"
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                clips.append(prepare_clip(source, target, settings))
            except MediaError as err:
                raise DatasetError(f"{bench.where(instance)} instance {instance.id}, turn {number}: {err}") from None
            done += 1
            if on_progress is not None:
                on_progress(done, total, instance.id)
        dialogues.append(Dialogue(instance, system, tuple(clips)))

    tokens: dict[str, int] = {}
    rows: list[dict[str, Any]] = []
    written_ids: list[str] = []
    for dialogue in dialogues:
        n = counter.count(dialogue)
        tokens[dialogue.instance.id] = n
        reason = over_budget(n, settings)
        if reason is not None:
            left_out.append(LeftOut(dialogue.instance.id, reason))
            shutil.rmtree(out / MEDIA_DIR / dialogue.instance.id)
            continue
        if engine == "trl":
            rows.append(trl_row(dialogue))
        elif engine == "verl":
            rows.append(verl_row(dialogue, len(rows), settings))
        else:
            rows.append(swift_row(dialogue))
        written_ids.append(dialogue.instance.id)

    written = [WRITERS[engine](rows, out / OUTPUT_FILES[engine])] if rows else []
    manifest = _manifest(
        bench_dir=bench.root,
        bench_info={"name": bench.info.name, "version": bench.info.version},
        instances=bench.instances,
        clip_hashes={t.video: content_hash(bench.media_path(t)) for i in kept for t in i.turns},
        engine=engine,
        settings=settings,
        system=(system, system_label),
        method=counter.method,
        processor=None if processor is None else str(Path(processor).resolve()),
        tokens=tokens,
        written_ids=written_ids,
        left_out=left_out,
    )
    write_text_atomic(out / MANIFEST_FILE, json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    return DatasetResult(
        output=out,
        engine=engine,
        written=[*written, out / MANIFEST_FILE],
        rows=len(rows),
        left_out=left_out,
        method=counter.method,
        tokens=tokens,
        manifest=manifest,
    )


def _manifest(
    *,
    bench_dir: Path,
    bench_info: dict[str, str],
    instances: Sequence[Instance],
    clip_hashes: dict[str, str],
    engine: Engine,
    settings: Settings,
    system: tuple[str, str],
    method: str,
    processor: str | None,
    tokens: dict[str, int],
    written_ids: list[str],
    left_out: list[LeftOut],
) -> dict[str, Any]:
    rows = [json.loads(i.model_dump_json()) for i in instances]
    return {
        "kind": MANIFEST_KIND,
        "complete": True,
        "omnivchat": __version__,
        "engine": engine,
        "file": OUTPUT_FILES[engine] if written_ids else None,
        "table4": {
            "fps": settings.fps,
            "max_frames_per_clip": settings.max_frames,
            "max_clips_per_dialogue": settings.max_clips,
            "max_prompt_tokens": settings.max_prompt_tokens,
            "max_reply_tokens": settings.max_reply_tokens,
            "audio": "interleaved by timestamp: each clip keeps its whole audio track, which the Qwen-Omni "
            "processors read from the video (use_audio_in_video) and interleave with its frames",
        },
        "media": {
            "clips": f"{MEDIA_DIR}/<instance>/turn<k>.mp4: each bench clip re-encoded (H.264 + AAC) with only the "
            f"frames sampled at {settings.fps:g} fps, at most {settings.max_frames} spread evenly over a longer "
            "clip, played at n/duration fps so the clip keeps its length; the audio track whole",
            "paths": "absolute in the rows: move the folder and build it again",
            "engine_settings": engine_settings(engine, settings),
        },
        "source": {
            "bench": str(bench_dir.resolve()),
            **bench_info,
            "instances_sha256": sha256_json(rows),
            "n_instances": len(instances),
            "clips_sha256": clip_hashes,
        },
        "system_prompt": {"label": system[1], "sha256": sha256_text(system[0])},
        "tokens": {"method": method, "processor": processor, "prompt": tokens},
        "dialogues": written_ids,
        "left_out": [{"id": x.id, "reason": x.reason} for x in left_out],
        "counts": {"bench": len(instances), "written": len(written_ids), "left_out": len(left_out)},
    }
