"""The Studio's backends: which Director, Renderer and Reviewer a synthesis uses."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omnivchat.studio.config import SubcategoryConfig
from omnivchat.studio.engine import Agents, Director, StudioError

BACKENDS = ("offline", "hosted")


def make_agents(
    backend: str,
    configs: Sequence[SubcategoryConfig] = (),
    *,
    defect_rate: float = 0.0,
    agents_file: Path | None = None,
    output: Path | None = None,
) -> Agents:
    """The agents of ``backend`` for ``configs``, refused before anything is written when the backend cannot
    synthesize one of them. ``offline`` needs no key: the template Director, the procedural Renderer (with
    defects injected at ``defect_rate``) and the machine Reviewer. ``hosted`` reads ``agents_file``: a Director
    and a Reviewer on any route, and a video generator (docs/studio.md, "Hosted agents"). Close them after use.

    ``output``: the bench directory the agents will synthesize into. Where it holds a synthesis begun with an
    earlier render recipe, the offline Renderer keeps that recipe (a resume renders as the first run did); a new
    synthesis gets the latest."""
    if backend == "offline":
        _check_offline(configs)
        from omnivchat.studio.offline import OfflineDirector, OfflineRenderer, OfflineReviewer

        renderer = OfflineRenderer(defect_rate=defect_rate, recipe=_recorded_recipe(output))
        return Agents(OfflineDirector(defect_rate=defect_rate), renderer, OfflineReviewer())
    if backend == "hosted":
        if agents_file is None:
            raise StudioError("the hosted backend needs --agents FILE (the Director, Reviewer and Renderer to use)")
        if defect_rate:
            raise StudioError("--defect-rate is for the offline backend; hosted agents make their own mistakes")
        return _hosted(agents_file)
    raise StudioError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")


def _recorded_recipe(output: Path | None) -> int | None:
    """The render recipe of the offline synthesis recorded in ``output``'s manifest (None: none recorded there).

    A Renderer name without ``recipe=`` is recipe 1's (named before recipes existed). Whatever else the manifest
    says is for ``studio_run`` to check against the rerun's settings."""
    import re

    from pydantic import ValidationError

    from omnivchat.studio.engine import MANIFEST, STUDIO_DIR, StudioManifest

    if output is None:
        return None
    try:
        recorded = StudioManifest.model_validate_json((output / STUDIO_DIR / MANIFEST).read_bytes())
    except (OSError, ValidationError):
        return None  # no manifest (a new synthesis) or not one: studio_run says what is wrong with it
    name = recorded.agents.get("renderer", "")
    if not name.startswith("offline-renderer/"):
        return None
    found = re.search(r" recipe=(\d+)$", name)
    recipe = int(found.group(1)) if found else 1
    from omnivchat.synth import RENDER_RECIPES

    if recipe not in RENDER_RECIPES:
        raise StudioError(
            f"{output / STUDIO_DIR / MANIFEST}: made with render recipe {recipe}, which this omnivchat does not know "
            f"(it knows {', '.join(map(str, RENDER_RECIPES))}): resume it with the omnivchat that began it, or "
            "choose a new directory"
        )
    return recipe


def _check_offline(configs: Sequence[SubcategoryConfig]) -> None:
    """The offline Director stages the 17 shipped subcategories, in English and Mandarin."""
    from omnivchat.studio.minibench import BUILDERS, LANGUAGES

    for config in configs:
        if config.code not in BUILDERS:
            raise StudioError(
                f"subcategory {config.code}: the offline backend has no template for it "
                f"(it stages {', '.join(BUILDERS)})"
            )
        spoken = [v for v, value in config.attributes["language"].values.items() if value.probability > 0]
        unknown = [v for v in spoken if v not in LANGUAGES]
        if unknown:
            raise StudioError(
                f"subcategory {config.code}: the offline backend speaks {', '.join(LANGUAGES)}, "
                f"not {', '.join(unknown)} (language values with a probability above 0)"
            )


def _hosted(agents_file: Path) -> Agents:
    from omnivchat.studio.hosted import LoopThread, RouteDirector, RouteReviewer, load_agents_file, make_renderer

    spec = load_agents_file(agents_file)
    if spec.reviewer is None or not spec.renderer:
        raise StudioError(f"{agents_file}: studio run needs [director], [reviewer] and [renderer] tables")
    loop = LoopThread()
    made: list[Any] = []
    try:
        made.append(make_renderer(spec.renderer, loop=loop))  # every key is checked before anything starts
        made.append(RouteDirector(spec.director, loop))
        made.append(RouteReviewer(spec.reviewer, loop))
    except BaseException:
        for agent in made:
            agent.close()
        loop.close()
        raise
    renderer, director, reviewer = made
    return Agents(
        director, renderer, reviewer, closers=(*(a.close for a in made), loop.close), cancellers=(loop.cancel,)
    )


def make_director(agents_file: Path | None) -> Director:
    """The hosted Director of ``agents_file`` on its own (``import-recorded``); close it after use."""
    from omnivchat.studio.hosted import RouteDirector, load_agents_file

    if agents_file is None:
        raise StudioError("import-recorded needs a Director: give --agents FILE with a [director] table")
    return RouteDirector(load_agents_file(agents_file).director)
