"""The offline procedural renderer: a scene spec -> an MP4 (H.264 + AAC 44.1 kHz) plus two sidecar files.

Next to ``clip.mp4`` it writes ``clip.spec.json`` (the spec with every default filled in: rendering it again
gives the same clip) and ``clip.timeline.json`` (what was said when, word by word, and where each object is).
Frames are drawn with Pillow and streamed into ffmpeg; speech comes from espeak-ng in a worker process.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import json
import math
import os
import re
import shutil
import tempfile
import wave
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from omnivchat.media import (
    AUDIO_ENCODE_ARGS,
    DETERMINISTIC_ARGS,
    VIDEO_ENCODE_ARGS,
    MediaError,
    encoder_version,
    finish_ffmpeg,
    popen_ffmpeg,
)
from omnivchat.media import cache_dir as resolve_cache_dir
from omnivchat.synth._scene import SceneSpec, SpeechLine, image_side, user_side

SAMPLE_RATE = 44_100
# Bump when the drawing, the mix or the timeline format changes: part of the render cache key.
RENDERER_VERSION = "2"  # 2: speech segments end with a short fade (espeak stops at full level)
# How a rendered clip is encoded. 1: the media package's encoding (x264 veryfast, AAC). 2: x264 ultrafast, the
# same audio (byte for byte: AAC's fast coder was tried and changed what Whisper hears in 5 of 25 clips): frames
# about 50 dB PSNR from recipe 1's (perf/perf_render_recipes.py). A bench keeps the recipe it was made with.
RENDER_RECIPES: dict[int, tuple[str, ...]] = {
    1: (*VIDEO_ENCODE_ARGS, *AUDIO_ENCODE_ARGS),
    2: ("-c:v", "libx264", "-preset", "ultrafast", "-crf", "23", "-pix_fmt", "yuv420p", *AUDIO_ENCODE_ARGS),
}
LATEST_RENDER_RECIPE = max(RENDER_RECIPES)
TIMELINE_VERSION = 1
_PAUSE = re.compile(r"\[\s*pause(?:\s*[=:]?\s*(\d+(?:\.\d+)?)\s*s?)?\s*\]", re.IGNORECASE)
_DEFAULT_PAUSE = 0.5
_FIRST_LINE_START = 0.5
_TAIL = 0.7  # silence after the last line when the duration is automatic
# Variants given to speakers in order of first appearance, so two speakers never sound alike by default.
_SPEAKER_VARIANTS = ("m3", "f3", "m1", "f4", "m7", "f2")
# Delivery styles: (words per minute, pitch, pitch range, volume 0-200).
_STYLES: dict[str, tuple[int, int, int, int]] = {
    "neutral": (160, 50, 50, 100),
    "upset": (195, 68, 95, 130),
    "happy": (175, 62, 80, 110),
    "calm": (140, 44, 30, 90),
    "sad": (125, 36, 20, 85),
}
_BASE_VOICE = {"en": "en-us", "zh": "cmn"}


# -------------------------------------------------------------------------------------------- results


@dataclass(frozen=True)
class RenderedClip:
    """What :func:`render_clip` wrote: the clip, its two sidecars, and the timeline's content."""

    path: Path
    spec_path: Path
    timeline_path: Path
    spec: SceneSpec
    timeline: dict[str, Any] = field(repr=False)
    cached: bool = False

    @property
    def duration(self) -> float:
        """Clip length in seconds."""
        return float(self.timeline["duration"])

    @property
    def transcript(self) -> str:
        """All speech lines, in order of start time."""
        return str(self.timeline["transcript"])

    @property
    def words(self) -> list[dict[str, Any]]:
        """Every spoken word with ``text``, ``start``, ``end`` (seconds), ``line`` and ``speaker``."""
        return list(self.timeline["words"])


def sidecar_paths(clip: str | os.PathLike[str]) -> tuple[Path, Path]:
    """``(spec_path, timeline_path)`` for a clip: ``x.mp4`` -> ``x.spec.json``, ``x.timeline.json``."""
    p = Path(clip)
    return p.with_name(f"{p.stem}.spec.json"), p.with_name(f"{p.stem}.timeline.json")


def load_timeline(clip: str | os.PathLike[str]) -> dict[str, Any]:
    """The timeline saved next to a rendered clip (see docs/studio.md for its fields)."""
    path = sidecar_paths(clip)[1]
    try:
        return cast("dict[str, Any]", json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise MediaError(f"{clip}: no timeline file {path.name} next to it (not rendered by omnivchat?)") from None


# ------------------------------------------------------------------------------------------- the spec


def load_spec(spec: SceneSpec | dict[str, Any] | str | os.PathLike[str]) -> SceneSpec:
    """A :class:`SceneSpec` from a model, a dict, JSON text, or a .json / .yaml file."""
    from pydantic import ValidationError

    if isinstance(spec, SceneSpec):
        return spec
    source = "<spec>"
    data: Any = spec
    if isinstance(spec, (str, os.PathLike)) and not (isinstance(spec, str) and spec.lstrip().startswith("{")):
        path = Path(spec)
        source = str(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise MediaError(f"{path}: cannot read spec ({exc.strerror})") from None
        if path.suffix.lower() in (".yaml", ".yml"):
            import yaml

            from omnivchat._files import loads_yaml

            try:
                data = loads_yaml(text)
            except yaml.YAMLError as exc:
                reason = " ".join(str(exc).split())
                raise MediaError(f"{path}: not valid YAML ({reason})") from None
        else:
            data = text
    try:
        if isinstance(data, str):
            return SceneSpec.model_validate_json(data)
        return SceneSpec.model_validate(data)
    except ValidationError as exc:
        raise MediaError(f"{source}: invalid scene spec: {exc}") from None


# ------------------------------------------------------------------------------------------- speech


@dataclass
class _Line:
    index: int
    line: SpeechLine
    voice: str
    text: str  # without pause markers
    samples: np.ndarray
    words: list[dict[str, Any]]
    pauses: list[tuple[float, float]]  # relative to the line start
    cut: bool
    start: float = 0.0

    @property
    def end(self) -> float:
        return self.start + self.samples.size / SAMPLE_RATE


def _voice_for(line: SpeechLine, speaker_order: list[str]) -> str:
    base = _BASE_VOICE[line.language]
    voice = line.voice
    if voice is None:
        return f"{base}+{_SPEAKER_VARIANTS[speaker_order.index(line.speaker) % len(_SPEAKER_VARIANTS)]}"
    if "+" in voice or voice in ("en", "en-us", "en-gb", "cmn", "yue") or "/" in voice:
        return voice
    return f"{base}+{voice}"


def _segments(text: str) -> list[tuple[str, float]]:
    """Split ``text`` at pause markers: [(segment, pause after it in seconds), ...]."""
    out: list[tuple[str, float]] = []
    pos = 0
    for m in _PAUSE.finditer(text):
        out.append((text[pos : m.start()].strip(), float(m.group(1)) if m.group(1) else _DEFAULT_PAUSE))
        pos = m.end()
    out.append((text[pos:].strip(), 0.0))
    return out


def _fade_out(samples: np.ndarray, seconds: float = 0.025) -> np.ndarray:
    """espeak-ng often stops voicing at full level; a raised-cosine fade ending where the voice ends (the
    Eq. 11 shape with n0 at the content end) keeps that from reading as a cut-off in every rendered clip."""
    if samples.size == 0:
        return samples
    loud = np.flatnonzero(np.abs(samples) > 1e-3 * float(np.abs(samples).max()))
    end = int(loud[-1]) + 1 if loud.size else samples.size
    n = min(end, round(seconds * SAMPLE_RATE))
    out = samples.copy()
    out[end - n : end] *= (0.5 * (1 + np.cos(np.pi * np.arange(1, n + 1) / n))).astype(np.float32)
    out[end:] = 0.0
    return out


@functools.lru_cache(maxsize=64)
def _utterance(text: str, voice: str, rate: int, pitch: int, pitch_range: int, volume: int) -> Any:
    """``speak`` remembered within this process: a script is timed (``speech_timing``) and then rendered, and a
    repair renders it again, each time with the same lines; speech is deterministic, so each line is synthesised
    once. The samples are made read-only: every use copies them."""
    from omnivchat.synth._tts import speak

    utt = speak(text, voice=voice, rate=rate, pitch=pitch, pitch_range=pitch_range, volume=volume)
    utt.samples.setflags(write=False)
    return utt


def _speak_line(index: int, line: SpeechLine, speaker_order: list[str]) -> _Line:
    rate, pitch, pitch_range, volume = _STYLES[line.style]
    rate = line.rate if line.rate is not None else (rate - 10 if line.language == "zh" else rate)
    pitch = line.pitch if line.pitch is not None else pitch
    voice = _voice_for(line, speaker_order)
    parts: list[np.ndarray] = []
    words: list[dict[str, Any]] = []
    pauses: list[tuple[float, float]] = []
    offset = 0
    for seg_text, pause in _segments(line.text):
        if seg_text:
            utt = _utterance(seg_text, voice, rate, pitch, pitch_range, volume)
            parts.append(_fade_out(utt.samples))
            for w in utt.words:
                words.append(
                    {
                        "text": w.text,
                        "start": round(offset / SAMPLE_RATE + w.start, 4),
                        "end": round(offset / SAMPLE_RATE + w.end, 4),
                    }
                )
            offset += utt.samples.size
        if pause > 0:
            n = round(pause * SAMPLE_RATE)
            pauses.append((offset / SAMPLE_RATE, (offset + n) / SAMPLE_RATE))
            parts.append(np.zeros(n, np.float32))
            offset += n
    # A trailing pause marker still counts; one left at the very end would just lengthen the line.
    samples = np.concatenate(parts) if parts else np.zeros(0, np.float32)
    if line.gain_db:
        samples = samples * np.float32(10 ** (line.gain_db / 20))
    cut = False
    if line.stop_after is not None and line.stop_after < samples.size / SAMPLE_RATE:
        cut = True
        samples = samples[: round(line.stop_after * SAMPLE_RATE)].copy()
        fade = min(samples.size, round(0.005 * SAMPLE_RATE))  # 5 ms: an abrupt stop, without a click
        if fade:
            samples[-fade:] *= np.linspace(1.0, 0.0, fade, dtype=np.float32)
        words = [
            {**w, "end": min(w["end"], line.stop_after), **({"cut": True} if w["end"] > line.stop_after else {})}
            for w in words
            if w["start"] < line.stop_after
        ]
        pauses = [(a, min(b, line.stop_after)) for a, b in pauses if a < line.stop_after]
    text = " ".join(seg for seg, _ in _segments(line.text) if seg)
    return _Line(index, line, voice, text, samples.astype(np.float32), words, pauses, cut)


def _schedule(lines: list[_Line]) -> None:
    latest_end: float | None = None
    for ln in lines:
        if ln.line.start is not None:
            ln.start = ln.line.start
        elif latest_end is None:
            ln.start = _FIRST_LINE_START
        else:
            ln.start = latest_end + ln.line.gap
        latest_end = max(latest_end or 0.0, ln.end)


# --------------------------------------------------------------------------------------------- audio


def _noise(spec: SceneSpec, n: int) -> np.ndarray:
    assert spec.noise is not None
    rng = np.random.default_rng(spec.seed)
    kind = spec.noise.kind
    if kind == "hum":
        t = np.arange(n) / SAMPLE_RATE
        x = sum(np.sin(2 * np.pi * 50 * k * t) / k for k in (1, 2, 3)) + 0.05 * rng.standard_normal(n)
    else:
        x = rng.standard_normal(n)
        if kind in ("pink", "brown"):
            spectrum = np.fft.rfft(x)
            f = np.fft.rfftfreq(n, 1 / SAMPLE_RATE)
            f[0] = f[1] if n > 1 else 1.0
            spectrum /= f ** (0.5 if kind == "pink" else 1.0)
            x = np.fft.irfft(spectrum, n)
    rms = float(np.sqrt(np.mean(x**2))) or 1.0
    return (x * (10 ** (spec.noise.level_db / 20) / rms)).astype(np.float32)


def _mix(spec: SceneSpec, lines: list[_Line], n: int) -> np.ndarray:
    mix = np.zeros(n, np.float32)
    for ln in lines:
        a = round(ln.start * SAMPLE_RATE)
        b = min(n, a + ln.samples.size)
        mix[a:b] += ln.samples[: b - a]
    if spec.noise is not None:
        mix += _noise(spec, n)
    peak = float(np.abs(mix).max()) if n else 0.0
    if peak > 0.9:  # overlapping voices can clip: scale the whole mix down (AAC overshoots a little)
        mix *= np.float32(0.9 / peak)
    return mix


def _write_wav(path: Path, samples: np.ndarray) -> None:
    pcm = np.clip(np.round(samples * 32767.0), -32768, 32767).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(pcm.tobytes())


# --------------------------------------------------------------------------------------------- timeline


def _timeline(spec: SceneSpec, lines: list[_Line], duration: float, n_frames: int) -> dict[str, Any]:
    from omnivchat.synth._draw import object_box, person_box, placard_box

    ordered = sorted(lines, key=lambda ln: (ln.start, ln.index))
    line_dicts = []
    flat: list[dict[str, Any]] = []
    for ln in lines:
        words = [
            {**w, "start": round(ln.start + w["start"], 4), "end": round(ln.start + w["end"], 4)} for w in ln.words
        ]
        line_dicts.append(
            {
                "index": ln.index,
                "speaker": ln.line.speaker,
                "language": ln.line.language,
                "voice": ln.voice,
                "style": ln.line.style,
                "text": ln.text,
                "start": round(ln.start, 4),
                "end": round(ln.end, 4),
                "cut": ln.cut,
                "pauses": [[round(ln.start + a, 4), round(ln.start + b, 4)] for a, b in ln.pauses],
                "words": words,
            }
        )
        flat.extend({**w, "line": ln.index, "speaker": ln.line.speaker} for w in words)
    flat.sort(key=lambda w: (w["start"], w["line"]))
    objects = []
    for i, obj in enumerate(spec.objects):
        box = object_box(spec, obj)
        name = obj.name or f"{obj.color if isinstance(obj.color, str) else 'rgb' + str(obj.color)} {obj.shape}"
        objects.append(
            {
                "index": i,
                "name": name,
                "shape": obj.shape,
                "color": obj.color,
                "label": obj.label,
                "box": list(box),
                "center": [(box[0] + box[2]) / 2, (box[1] + box[3]) / 2],
                "image_side": image_side(spec, obj),
                "user_side": user_side(spec, obj),
                "appear": obj.appear,
                "disappear": obj.disappear,
            }
        )
    person = None
    if spec.person is not None:
        p = spec.person
        person = {
            "box": list(person_box(spec, p)),
            "facing": p.facing,
            "expression": p.expression,
            "speaker": p.speaker,
            "image_side": image_side(spec, p),
            "user_side": user_side(spec, p),
            "appear": p.appear,
            "disappear": p.disappear,
        }
    return {
        "version": TIMELINE_VERSION,
        "duration": duration,
        "fps": spec.fps,
        "frames": n_frames,
        "size": list(spec.size),
        "sample_rate": SAMPLE_RATE,
        "camera": spec.camera.mode,
        "transcript": " ".join(ln.text for ln in ordered),
        "lines": line_dicts,
        "words": flat,
        "objects": objects,
        "person": person,
        "placards": [
            {"text": pl.text, "start": pl.start, "end": pl.end, "box": list(placard_box(spec, pl))}
            for pl in spec.placards
        ],
    }


# -------------------------------------------------------------------------------------------- render


def _visible(t: float, appear: float, disappear: float | None) -> bool:
    return appear <= t and (disappear is None or t < disappear)


def _encode(spec: SceneSpec, lines: list[_Line], n_frames: int, mix: np.ndarray, out: Path, recipe: int) -> None:
    from omnivchat.synth._draw import FrameState, SceneDrawer

    drawer = SceneDrawer(spec)
    w, h = spec.size
    talker = spec.person.speaker if spec.person is not None else None
    talk_words = sorted(
        (ln.start + wd["start"], ln.start + wd["end"]) for ln in lines if ln.line.speaker == talker for wd in ln.words
    )
    talk_starts = [a for a, _ in talk_words]
    with tempfile.TemporaryDirectory(prefix="omnivchat-render-") as tmp:
        wav = Path(tmp) / "audio.wav"
        _write_wav(wav, mix)
        args = ["-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{w}x{h}", "-r", str(spec.fps), "-i", "pipe:0"]
        args += ["-i", str(wav), "-map", "0:v", "-map", "1:a", *RENDER_RECIPES[recipe]]
        args += ["-ar", str(SAMPLE_RATE), *DETERMINISTIC_ARGS, "-f", "mp4", str(out)]
        proc = popen_ffmpeg(args)
        assert proc.stdin is not None
        try:
            for i in range(n_frames):
                t = i / spec.fps
                person_on = spec.person is not None and _visible(t, spec.person.appear, spec.person.disappear)
                # The mouth flaps at about 4 Hz while the figure's speaker is inside a word.
                k = bisect.bisect_right(talk_starts, t) - 1
                mouth = person_on and k >= 0 and t < talk_words[k][1] and int((t - talk_words[k][0]) * 8) % 2 == 0
                state = FrameState(
                    objects=tuple(_visible(t, o.appear, o.disappear) for o in spec.objects),
                    placards=tuple(_visible(t, p.start, p.end) for p in spec.placards),
                    person=person_on,
                    mouth_open=mouth,
                )
                proc.stdin.write(drawer.frame(state))
        except BrokenPipeError:
            pass  # ffmpeg stopped reading: finish_ffmpeg reports why
        finally:
            finish_ffmpeg(proc, subject=out)


def _tts_version() -> str:
    """The espeakng-loader version: a new espeak-ng build may say the same text differently."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("espeakng-loader")
    except PackageNotFoundError:  # pragma: no cover - a declared dependency
        return "unknown"


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")
    tmp.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _spoken_lines(scene: SceneSpec) -> list[_Line]:
    """Every speech line synthesised and placed on the clip's timeline."""
    speaker_order: list[str] = []
    for line in scene.speech:
        if line.speaker not in speaker_order:
            speaker_order.append(line.speaker)
    lines = [_speak_line(i, line, speaker_order) for i, line in enumerate(scene.speech)]
    _schedule(lines)
    return lines


def speech_timing(spec: SceneSpec | dict[str, Any] | str | os.PathLike[str]) -> list[dict[str, Any]]:
    """When each speech line of ``spec`` will be heard, without drawing or encoding anything: one entry per line
    (``index``, ``speaker``, ``language``, ``text``, ``start``, ``end`` in seconds, ``words``). The same voices and
    scheduling as :func:`render_clip`, so a script can be timed before it is rendered (about 0.1 s a line)."""
    return [
        {
            "index": ln.index,
            "speaker": ln.line.speaker,
            "language": ln.line.language,
            "text": ln.text,
            "start": round(ln.start, 4),
            "end": round(ln.end, 4),
            "words": len(ln.words),
        }
        for ln in _spoken_lines(load_spec(spec))
    ]


def render_clip(
    spec: SceneSpec | dict[str, Any] | str | os.PathLike[str],
    out_path: str | os.PathLike[str],
    *,
    use_cache: bool = True,
    cache_dir: str | os.PathLike[str] | None = None,
    recipe: int = 1,
) -> RenderedClip:
    """Render ``spec`` (a :class:`SceneSpec`, dict, JSON text or .json/.yaml path) to an MP4 at ``out_path``.

    Writes ``<stem>.spec.json`` and ``<stem>.timeline.json`` next to the clip. The same spec gives the same
    bytes (on one ffmpeg build and ``recipe``, one of :data:`RENDER_RECIPES`). With ``use_cache`` a spec rendered
    before is copied from the cache instead. Raises MediaError (naming ``out_path``) for an invalid spec or speech
    that does not fit the duration.
    """
    out = Path(out_path)
    if recipe not in RENDER_RECIPES:
        raise MediaError(f"{out}: unknown render recipe {recipe!r} (known: {', '.join(map(str, RENDER_RECIPES))})")
    try:
        scene = load_spec(spec)
    except MediaError as exc:
        raise MediaError(f"{out}: {exc}") from None
    spec_path, timeline_path = sidecar_paths(out)
    spec_json = scene.model_dump(mode="json")
    identity: dict[str, Any] = {
        "spec": spec_json,
        "renderer": RENDERER_VERSION,
        "encoder": encoder_version(),
        "tts": _tts_version(),
    }
    if recipe != 1:  # recipe 1's clips keep the cache keys they had before recipes existed
        identity["recipe"] = recipe
    key = hashlib.sha256(
        json.dumps(
            identity,
            sort_keys=True,
            separators=(",", ":"),
        ).encode()
    ).hexdigest()
    root = resolve_cache_dir(cache_dir) / "render" / key[:2]
    cached_clip, cached_timeline = root / f"{key}.mp4", root / f"{key}.timeline.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    if use_cache and cached_clip.exists() and cached_timeline.exists():
        timeline = json.loads(cached_timeline.read_text(encoding="utf-8"))
        tmp = out.with_name(f".tmp-{os.getpid()}-{out.name}")
        shutil.copyfile(cached_clip, tmp)
        os.replace(tmp, out)
        _write_json(spec_path, spec_json)
        _write_json(timeline_path, timeline)
        return RenderedClip(out, spec_path, timeline_path, scene, timeline, cached=True)

    lines = _spoken_lines(scene)
    last_end = max((ln.end for ln in lines), default=0.0)
    duration = scene.duration if scene.duration is not None else max(1.0, last_end + _TAIL)
    n_frames = max(1, round(duration * scene.fps))
    if scene.duration is None:
        n_frames = math.ceil(duration * scene.fps - 1e-9)
    duration = n_frames / scene.fps
    for ln in lines:
        if ln.end > duration + 1e-6:
            raise MediaError(
                f"{out}: speech line {ln.index} ({ln.text[:40]!r}) runs from {ln.start:.2f} s to {ln.end:.2f} s, "
                f"past the clip's {duration:.2f} s: lengthen 'duration', start it earlier, or set stop_after"
            )
    n_samples = round(n_frames * SAMPLE_RATE / scene.fps)
    mix = _mix(scene, lines, n_samples)
    timeline = _timeline(scene, lines, duration, n_frames)

    tmp_clip = out.with_name(f".tmp-{os.getpid()}-{out.name}")
    try:
        _encode(scene, lines, n_frames, mix, tmp_clip, recipe)
        if use_cache:
            root.mkdir(parents=True, exist_ok=True)
            stage = root / f".tmp-{os.getpid()}-{key}.mp4"
            shutil.copyfile(tmp_clip, stage)
            os.replace(stage, cached_clip)
            _write_json(cached_timeline, timeline)
        os.replace(tmp_clip, out)
    finally:
        tmp_clip.unlink(missing_ok=True)
    _write_json(spec_path, spec_json)
    _write_json(timeline_path, timeline)
    return RenderedClip(out, spec_path, timeline_path, scene, timeline, cached=False)
