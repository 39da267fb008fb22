"""The Studio's backends: which Director, Renderer and Reviewer a synthesis uses."""

from __future__ import annotations

from omnivchat.studio.engine import Agents, StudioError

BACKENDS = ("offline", "hosted")


def make_agents(backend: str, *, defect_rate: float = 0.0) -> Agents:
    """The agents of ``backend``. ``offline`` needs no key: the template Director, the procedural Renderer (with
    defects injected at ``defect_rate``) and the machine Reviewer."""
    if backend == "offline":
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
