"""Which earlier media a render sends, and in which role (multi-turn, modules b and f).

The engine hands a render the media ids its script references (``turnN.clip``, ``turnN.final_frame``,
``turnN.audio``). Each provider supports a different subset of what keeps turns together, so the roles are chosen
here, once for every backend, from the backend's :class:`Capabilities`:

- ``turnN.clip``: continuity. The provider extends that clip when it can and ``extend`` is on; otherwise the clip's
  final frame becomes the first frame of the new clip (the documented fallback, available everywhere).
- ``turnN.final_frame``: the same person across turns, sent as a reference image. A purpose that asks for a first
  frame or a continuation sends it as the first frame instead; a provider without reference images gets it as
  the first frame too (the same fallback).
- ``turnN.audio``: the same voice, sent as a reference audio where the provider takes one.

Providers treat "start from a frame" and "use references" as separate modes (Seedance, Wan 3.0, Gemini Omni's
``video_config.task``), so one mode is sent: extension, else a first frame, else references. What is not sent is
kept in ``dropped`` with the reason, for the trace.
"""

from __future__ import annotations

import re
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from omnivchat.studio.engine import RenderRequest
from omnivchat.studio.hosted.renderers._prompt import Placeholder, Role

_FIRST_FRAME_PURPOSE = re.compile(r"first[\s_-]*frame|continu|pick(?:s|ing)?\s+up|resum", re.IGNORECASE)
_MEDIA_ID = re.compile(r"^turn(\d+)\.(clip|audio|final_frame)$")


@dataclass(frozen=True)
class Capabilities:
    """What one render with one backend can send (already narrowed by duration, model and configured hooks)."""

    first_frame: bool = True
    reference_images: int = 0
    reference_audio: int = 0
    extend: bool = False
    exclusive: bool = True
    """Frame (or extension) and references are separate modes of the provider: send one."""


@dataclass
class MediaPlan:
    """The media one request sends: each as (media id, local file)."""

    first_frame: tuple[str, Path] | None = None
    reference_images: list[tuple[str, Path]] = field(default_factory=list)
    reference_audio: list[tuple[str, Path]] = field(default_factory=list)
    extend: tuple[str, Path] | None = None
    dropped: dict[str, str] = field(default_factory=dict)
    purposes: dict[str, str] = field(default_factory=dict)
    temp_files: list[Path] = field(default_factory=list)

    def roles(self) -> dict[str, Role]:
        roles: dict[str, Role] = {}
        if self.extend:
            roles[self.extend[0]] = "extend"
        if self.first_frame:
            roles[self.first_frame[0]] = "first_frame"
        roles.update({media_id: "reference_image" for media_id, _ in self.reference_images})
        roles.update({media_id: "reference_audio" for media_id, _ in self.reference_audio})
        return roles

    def placeholders(self) -> list[Placeholder]:
        """The prompt's names for the media sent ("Image 1", "Audio 1", "Video 1"), in the order they are sent:
        the first frame, then the reference images, then the reference audio."""
        out: list[Placeholder] = []
        images = 0
        if self.extend:
            out.append(Placeholder(self.extend[0], "extend", "Video 1", self._purpose(self.extend[0])))
        if self.first_frame:
            images += 1
            out.append(Placeholder(self.first_frame[0], "first_frame", f"Image {images}", self._why(self.first_frame)))
        for media_id, _ in self.reference_images:
            images += 1
            out.append(Placeholder(media_id, "reference_image", f"Image {images}", self._purpose(media_id)))
        for n, (media_id, _) in enumerate(self.reference_audio, 1):
            out.append(Placeholder(media_id, "reference_audio", f"Audio {n}", self._purpose(media_id)))
        return out

    def _purpose(self, media_id: str) -> str:
        return self.purposes.get(media_id, "")

    def _why(self, item: tuple[str, Path]) -> str:
        return self._purpose(item[0])

    def cleanup(self) -> None:
        for path in self.temp_files:
            path.unlink(missing_ok=True)


def _turn(media_id: str) -> int:
    match = _MEDIA_ID.match(media_id)
    return int(match.group(1)) if match else 0


def _kind(media_id: str) -> str:
    match = _MEDIA_ID.match(media_id)
    return match.group(2) if match else "unknown"


def latest_clip(references: dict[str, Path]) -> str | None:
    """The id of the latest turn's clip among ``references`` (the one continuity comes from)."""
    clips = sorted((m for m in references if _kind(m) == "clip"), key=_turn)
    return clips[-1] if clips else None


def final_frame(clip: Path, out: Path) -> Path:
    """The last frame of ``clip`` as a PNG at ``out`` (as the engine extracts ``turnN.final_frame``)."""
    from omnivchat.media import MediaError, MediaKilled, ffmpeg_exe

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{uuid.uuid4().hex[:8]}.tmp.png")
    args = ["-sseof", "-0.2", "-i", str(clip), "-frames:v", "1", "-update", "1"]
    result = subprocess.run(
        [ffmpeg_exe(), "-nostdin", "-loglevel", "error", "-y", *args, str(tmp)],
        capture_output=True,
        text=True,
        start_new_session=True,  # a terminal's Ctrl-C is the engine's to act on (see media.run_ffmpeg)
    )
    if result.returncode < 0:
        tmp.unlink(missing_ok=True)
        raise MediaKilled(f"{clip}: ffmpeg was killed by signal {-result.returncode} extracting its final frame")
    if result.returncode != 0 or not tmp.is_file():
        tmp.unlink(missing_ok=True)
        raise MediaError(f"{clip}: cannot extract its final frame: {result.stderr.strip()[-300:]}")
    tmp.replace(out)
    return out


def plan_media(request: RenderRequest, caps: Capabilities, *, extend: bool) -> MediaPlan:
    """Assign each referenced medium a role (see the module docstring); extracts a clip's final frame next to the
    output when the script references the clip but not its frame (removed by ``MediaPlan.cleanup``)."""
    from omnivchat.media import MediaError

    plan = MediaPlan()
    refs = dict(request.references)
    for media_id, path in refs.items():
        if not Path(path).is_file():
            raise MediaError(f"reference {media_id} ({path}) does not exist")
    plan.purposes = {r.media_id: r.purpose for r in request.script.references if r.purpose}
    by_turn = sorted(refs, key=lambda m: (_turn(m), m))
    clips = [m for m in by_turn if _kind(m) == "clip"]
    frames = [m for m in by_turn if _kind(m) == "final_frame"]
    audios = [m for m in by_turn if _kind(m) == "audio"]
    for media_id in by_turn:
        if _kind(media_id) == "unknown":
            plan.dropped[media_id] = "not a turnN.clip, turnN.audio or turnN.final_frame id"

    # Continuity from the latest referenced clip: extension, else its final frame as the first frame.
    first: tuple[str, Path] | None = None
    if clips:
        latest = clips[-1]
        for older in clips[:-1]:
            plan.dropped[older] = f"continuity comes from the latest clip, {latest}"
        if extend and caps.extend:
            plan.extend = (latest, Path(refs[latest]))
        else:
            frame_id = f"turn{_turn(latest)}.final_frame"
            if frame_id in refs:
                frame = Path(refs[frame_id])
            else:
                out = request.out_path
                frame = out.with_name(f".{out.stem}.{frame_id}.png")
                plan.temp_files.append(frame)
                final_frame(Path(refs[latest]), frame)
            first = (latest, frame)
            if frame_id in frames:
                frames.remove(frame_id)  # already sent as the first frame
    wanted_refs: list[tuple[str, Path]] = []
    for media_id in frames:
        if first is None and _FIRST_FRAME_PURPOSE.search(plan.purposes.get(media_id, "")):
            first = (media_id, Path(refs[media_id]))
        else:
            wanted_refs.append((media_id, Path(refs[media_id])))

    if first is not None and not caps.first_frame:
        # This request cannot start from a frame (e.g. Gemini Omni 1.2 past 10 s): the frame keeps the person.
        if caps.reference_images:
            wanted_refs.insert(0, first)
        else:
            plan.dropped[first[0]] = "the provider takes no first frame or reference image for this request"
        first = None
    if first is None and wanted_refs and not caps.reference_images and caps.first_frame and not plan.extend:
        first = wanted_refs.pop()  # no reference images: the latest frame becomes the first frame (fallback)
    plan.first_frame = first

    framed = plan.extend is not None or plan.first_frame is not None
    for media_id, path in wanted_refs:
        if framed and caps.exclusive:
            plan.dropped[media_id] = "the provider takes a first frame or references, not both; the frame was kept"
        elif len(plan.reference_images) < caps.reference_images:
            plan.reference_images.append((media_id, path))
        else:
            plan.dropped[media_id] = f"the provider takes at most {caps.reference_images} reference image(s) here"
    for media_id in audios:
        if framed and caps.exclusive:
            plan.dropped[media_id] = "the provider takes a first frame or references, not both; the frame was kept"
        elif len(plan.reference_audio) < caps.reference_audio:
            plan.reference_audio.append((media_id, Path(refs[media_id])))
        else:
            plan.dropped[media_id] = "the provider (or this configuration) takes no reference audio here"
    return plan
