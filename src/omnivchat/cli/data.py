"""`omnivchat data get NAME -o DIR`: a public benchmark's release from the Hugging Face Hub, laid out and checked."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from omnivchat.cli._app import console, err_console

data_app = typer.Typer(
    rich_markup_mode=None,
    help="Download the public benchmarks' releases from the Hugging Face Hub.",
    no_args_is_help=True,
)


def _say(line: str) -> None:
    err_console.print(escape(line), highlight=False)


@data_app.command("get")
def get_command(
    name: Annotated[
        str,
        typer.Argument(
            help="The benchmark: worldsense, dailyomni, omnibench, avodyssey, videomme, lvomnibench or socialomni."
        ),
    ],
    output: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            help="Folder to lay the release out in (created; an earlier download of the same set is resumed; any "
            "other non-empty folder is refused).",
        ),
    ],
    revision: Annotated[
        str | None, typer.Option("--revision", help="A branch, tag or commit of the repository (default: main).")
    ] = None,
    repo: Annotated[
        str | None,
        typer.Option("--repo", help="Another hub dataset (ORG/NAME) with the same layout: a mirror or a copy."),
    ] = None,
) -> None:
    """Download only the files the benchmark's reader needs (resumable, into the shared HF cache), check every
    file against the hub's hash, unpack its archives into DIR and load the result with the reader.

    HF_TOKEN is used for gated sets, HF_ENDPOINT for a mirror, and HF_HUB_OFFLINE=1 works from the cache.
    Then: omnivchat eval --benchmark NAME --data DIR ...
    """
    from omnivchat.benchmarks.download import get

    done = get(name, output, repo=repo, revision=revision, say=_say)
    console.print(
        f"{escape(name)}: {done.files} files of {escape(done.repo)}@{done.commit[:12]} in {escape(str(done.folder))}, "
        "checked against the hub's hashes and loaded by the reader",
        highlight=False,
        soft_wrap=True,
    )
    console.print(
        f"next: omnivchat eval --benchmark {escape(name)} --data {escape(str(done.data))}",
        highlight=False,
        soft_wrap=True,
    )
