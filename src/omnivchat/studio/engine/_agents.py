"""The four agents as interfaces (paper, Section 2: Figure 2's legend).

- **Director**: every text task. Text in (the module's instructions, a JSON payload, the conversation so far),
  text or JSON out. The engine builds each module's request and checks the answer against a model.
- **Renderer**: an accepted prompt (a :class:`Script`) and media references in, a clip out.
- **Reviewer**: a clip in; a caption with the seven-part quality report, and answers to focused questions. It
  never sees the script: observation stays apart from judgment (Appendix C.1).
- **Validator**: deterministic; a script (or an assembled multi-turn record) in, a list of violations out.

Offline implementations are in ``omnivchat.studio.offline``; hosted ones plug in behind the same protocols.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from omnivchat.errors import OmnivchatError
from omnivchat.studio.engine._types import Answer, Caption, Clip, Question, Script


class RenderRefused(OmnivchatError):
    """The Renderer's provider refused the prompt (moderation): the script must change, so the engine rewrites."""


class RenderFailed(OmnivchatError):
    """The render failed (the provider's task failed, timed out, or sent no clip): the engine re-seeds."""


@dataclass(frozen=True)
class DirectorRequest:
    """One Director call: ``module`` names the step (``description``, ``script``, ``video_review``...),
    ``instructions`` say what to do in words, ``payload`` holds the facts as JSON, ``history`` is the Director's
    conversation so far (what a rewrite rolls back) and ``expect`` whether JSON or plain text comes back."""

    module: str
    instructions: str
    payload: dict[str, Any]
    history: tuple[dict[str, Any], ...] = ()
    expect: Literal["json", "text"] = "json"

    def as_dict(self) -> dict[str, Any]:
        return {
            "module": self.module,
            "instructions": self.instructions,
            "payload": self.payload,
            "history": list(self.history),
            "expect": self.expect,
        }


class Director(Protocol):
    name: str

    def ask(self, request: DirectorRequest) -> dict[str, Any] | str: ...


@dataclass(frozen=True)
class RenderRequest:
    """What the Renderer gets: the accepted script, the selected prompt fragments, the earlier media it may use
    (media id -> file), a seed, and where to write the clip."""

    script: Script
    fragments: tuple[str, ...]
    references: dict[str, Path] = field(default_factory=dict)
    seed: int = 0
    out_path: Path = Path("clip.mp4")


class Renderer(Protocol):
    name: str

    def render(self, request: RenderRequest) -> Clip: ...


class Reviewer(Protocol):
    name: str

    def caption(self, clip: Path, *, language: str = "en") -> Caption: ...

    def answer(self, clip: Path, questions: Sequence[Question]) -> list[Answer]: ...


@dataclass(frozen=True)
class Agents:
    """The agents one synthesis uses; ``close`` releases what they hold (HTTP sessions, an event loop)."""

    director: Director
    renderer: Renderer
    reviewer: Reviewer
    closers: tuple[Callable[[], None], ...] = ()
    cancellers: tuple[Callable[[], None], ...] = ()  # on an interrupt: drop the requests in flight

    def cancel(self) -> None:
        """An interrupt: cancel what the agents have in flight (hosted HTTP requests); local work finishes."""
        for cancel in self.cancellers:
            cancel()

    def names(self) -> dict[str, str]:
        return {"director": self.director.name, "renderer": self.renderer.name, "reviewer": self.reviewer.name}

    def close(self) -> None:
        for close in self.closers:
            close()
