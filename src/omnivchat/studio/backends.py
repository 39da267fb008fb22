"""The Studio's backends: which Director, Renderer and Reviewer a synthesis uses."""

from __future__ import annotations

from collections.abc import Sequence

from omnivchat.studio.config import SubcategoryConfig
from omnivchat.studio.engine import Agents, StudioError

BACKENDS = ("offline", "hosted")


def make_agents(backend: str, configs: Sequence[SubcategoryConfig] = (), *, defect_rate: float = 0.0) -> Agents:
    """The agents of ``backend`` for ``configs``, refused before anything is written when the backend cannot
    synthesize one of them. ``offline`` needs no key: the template Director, the procedural Renderer (with
    defects injected at ``defect_rate``) and the machine Reviewer."""
    if backend == "offline":
        _check_offline(configs)
        from omnivchat.studio.offline import OfflineDirector, OfflineRenderer, OfflineReviewer

        return Agents(
            OfflineDirector(defect_rate=defect_rate), OfflineRenderer(defect_rate=defect_rate), OfflineReviewer()
        )
    if backend == "hosted":
        raise StudioError(
            "the hosted backend (an LLM Director, an omni Reviewer and a video generator) is not built yet; "
            "use --backend offline"
        )
    raise StudioError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")


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
