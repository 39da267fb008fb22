"""``omnivchat studio import-recorded``: recorded dialogues with a corrected caption in place of a script, turned
into bench instances marked ``source: human`` (paper, Appendix D.2). The work is ``omnivchat.studio.recorded``;
this is its command line."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from omnivchat.cli._app import console, err_console, fail

if TYPE_CHECKING:
    from omnivchat.studio.engine import Director
    from omnivchat.studio.recorded import Outcome

DirectorFactory = Callable[[Path | None], "Director"]
"""Builds the Director from ``--agents FILE`` (None when not given)."""


def import_command(
    manifest: Annotated[
        Path,
        typer.Argument(
            help="Manifest JSONL, one recording a line: id, video, subcategory, language, caption, transcript "
            "(optional), or turns: [{video, caption, transcript, reply}] for a multi-turn recording."
        ),
    ],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Bench directory to write (or to resume).")
    ] = None,
    agents: Annotated[
        Path | None, typer.Option("--agents", help="The hosted agents file; its Director writes replies and rubrics.")
    ] = None,
    brand: Annotated[
        list[str] | None,
        typer.Option("--brand", help="A brand name to keep out of replies and rubrics (besides the built-in list)."),
    ] = None,
    check: Annotated[
        bool, typer.Option("--check", help="Only check the manifest and probe its clips; write nothing.")
    ] = False,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Recordings imported at once.")] = 2,
) -> None:
    """Import recorded clips with a checked caption (and the user's speech): the Director writes a spoken
    reference reply and a tiered rubric from the caption, validated and refined for up to three rounds (3-5
    criteria, one tier-0 language criterion, a tier-1 criterion, no reference to the hidden caption, brand names
    as <brand>). Clips are copied, never moved. Rerun the same command to resume; a finished one adds nothing."""
    run_import(
        manifest,
        output,
        director_factory=_hosted_director,
        agents=agents,
        brands=brand,
        check=check,
        concurrency=concurrency,
    )


def _hosted_director(agents: Path | None) -> Director:
    from omnivchat.studio.backends import make_director

    return make_director(agents)


def run_import(
    manifest: Path,
    output: Path | None,
    *,
    director_factory: DirectorFactory,
    agents: Path | None = None,
    brands: Sequence[str] | None = None,
    check: bool = False,
    concurrency: int = 2,
) -> None:
    """The command's work, with the Director's factory as a parameter (tests pass a scripted one)."""
    from omnivchat.studio.recorded import DEFAULT_BRANDS, RECORDED_DIR, import_recorded, load_recordings

    if check:
        recordings = load_recordings(manifest)
        clips = sum(len(r.turns) for r in recordings)
        _say(f"{escape(str(manifest))}: {len(recordings)} recording(s), {clips} clip(s): all readable, with sound")
        return
    if output is None:
        raise fail("give --output DIR (the bench directory to write)")
    director = director_factory(agents)

    def on_done(outcome: Outcome) -> None:
        rounds = f"{outcome.rounds} round{'s' * (outcome.rounds != 1)}"
        if outcome.status == "imported":
            _say(f"{'already imported' if outcome.already else 'imported'} {outcome.id} ({rounds})")
        elif outcome.status == "not imported":
            first = outcome.problems[0] if outcome.problems else "no reason recorded"
            more = f" (+{len(outcome.problems) - 1} more)" if len(outcome.problems) > 1 else ""
            _say(f"[yellow]not imported[/] {outcome.id} after {rounds}: {escape(first)}{more}")
        else:
            _say(f"[red]failed[/] {outcome.id}: {escape(outcome.problems[0])}", err=True)

    extra = list(brands or ())
    try:
        summary = import_recorded(
            manifest,
            output,
            director,
            brands=[*DEFAULT_BRANDS, *extra] if extra else None,
            concurrency=concurrency,
            on_done=on_done,
        )
    finally:
        close = getattr(director, "close", None)
        if close is not None:
            close()
    imported, given_up, failed = (summary.count(s) for s in ("imported", "not imported", "failed"))
    _say(
        f"imported {imported} of {len(summary.outcomes)} recording(s); {given_up} not imported, {failed} failed; "
        f"Director calls: {summary.calls_made} made, {summary.calls_replayed} answered from the run store; "
        f"{summary.seconds:.1f} s"
    )
    traces = output / RECORDED_DIR / "traces"
    if summary.bench is None:
        _say(f"no recording was imported: no bench written (traces under {escape(str(traces))})", err=True)
        raise typer.Exit(code=1)
    _say(f"wrote {escape(str(output))} (bench.yaml, instances.jsonl, media/; traces under {escape(str(traces))})")
    if failed:
        _say(f"{failed} recording(s) stopped by an error: rerun the same command to resume", err=True)
        raise typer.Exit(code=1)


def _say(text: str, *, err: bool = False) -> None:
    """One line, whole (paths and problems are read and grepped as they are)."""
    (err_console if err else console).print(text, highlight=False, soft_wrap=True)
