"""`omnivchat bench make`: build the procedural mini-bench (see ``omnivchat.studio.make_minibench``)."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from omnivchat._cli_runs import _fail, console

bench_app = typer.Typer(help="Build benches offline.", no_args_is_help=True)


@bench_app.command("make")
def make_command(
    output: Annotated[Path, typer.Option("--output", "-o", help="Bench directory to write (new or empty).")],
    per_subcategory: Annotated[
        int, typer.Option("--per-subcategory", "-n", min=1, help="Instances per subcategory (languages alternate).")
    ] = 2,
    languages: Annotated[
        str, typer.Option("--languages", help="Comma-separated user languages: en, zh or both.")
    ] = "en,zh",
    seed: Annotated[int, typer.Option("--seed", help="Scene RNG seed: the same seed gives the same bench.")] = 0,
    force: Annotated[bool, typer.Option("--force", help="Replace OUTPUT if it already holds a bench.")] = False,
) -> None:
    """Build the procedural mini-bench: real clips for all 17 subcategories, rendered offline in seconds.

    Each instance is a scene drawn by the procedural renderer (coloured shapes on a table, a person, a selfie or
    rear camera, spoken questions in English or Mandarin), with a reference reply and a tiered rubric whose every
    criterion carries a machine check, so the offline rule judge (`omnivchat score RUN_DIR --panel rule`) can
    score replies. The default (2 per subcategory, en and zh) is 34 instances. A non-empty OUTPUT that is not a
    bench is never touched; an existing bench is replaced only with --force.
    """
    from omnivchat.bench import SUBCATEGORIES
    from omnivchat.studio._minibench import MiniBenchError, make_minibench

    started = time.perf_counter()
    try:
        bench = make_minibench(
            output,
            per_subcategory=per_subcategory,
            languages=[part for part in languages.split(",") if part.strip()],
            seed=seed,
            progress=True,
            force=force,
        )
    except (MiniBenchError, ValueError) as err:
        raise _fail(str(err)) from None
    elapsed = time.perf_counter() - started
    by_sub = Counter(i.subcategory for i in bench.instances)
    by_lang = Counter(i.language for i in bench.instances)
    n_clips = sum(len(i.turns) for i in bench.instances)
    counts = ", ".join(f"{code} {by_sub[code]}" for code in SUBCATEGORIES if code in by_sub)
    languages_text = ", ".join(f"{lang} {n}" for lang, n in sorted(by_lang.items()))
    console.print(
        f"wrote {bench.root}: {len(bench.instances)} instances ({languages_text}), {n_clips} clips, "
        f"in {elapsed:.1f} s; by subcategory: {counts}",
        highlight=False,
        soft_wrap=True,  # one line, however long the path: scripts read it
    )
