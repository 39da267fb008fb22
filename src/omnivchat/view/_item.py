"""One item of a run in full: each turn's clip as it was sent, what was asked, the reference, the reply (and a
spoken reply's audio with its transcripts), each judge's verdict per rubric criterion and the panel's, the Eq. 1
score with the tier that gated it, the style checklist, a multiple-choice item's parsed letters and gold, and every
attempt with its cost. Only files a run names are ever located here; the server serves nothing else."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from omnivchat.bench import Bench, Instance
from omnivchat.errors import OmnivchatError
from omnivchat.judges import RULE_JUDGE, STYLE_REQUIREMENTS, parse_verdict, rule_verdict
from omnivchat.runs import STORE_FILE, RunStore
from omnivchat.scoring import rubric_score
from omnivchat.view._data import RunView, asked

RUBRIC_PREFIX = "rubric:"
STYLE_PREFIX = "style:"


@dataclass(frozen=True)
class Clip:
    """A clip the page may play: its file, how it relates to what was sent, and its place in the item."""

    turn: int
    path: Path
    label: str
    note: str


def gating_tier(tiers: list[int], hits: list[int]) -> int | None:
    """The first tier not fully met (Eq. 1: it keeps its own points and blocks every later tier); None when
    every tier is met."""
    met = set(hits)
    for tier in sorted(set(tiers)):
        if not all(n in met for n, t in enumerate(tiers, start=1) if t == tier):
            return tier
    return None


def _majority(verdicts: list[list[int]], n: int) -> list[int]:
    return [c for c in range(1, n + 1) if 2 * sum(c in v for v in verdicts) > len(verdicts)]


class ItemReader:
    """Reads items of one run; holds the run's bench (native runs) and its clip index, loaded once."""

    def __init__(self, run: RunView) -> None:
        self.run = run
        self._lock = threading.Lock()
        self._bench: Bench | None = None
        self._bench_error: str | None = None
        self._bench_read = False
        self._prefixes: dict[str, Path] | None = None

    # -- what the run was made from ------------------------------------------------------------------------

    def bench(self) -> tuple[Bench | None, str | None]:
        """The native run's bench (as recorded at its last invocation), or why it cannot be read."""
        with self._lock:
            if not self._bench_read:
                self._bench_read = True
                if self.run.info.get("benchmark") == "omnivchat":
                    from omnivchat.benchmarks.native import run_bench

                    try:
                        self._bench = run_bench(self.run.root, None)
                    except (OmnivchatError, OSError, ValueError, KeyError) as err:
                        self._bench_error = f"the run's bench cannot be read: {err}"
            return self._bench, self._bench_error

    def _prefix_index(self) -> dict[str, Path]:
        """SocialOmni's cut prefixes in RUN/prefixes/, by the sha256 their sidecars record."""
        if self._prefixes is None:
            index: dict[str, Path] = {}
            folder = self.run.root / "prefixes"
            if folder.is_dir():
                for sidecar in folder.glob("*.json"):
                    try:
                        sha = json.loads(sidecar.read_text(encoding="utf-8")).get("output_sha256")
                    except (OSError, ValueError, AttributeError):
                        continue
                    clip = sidecar.with_suffix(".mp4")
                    if isinstance(sha, str) and clip.is_file():
                        index[sha] = clip
            self._prefixes = index
        return self._prefixes

    def clips(self, task: str, item_id: str) -> list[Clip]:
        """Each turn's clip as the page may play it (in turn order)."""
        found = self.run.record(task, item_id)
        if found is None:
            return []
        _, record = found
        description = self.run.description(task, item_id) or {}
        sent = asked(description)[1] or record.meta.get("media_sha256") or record.meta.get("clip_sha256")
        bench, _ = self.bench()
        if bench is not None:
            instance = next((i for i in bench.instances if i.id == item_id), None)
            return [] if instance is None else self._native_clips(bench, instance, sent)
        if isinstance(sent, str) and sent in self._prefix_index():
            return [Clip(1, self._prefix_index()[sent], "prefix", "the trimmed prefix sent (sha256 matches)")]
        return self._release_clips(item_id, sent)

    def _native_clips(self, bench: Bench, instance: Instance, sent: object) -> list[Clip]:
        condition = str(self.run.info.get("condition") or "both")
        clips = []
        for number, turn in enumerate(instance.turns, start=1):
            path = bench.media_path(turn)
            note = "the bench's clip, sent as it is" if condition == "both" else ""
            if condition != "both":
                derived = _derived(path, condition)
                if derived is None:
                    clips.append(Clip(number, path, turn.video, f"{condition}: no media was sent; the bench's clip"))
                    continue
                path, note = derived, f"the {condition} clip derived from {turn.video}"
            if number == len(instance.turns) and isinstance(sent, str):
                from omnivchat.media import content_hash

                try:
                    same = content_hash(path) == sent
                except OmnivchatError:
                    same = False
                note += " (sha256 matches the request)" if same else " (sha256 differs from the request's)"
            clips.append(Clip(number, path, turn.video, note))
        return clips

    def _release_clips(self, item_id: str, sent: object) -> list[Clip]:
        """A release's media files for the item (the manifest's media_root and media_sha256)."""
        from omnivchat.benchmarks import read_run_manifest

        manifest = read_run_manifest(self.run.root)
        root = manifest.value("media_root")
        hashes = (manifest.value("media_sha256") or {}).get(item_id)
        if isinstance(hashes, str):  # byo: one clip per item, named in the run's data file
            return self._data_file_clip(manifest.value("data"), item_id, hashes, sent)
        if not isinstance(root, str) or not isinstance(hashes, dict):
            return []
        base = Path(root).resolve()
        clips = []
        for number, (relative, sha) in enumerate(sorted(hashes.items()), start=1):
            target = (base / str(relative)).resolve()
            if not target.is_relative_to(base) or not target.is_file():
                continue
            note = "sent as it is (sha256 matches)" if sha == sent else "a source file of the composed clip sent"
            clips.append(Clip(number, target, str(relative), note))
        return clips

    def _data_file_clip(self, data: object, item_id: str, sha: str, sent: object) -> list[Clip]:
        """A byo item's clip: its ``video`` in the run's data file, inside that file's folder, whose sha256 is
        the one the manifest recorded (a clip changed since is not shown as the one sent)."""
        from omnivchat.media import content_hash

        if not isinstance(data, str):
            return []
        try:
            rows = json.loads(Path(data).read_text(encoding="utf-8"))
            video = next(r.get("video") for r in rows if isinstance(r, dict) and r.get("qid") == item_id)
        except (OSError, ValueError, StopIteration, TypeError, AttributeError):
            return []
        base = Path(data).parent.resolve()
        target = (base / str(video)).resolve()
        if not isinstance(video, str) or not target.is_relative_to(base) or not target.is_file():
            return []
        try:
            same = content_hash(target) == sha
        except OmnivchatError:
            return []
        if not same:
            return []
        note = "sent as it is (sha256 matches)" if sha == sent else "the item's clip (sha256 as the run recorded)"
        return [Clip(1, target, video, note)]

    def audio(self, task: str, item_id: str) -> Path | None:
        """The spoken reply's audio file, inside RUN/audio/, or None."""
        found = self.run.record(task, item_id)
        if found is None or not found[1].request_sha256:
            return None
        with RunStore(self.run.root / STORE_FILE, read_only=True) as store:
            stored = store.audio(found[1].request_sha256)
        if stored is None:
            return None
        folder = (self.run.root / "audio").resolve()
        target = (self.run.root / str(stored["path"])).resolve()
        return target if target.is_relative_to(folder) and target.is_file() else None

    # -- the detail ----------------------------------------------------------------------------------------

    def detail(self, task: str, item_id: str, run_index: int) -> dict[str, Any] | None:
        found = self.run.record(task, item_id)
        if found is None:
            return None
        row, record = found
        result = self.run.result(task, item_id)
        description = self.run.description(task, item_id) or {}
        base, named = f"api/runs/{run_index}", urlencode({"task": task, "id": item_id})
        clips = [
            {"turn": c.turn, "url": f"{base}/clip?{named}&turn={c.turn}", "label": c.label, "note": c.note}
            for c in self.clips(task, item_id)
        ]
        detail: dict[str, Any] = {
            "run": run_index,
            "row": row.public(),
            "reply": record.reply,
            "reasoning": record.reasoning or None,
            "finish_reason": record.finish_reason,
            "redacted": record.redacted,
            "error": record.error,
            "delivered": record.delivered,
            "request_sha256": record.request_sha256,
            "question": asked(description)[0],
            "meta": record.meta,
            "score": None if result is None else {"score": result.score, "reason": result.reason},
            "score_detail": None if result is None else result.detail,
            "clips": clips,
            "choice": _choice(record.meta, result.detail if result else {}),
            "native": None,
            "spoken": None,
            "attempts": [],
        }
        with RunStore(self.run.root / STORE_FILE, read_only=True) as store:
            detail["attempts"] = _attempts(store, task, item_id, record.request_sha256)
            if record.request_sha256:
                detail["spoken"] = _spoken(store, record.request_sha256, f"{base}/audio?{named}", row.language)
            bench, why = self.bench()
            if self.run.info.get("benchmark") == "omnivchat":
                instance = None if bench is None else next((i for i in bench.instances if i.id == item_id), None)
                detail["native"] = (
                    {"error": why or "the item is not in the run's bench"}
                    if instance is None
                    else self._native(store, instance, record.reply)
                )
        return detail

    def _native(self, store: RunStore, instance: Instance, reply: str | None) -> dict[str, Any]:
        """The bench's side of a native item and every judge's verdicts on its reply."""
        scores = self.run.scores
        metrics = scores.metrics if scores else {}
        panel = [str(j) for j in metrics.get("panel", [])]
        aggregate = str(metrics.get("aggregate", "mean"))
        style_judge = metrics.get("style_judge")
        tiers = [c.tier for c in instance.rubric]
        kinds = store.item_counts()
        judges = sorted(k[len(RUBRIC_PREFIX) :] for k in kinds if k.startswith(RUBRIC_PREFIX))
        if RULE_JUDGE in panel:
            judges.append(RULE_JUDGE)
        verdicts: dict[str, dict[str, Any]] = {}
        for judge in judges:
            hits, why = self._verdict(store, instance, judge, reply)
            verdicts[judge] = {
                "hits": hits,
                "why": why,
                "score": None if hits is None else rubric_score(tiers, hits),
                "gated_at": None if hits is None else gating_tier(tiers, hits),
                "in_panel": judge in panel,
            }
        panel_hits: list[int] | None = None
        given = [verdicts[j]["hits"] for j in panel if j in verdicts]
        if panel and len(given) == len(panel) and all(h is not None for h in given):
            if aggregate == "majority":
                panel_hits = _majority(given, len(tiers))
            else:  # a criterion is shown met by the panel when every judge found it met
                panel_hits = [c for c in range(1, len(tiers) + 1) if all(c in h for h in given)]
        style = None
        if isinstance(style_judge, str):
            row = store.item(instance.id, f"{STYLE_PREFIX}{style_judge}")
            text = store.result(row["key"]) if row and row["status"] == "done" and row["key"] else None
            checked = None if text is None else parse_verdict(text.text, STYLE_REQUIREMENTS)
            style = {"judge": style_judge, "met": checked, "of": STYLE_REQUIREMENTS}
        given_turns = instance.meta.get("turns")
        meta_turns: list[Any] = given_turns if isinstance(given_turns, list) else []
        turns = []
        for number, turn in enumerate(instance.turns, start=1):
            info = meta_turns[number - 1] if number <= len(meta_turns) else {}
            info = info if isinstance(info, dict) else {}
            turns.append(
                {
                    "turn": number,
                    "video": turn.video,
                    "question": info.get("question") if isinstance(info.get("question"), str) else None,
                    "transcript": info.get("transcript") if isinstance(info.get("transcript"), str) else None,
                    "text": turn.text,
                    "reference": turn.reply,
                }
            )
        return {
            "subcategory": instance.subcategory,
            "reference": instance.reference,
            "turns": turns,
            "criteria": [{"number": n, "tier": c.tier, "text": c.text} for n, c in enumerate(instance.rubric, 1)],
            "judges": verdicts,
            "panel": panel,
            "aggregate": aggregate,
            "panel_hits": panel_hits,
            "panel_gated_at": None if panel_hits is None else gating_tier(tiers, panel_hits),
            "style": style,
        }

    def _verdict(
        self, store: RunStore, instance: Instance, judge: str, reply: str | None
    ) -> tuple[list[int] | None, str]:
        if reply is None:
            return None, "no reply to judge"
        if judge == RULE_JUDGE:
            return rule_verdict(instance, reply)
        row = store.item(instance.id, f"{RUBRIC_PREFIX}{judge}")
        if row is None:
            return None, "not judged"
        if row["status"] != "done":
            return None, f"{row['error_kind']}: {row['error']}"
        result = store.result(row["key"]) if row["key"] else None
        hits = None if result is None else parse_verdict(result.text, len(instance.rubric))
        return hits, "ok" if hits is not None else "unparseable verdict"


def _derived(path: Path, condition: str) -> Path | None:
    """The clip an ablation condition sent for ``path`` (the media cache's derived file, made when missing);
    ``condition`` as the manifest records it (``video_only:mute``, ``neither:blank``...)."""
    from omnivchat.diagnostics.grid import condition_transform

    name, _, mode = condition.partition(":")
    try:
        if name == "video_only" and mode == "strip":
            transform = condition_transform(name, video_only="strip")
        elif name == "neither" and mode == "none":
            transform = condition_transform(name, neither="none")
        else:  # the default modes: video_only:mute, neither:blank
            transform = condition_transform(name)
    except ValueError:
        return path  # a condition this viewer does not know: the bench's clip, said so by the note
    return path if transform is None else transform(path)


def _choice(meta: dict[str, Any], detail: dict[str, Any]) -> dict[str, Any] | None:
    """A multiple-choice item's options, gold and parsed letters (strict is the headline)."""
    gold = detail.get("gold", meta.get("gold"))
    if gold is None:
        return None
    return {
        "gold": gold,
        "options": meta.get("options"),
        "letters": meta.get("letters"),
        "strict": detail.get("strict"),
        "lenient": detail.get("lenient"),
        "unparsed": detail.get("unparsed"),
    }


def _attempts(store: RunStore, task: str, item_id: str, key: str | None) -> list[dict[str, Any]]:
    if not key:
        return []
    costs = store.cost_rows(key)  # in attempt order, as attempts(key) below
    attempts = store.attempts(key)
    out = []
    for n, attempt in enumerate(attempts):
        cost = costs[n] if n < len(costs) else {}
        usage = attempt["usage"]
        out.append(
            {
                "number": n + 1,
                "status": attempt["status"],
                "http_status": attempt["http_status"],
                "error_kind": attempt["error_kind"],
                "error": attempt["error"],
                "replica": attempt["replica"],
                "latency_s": attempt["latency"],
                "tokens": json.loads(usage) if isinstance(usage, str) and usage else None,
                "finish_reason": attempt["finish_reason"],
                "cost_usd": cost.get("usd"),
                "cost_note": cost.get("note"),
            }
        )
    return out


def _spoken(store: RunStore, key: str, url: str, language: str) -> dict[str, Any] | None:
    stored = store.audio(key)
    if stored is None:
        return None
    transcripts = []
    for asr_id in store.asrs():
        found = store.transcript(str(stored["sha256"]), asr_id, language)
        if found is not None:
            transcripts.append({"asr": asr_id, **found})
    return {
        "url": url,
        "format": stored["format"],
        "bytes": stored["bytes"],
        "server_transcript": stored["server_transcript"],
        "transcripts": transcripts,
    }
