"""The offline backend of the Studio: agents that need no key and no network.

- ``OfflineDirector``: a template Director built on the mini-bench builders, with machine checks for its reviews.
- ``OfflineRenderer``: the procedural renderer, with defects injected at a chosen rate.
- ``OfflineReviewer``: inspects a rendered clip for real (streams, pixel colours, speech timing, audio tail).

``NOT_STAGED``: the sampled attributes the offline Director records but does not stage (the inspection page marks
them). Names load on first use (the Reviewer needs numpy and PyAV).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from omnivchat._lazy import lazy_names

if TYPE_CHECKING:
    from omnivchat.studio.offline._director import NOT_STAGED, OfflineDirector
    from omnivchat.studio.offline._renderer import OfflineRenderer
    from omnivchat.studio.offline._reviewer import OfflineReviewer

_LAZY = {
    "NOT_STAGED": "_director",
    "OfflineDirector": "_director",
    "OfflineRenderer": "_renderer",
    "OfflineReviewer": "_reviewer",
}

__all__ = ["NOT_STAGED", "OfflineDirector", "OfflineRenderer", "OfflineReviewer"]

__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
