"""Checking the clips of a bench: every turn's clip, against what its instance requires.

The bench package validates the files of a bench directory but never decodes media (it sits below media), and
media knows no bench: :class:`BenchClipChecker` walks a bench into the clip uses the media package's
:class:`~omnivchat.media.ClipChecker` probes, and is plugged into ``load_bench(path, check_media=...)`` so that
one pass lists the problems of the files and of the clips together, each as
``instances.jsonl:<line>: turns[<i>].video: <message>``.
"""

from __future__ import annotations

from pathlib import Path

from omnivchat.bench import Bench, Instance
from omnivchat.media import ClipChecker, ClipUse, MediaError, resolve_media_path

_BOTH = frozenset({"video", "audio"})


def required_media(instance: Instance) -> frozenset[str]:
    """What the instance's answer needs: its ``requires``, or both video and audio when unset (the model's rule)."""
    return frozenset(instance.requires) if instance.requires is not None else _BOTH


def clip_uses(bench: Bench) -> list[ClipUse]:
    """Every turn's clip of every instance, in instance and turn order (every turn: earlier turns are heard as
    history); a path that escapes the bench directory has no path."""
    uses = []
    for instance in bench.instances:
        line = bench.where(instance)
        needs = required_media(instance)
        if instance.requires is not None:
            why = "the instance requires audio"
        else:
            why = "requires is unset, which means video and audio"
        for index, turn in enumerate(instance.turns):
            try:
                path: Path | None = resolve_media_path(bench.root, turn.video)
            except MediaError:
                path = None
            uses.append(ClipUse(f"{line}: turns[{index}].video", turn.video, path, needs, why))
    return uses


def instance_audio_problems(bench: Bench, instance: Instance) -> list[str]:
    """Validate's check of one instance's clips, for what is about to be sent: the clips without a decodable audio
    track where the instance needs the audio, each in validate's own words. A clip that cannot be read at all is
    left to the route, which fails the item with its own kind (media, media_timeout)."""
    if "audio" not in required_media(instance):
        return []
    uses = clip_uses(Bench(root=bench.root, info=bench.info, instances=[instance], lines=bench.lines))
    problems = ClipChecker(workers=1, headers_only=True).check(uses)  # 2 ms a clip, not 24: see ClipChecker
    return [p for p in problems if "audio track" in p and "unreadable" not in p]


class BenchClipChecker(ClipChecker):
    """Probes every clip of a bench and lists what makes a clip unusable for the instances that use it.

    Call it on a bench (``problems = BenchClipChecker()(bench)``) or hand it to ``load_bench(..., check_media=...)``;
    what is checked, and the counts and warnings it keeps, are :class:`~omnivchat.media.ClipChecker`'s. A clip
    without a decodable audio track is a problem in an instance that requires audio (``requires`` unset counts
    as video and audio, as the Instance model defines it)."""

    def __call__(self, bench: Bench) -> list[str]:
        return self.check(clip_uses(bench))
