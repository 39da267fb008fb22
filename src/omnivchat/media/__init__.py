"""omnivchat.media: the request path -- ffmpeg-backed probing, derived clips, decoding, data URLs, the cache.

- ``probe(path)`` -> :class:`MediaInfo` (duration, streams, has_audio / has_video, size, fps, codecs, energy).
- Derived clips, cached by source content + operation + parameters + ffmpeg build: ``trim``, ``strip_audio``,
  ``mute_audio``, ``blank_video``, ``freeze_video``, ``export_audio``, ``fit_for_route``.
- One clip from media released apart (a video and its audio files, or images and audio files): ``compose_clip``.
- A clip cut down to the frames a model samples (2 fps, at most 16; audio kept): ``sample_video``.
- Decoding to numpy: ``extract_audio`` (mono float32; ``extract_audio_with_rate`` also returns the rate),
  ``sample_frames``.
- ``to_data_url``, ``content_hash``, ``resolve_media_path``, ``batch``; ``ClipChecker`` and ``ClipUse`` (clips
  probed and checked against what each use needs).

Authoring code (the procedural renderer, speech synthesis, tail repair) is in :mod:`omnivchat.synth`, which
builds on this package; nothing here imports it.

Every failure about a file raises :class:`MediaError` naming that file; every ffmpeg and PyAV call is bounded
(``$OMNIVCHAT_MEDIA_TIMEOUT_S``, 300 s) and raises :class:`MediaTimeout` past it. Names are imported lazily, so
importing this package costs next to nothing. See docs/media.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from omnivchat._lazy import lazy_names
from omnivchat.media._bounded import bounded
from omnivchat.media._ffmpeg import (
    AUDIO_ENCODE_ARGS,
    DETERMINISTIC_ARGS,
    VIDEO_ENCODE_ARGS,
    MediaError,
    MediaKilled,
    MediaTimeout,
    encoder_version,
    ffmpeg_exe,
    finish_ffmpeg,
    media_timeout_s,
    popen_ffmpeg,
    run_ffmpeg,
)

if TYPE_CHECKING:
    from omnivchat.media._cache import cache_dir, content_hash
    from omnivchat.media._clips import ClipChecker, ClipUse
    from omnivchat.media._compose import COMPOSE_RECIPE, GAP_S, IMAGE_FPS, MIN_IMAGE_S, Composed, compose_clip
    from omnivchat.media._dataurl import mime_type, to_data_url
    from omnivchat.media._decode import (
        FrameSample,
        extract_audio,
        extract_audio_with_rate,
        sample_frames,
        sample_times,
    )
    from omnivchat.media._ops import (
        MediaLimits,
        blank_video,
        export_audio,
        fit_for_route,
        fits,
        freeze_video,
        mute_audio,
        strip_audio,
        trim,
    )
    from omnivchat.media._paths import BatchItem, batch, resolve_media_path
    from omnivchat.media._probe import (
        MediaInfo,
        StreamInfo,
        forget_hashes,
        open_container,
        probe,
        probe_headers,
        require_audio,
    )
    from omnivchat.media._sample import sample_video, sampled_frame_indices

_LAZY: dict[str, str] = {
    "COMPOSE_RECIPE": "_compose",
    "GAP_S": "_compose",
    "IMAGE_FPS": "_compose",
    "MIN_IMAGE_S": "_compose",
    "fits": "_ops",
    "open_container": "_probe",
    "require_audio": "_probe",
    "cache_dir": "_cache",
    "ClipChecker": "_clips",
    "ClipUse": "_clips",
    "Composed": "_compose",
    "compose_clip": "_compose",
    "content_hash": "_cache",
    "forget_hashes": "_probe",
    "mime_type": "_dataurl",
    "to_data_url": "_dataurl",
    "FrameSample": "_decode",
    "extract_audio": "_decode",
    "extract_audio_with_rate": "_decode",
    "sample_frames": "_decode",
    "sample_times": "_decode",
    "MediaLimits": "_ops",
    "blank_video": "_ops",
    "export_audio": "_ops",
    "fit_for_route": "_ops",
    "freeze_video": "_ops",
    "mute_audio": "_ops",
    "strip_audio": "_ops",
    "trim": "_ops",
    "sample_video": "_sample",
    "sampled_frame_indices": "_sample",
    "BatchItem": "_paths",
    "batch": "_paths",
    "resolve_media_path": "_paths",
    "MediaInfo": "_probe",
    "ProbeResult": "_probe",
    "StreamInfo": "_probe",
    "cached_probe": "_probe",
    "probe": "_probe",
    "probe_headers": "_probe",
}

__all__ = [
    "AUDIO_ENCODE_ARGS",
    "COMPOSE_RECIPE",
    "DETERMINISTIC_ARGS",
    "GAP_S",
    "IMAGE_FPS",
    "MIN_IMAGE_S",
    "VIDEO_ENCODE_ARGS",
    "BatchItem",
    "ClipChecker",
    "ClipUse",
    "Composed",
    "FrameSample",
    "MediaError",
    "MediaInfo",
    "MediaKilled",
    "MediaLimits",
    "MediaTimeout",
    "ProbeResult",
    "StreamInfo",
    "batch",
    "blank_video",
    "bounded",
    "cache_dir",
    "cached_probe",
    "compose_clip",
    "content_hash",
    "encoder_version",
    "export_audio",
    "extract_audio",
    "extract_audio_with_rate",
    "ffmpeg_exe",
    "finish_ffmpeg",
    "fit_for_route",
    "fits",
    "forget_hashes",
    "freeze_video",
    "media_timeout_s",
    "mime_type",
    "mute_audio",
    "open_container",
    "popen_ffmpeg",
    "probe",
    "probe_headers",
    "require_audio",
    "resolve_media_path",
    "run_ffmpeg",
    "sample_frames",
    "sample_times",
    "sample_video",
    "sampled_frame_indices",
    "strip_audio",
    "to_data_url",
    "trim",
]


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
