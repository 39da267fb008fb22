"""What a model receives from the Studio's render recipes (omnivchat.synth.RENDER_RECIPES): the offline engine over
every subcategory synthesized twice, once with recipe 1 and once with the latest, then compared clip by clip.

Prints, for the two benches (no assertion):

- whether they hold the same instances (instances.jsonl equal: the same scripts, transcripts heard by the Reviewer,
  captions, references and rubrics) and the same clip paths;
- each clip's video PSNR of the latest recipe against recipe 1 (ffmpeg's psnr filter: the lowest average and the
  lowest frame over all clips);
- the Reviewer's caption (text, transcript, seven-part report, observations) of every clip: how many differ;
- with the ``asr`` extra (faster-whisper, Whisper tiny.en): every clip's transcript: how many differ;
- each recipe's engine seconds and the ffmpeg CPU seconds it waited for.

    uv run python perf/perf_render_recipes.py [--n 1] [--concurrency 2] [--show-differences]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import tempfile
import time
from pathlib import Path
from typing import Any


def children_cpu() -> float:
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime + kids.ru_stime


def synthesize(out: Path, recipe: int, n: int, concurrency: int) -> tuple[float, float]:
    from omnivchat.studio.backends import make_agents
    from omnivchat.studio.config import load_all
    from omnivchat.studio.engine import Agents, studio_run
    from omnivchat.studio.offline import OfflineRenderer

    offline = make_agents("offline")
    agents = Agents(offline.director, OfflineRenderer(recipe=recipe), offline.reviewer)
    started, cpu = time.perf_counter(), children_cpu()
    studio_run(load_all(), out, agents, n=n, concurrency=concurrency)
    return time.perf_counter() - started, children_cpu() - cpu


def psnr(reference: Path, other: Path) -> tuple[float, float]:
    """(average, lowest frame) PSNR of ``other``'s frames against ``reference``'s, in dB."""
    from omnivchat.media import run_ffmpeg

    args = ["-loglevel", "info", "-i", str(reference), "-i", str(other), "-lavfi", "psnr", "-f", "null", "-"]
    text = run_ffmpeg(args).stderr.decode()
    found = re.search(r"average:(\S+) min:(\S+)", text)
    if found is None:
        raise RuntimeError(f"no PSNR for {other}: {text[-300:]}")
    return float(found.group(1)), float(found.group(2))


def caption(reviewer: Any, clip: Path) -> dict[str, Any]:
    """The Reviewer's caption of ``clip`` as data, without the clip's own path."""
    data: dict[str, Any] = reviewer.caption(clip).model_dump(mode="json")
    data["observed"].pop("file", None)
    return data


def verdicts_of(caption: dict[str, Any]) -> dict[str, bool]:
    return {aspect: part["ok"] for aspect, part in caption["report"].items()}


def differences(a: Any, b: Any, where: str = "") -> list[str]:
    """Where two captions differ: ``path: a -> b`` for each differing leaf."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in differences(a.get(k), b.get(k), f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{where}[{i}]")]
    return [] if a == b else [f"{where.lstrip('.')}: {a} -> {b}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1, help="instances per subcategory")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--show-differences", action="store_true")
    args = parser.parse_args()

    from omnivchat.studio.offline import OfflineReviewer
    from omnivchat.synth import LATEST_RENDER_RECIPE

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["OMNIVCHAT_CACHE_DIR"] = str(Path(tmp) / "cache")
        benches = {}
        for recipe in (1, LATEST_RENDER_RECIPE):
            out = Path(tmp) / f"recipe{recipe}"
            seconds, cpu = synthesize(out, recipe, args.n, args.concurrency)
            benches[recipe] = out
            print(f"recipe {recipe}: engine {seconds:.2f} s, ffmpeg CPU {cpu:.2f} s")
        old, new = benches[1], benches[LATEST_RENDER_RECIPE]
        same_instances = (old / "instances.jsonl").read_bytes() == (new / "instances.jsonl").read_bytes()
        clips = sorted(p.relative_to(old) for p in (old / "media").rglob("*.mp4"))
        same_paths = clips == sorted(p.relative_to(new) for p in (new / "media").rglob("*.mp4"))
        print(f"instances.jsonl equal: {same_instances}; the same {len(clips)} clip paths: {same_paths}")

        figures = [psnr(old / c, new / c) for c in clips]
        print(
            f"video PSNR of recipe {LATEST_RENDER_RECIPE} against recipe 1: lowest clip average "
            f"{min(f[0] for f in figures):.2f} dB, lowest frame {min(f[1] for f in figures):.2f} dB"
        )

        reviewer = OfflineReviewer()
        captions = [(c, caption(reviewer, old / c), caption(reviewer, new / c)) for c in clips]
        verdicts = [c for c, a, b in captions if verdicts_of(a) != verdicts_of(b)]
        texts = [c for c, a, b in captions if (a["text"], a["transcript"]) != (b["text"], b["transcript"])]
        measures = [(c, a, b) for c, a, b in captions if a != b]
        print(
            f"Reviewer: verdicts (the seven aspects' ok) differ in {len(verdicts)} of {len(clips)} clips, caption "
            f"text or transcript in {len(texts)}, any measure or note in {len(measures)}"
        )
        for c, a, b in measures if args.show_differences else []:
            print(f"  {c}: " + "; ".join(differences(a, b)))

        try:
            from omnivchat.asr import AsrError, get_asr, transcribe_file

            asr = get_asr()
        except (ImportError, AsrError) as err:
            print(f"ASR: not measured ({err})")
            return
        languages = {
            json.loads(line)["id"]: json.loads(line)["language"]
            for line in (old / "instances.jsonl").read_text(encoding="utf-8").splitlines()
        }
        english = [c for c in clips if languages.get(c.parts[1]) == "en"]  # media/<id>/turnN.mp4
        heard = [(c, transcribe_file(asr, old / c, "en"), transcribe_file(asr, new / c, "en")) for c in english]
        changed = [(c, a, b) for c, a, b in heard if a != b]
        print(f"ASR ({asr.description}): {len(changed)} of {len(heard)} English clips transcribe differently")
        for c, a, b in changed if args.show_differences else []:
            print(f"  {c}: {a!r} | {b!r}")


if __name__ == "__main__":
    main()
