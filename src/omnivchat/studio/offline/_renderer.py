"""The offline Renderer: the procedural renderer (``omnivchat.synth``) behind the Renderer protocol.

With ``defect_rate`` > 0, a render comes out defective at that rate, the way a video generator fails at random:
an object drawn in another colour, the audio track lost, or the clip cut short. The defect is drawn from the
render's seed, so a re-seed usually clears it and the same seed repeats it. The Reviewer has to find it in the
clip: the Renderer only notes it for the trace (the Director never sees these notes).
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path
from typing import Any

from omnivchat.studio.engine import Clip, RenderRefused, RenderRequest

DEFECTS = ("colour", "no_audio", "truncated")


class OfflineRenderer:
    """Renders a script's procedural scene; the references of a multi-turn prompt must exist (the procedural
    scene already carries the continuity a video generator would take from them).

    ``recipe``: how clips are encoded (:data:`omnivchat.synth.RENDER_RECIPES`; None: the latest). It is part of the
    renderer's name, so a bench's manifest records it and a synthesis resumes with the recipe it began with."""

    def __init__(self, *, defect_rate: float = 0.0, recipe: int | None = None) -> None:
        from omnivchat.synth import LATEST_RENDER_RECIPE, RENDER_RECIPES

        if not 0.0 <= defect_rate <= 1.0:
            raise ValueError(f"defect_rate must be within [0, 1], got {defect_rate}")
        self.recipe = LATEST_RENDER_RECIPE if recipe is None else recipe
        if self.recipe not in RENDER_RECIPES:
            raise ValueError(f"unknown render recipe {recipe!r} (known: {', '.join(map(str, RENDER_RECIPES))})")
        self.defect_rate = defect_rate
        # recipe 1 keeps the name it had before recipes existed: the benches it made resume unchanged
        self.name = f"offline-renderer/1 defects={defect_rate:g}" + (f" recipe={self.recipe}" * (self.recipe != 1))

    def render(self, request: RenderRequest) -> Clip:
        from omnivchat._canonical import sha256_file
        from omnivchat.media import MediaError, MediaKilled, probe
        from omnivchat.synth import render_clip

        for media_id, path in request.references.items():
            if not Path(path).is_file():
                raise MediaError(f"reference {media_id} ({path}) does not exist")
        scene: dict[str, Any] = dict(request.script.scene)
        scene["seed"] = request.seed % 1_000_000
        scene["duration"] = request.script.duration_s
        rng = random.Random(request.seed)
        defect = rng.choice(DEFECTS) if rng.random() < self.defect_rate else None
        if defect == "colour" and not scene.get("objects"):
            defect = "truncated"
        if defect == "colour":
            scene["objects"] = [dict(o) for o in scene["objects"]]
            scene["objects"][0]["color"] = _another_colour(scene["objects"][0].get("color"), rng)
        out = request.out_path
        try:
            render_clip(scene, out, recipe=self.recipe)
        except MediaKilled:  # says nothing of the script: the instance stops, resumable
            raise
        except MediaError as err:  # the script cannot be staged as written (speech past its end...): rewrite it
            raise RenderRefused(f"the procedural renderer cannot render this script: {err}") from None
        if defect in ("no_audio", "truncated"):
            args = ["-an", "-c:v", "copy"] if defect == "no_audio" else ["-t", f"{scene['duration'] * 0.6:.2f}"]
            _ffmpeg_in_place(out, args)
        return Clip(
            path=out.name,
            sha256=sha256_file(out),
            duration_s=round(probe(out, energy=False).duration, 3),  # headers: the Reviewer decodes it
            seed=request.seed,
            cost_usd=0.0,  # rendered here: free
            notes={"injected_defect": defect} if defect else {},
        )


def _another_colour(css: Any, rng: random.Random) -> str:
    from omnivchat.studio.minibench import COLOURS

    return rng.choice([c.css for c in COLOURS if c.css != css and c.en != "white"])


def _ffmpeg_in_place(path: Path, args: list[str]) -> None:
    from omnivchat.media import MediaError, MediaKilled, ffmpeg_exe

    tmp = path.with_name(f".tmp-{path.name}")
    result = subprocess.run(
        [ffmpeg_exe(), "-nostdin", "-loglevel", "error", "-y", "-i", str(path), *args, str(tmp)],
        capture_output=True,
        text=True,
        start_new_session=True,  # a terminal's Ctrl-C is the engine's to act on (see media.run_ffmpeg)
    )
    if result.returncode < 0:
        tmp.unlink(missing_ok=True)
        raise MediaKilled(f"{path}: ffmpeg was killed by signal {-result.returncode}")
    if result.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise MediaError(f"{path}: ffmpeg failed: {result.stderr.strip()[-300:]}")
    tmp.replace(path)
