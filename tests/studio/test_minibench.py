"""The procedural mini-bench: coverage, rubrics the rule judge can decide, clips that say the questions, determinism,
and the `omnivchat bench make` command."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from omnivchat.bench import INSTANCES_FILE, SUBCATEGORIES, Bench, Instance, load_bench
from omnivchat.judges import rule_verdict
from omnivchat.routes._sim import GENERIC_REPLIES
from omnivchat.scoring import rubric_score
from omnivchat.studio import STAGED, MiniBenchError, make_minibench, plan

AUDIO_ONLY = {"ICC", "MDCC", "UPC", "STIC", "MTIC", "PLA"}


@pytest.fixture(scope="module")
def minibench(tmp_path_factory: pytest.TempPathFactory) -> Bench:
    """One instance per subcategory, languages alternating across subcategories (rendered once per module)."""
    return make_minibench(tmp_path_factory.mktemp("minibench") / "bench", per_subcategory=1, languages=("en", "zh"))


def _score(instance: Instance, reply: str) -> float:
    hits, reason = rule_verdict(instance, reply)
    assert hits is not None, f"{instance.id}: {reason}"
    return rubric_score(instance.tiers, hits)


def _letters(text: str) -> str:
    """Latin letters and Han characters only, lower-cased: how espeak's words and a written line can be compared."""
    return "".join(re.findall(r"[a-z\u4e00-\u9fff]", text.lower()))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _drafts_as_instances(seed: int, per_subcategory: int) -> list[Instance]:
    """Instances straight from the plan, without rendering (the rule judge never opens a clip)."""
    out = []
    for id_, code, lang, draft in plan(per_subcategory=per_subcategory, seed=seed):
        turns = [
            {"video": f"media/{id_}/turn{n}.mp4", **({"reply": reply} if reply else {})}
            for n, (_, reply) in enumerate(draft.turns, start=1)
        ]
        out.append(
            Instance(
                id=id_,
                subcategory=code,
                language=lang,
                turns=turns,
                reference=draft.reference,
                rubric=draft.rubric,
                requires=draft.requires,
            )
        )
    return out


# ------------------------------------------------------------------------------------------- the rendered bench


def test_bench_loads_and_covers_every_subcategory(minibench: Bench) -> None:
    assert set(STAGED) == set(SUBCATEGORIES)  # all 17 can be staged offline
    reloaded = load_bench(minibench.root)
    assert [i.id for i in reloaded.instances] == [i.id for i in minibench.instances]
    assert sorted(i.subcategory for i in minibench.instances) == sorted(STAGED)
    assert reloaded.info.subcategories == {code: 1 for code in STAGED}
    assert set(reloaded.info.languages or {}) == {"en", "zh"}
    for instance in minibench.instances:
        kind = SUBCATEGORIES[instance.subcategory].kind
        assert len(instance.turns) == (1 if kind == "single" else 2)
        for turn in instance.turns:
            assert minibench.media_path(turn).is_file()


def test_every_criterion_has_a_check_and_a_language_gate(minibench: Bench) -> None:
    for instance in minibench.instances:
        assert all(c.check is not None for c in instance.rubric), instance.id
        gates = [c for c in instance.rubric if c.tier == 0]
        assert len(gates) == 1 and gates[0].check is not None and gates[0].check.language == instance.language
        assert 1 in instance.tiers, f"{instance.id}: no core (tier 1) criterion"


def test_reference_scores_full_marks_and_generic_reply_nothing(minibench: Bench) -> None:
    generic = [_score(i, GENERIC_REPLIES[i.language]) for i in minibench.instances]
    for instance in minibench.instances:
        assert _score(instance, instance.reference) == 1.0, instance.id
    assert all(score < 0.5 for score in generic)
    assert sum(score == 0.0 for score in generic) >= 0.9 * len(generic)


def test_requires_is_set_truthfully(minibench: Bench) -> None:
    for instance in minibench.instances:
        expected = ["audio"] if instance.subcategory in AUDIO_ONLY else ["video", "audio"]
        assert instance.requires == expected, instance.id


def test_questions_are_spoken_in_the_clips(minibench: Bench) -> None:
    for instance in minibench.instances:
        assert len(instance.meta["turns"]) == len(instance.turns)
        for turn, turn_meta in zip(instance.turns, instance.meta["turns"], strict=True):
            clip = minibench.media_path(turn)
            timeline = json.loads(clip.with_name(f"{clip.stem}.timeline.json").read_text(encoding="utf-8"))
            assert timeline["transcript"] == turn_meta["transcript"]
            user_words = "".join(w["text"] for w in timeline["words"] if w["speaker"] == "user")
            assert _letters(user_words) == _letters(turn_meta["question"]), instance.id
            assert all(line["language"] == instance.language for line in timeline["lines"])
        assert instance.meta["transcript"] == " / ".join(t["transcript"] for t in instance.meta["turns"])


def test_staging_matches_the_rendered_scene(minibench: Bench) -> None:
    for instance in minibench.instances:
        staging = instance.meta["staging"]
        assert "answer" in staging and "camera" in staging
        final = minibench.media_path(instance.turns[-1])
        timeline = json.loads(final.with_name(f"{final.stem}.timeline.json").read_text(encoding="utf-8"))
        if instance.subcategory in ("SVMR", "MVMS"):
            target = next(o for o in timeline["objects"] if o["name"] == staging["target"])
            side = staging.get("user_side") or staging["user_sides"][-1]
            assert target["user_side"] == side
            mirrored = timeline["camera"] == "front"
            assert (target["image_side"] != side) == mirrored
        if instance.subcategory == "SPSD":
            assert {line["speaker"] for line in timeline["lines"]} == {"user", "other"}
            user, other = timeline["lines"]
            assert user["start"] < other["start"] < user["end"]  # the second voice talks over the first
        if instance.subcategory == "ER":
            assert timeline["person"]["expression"] == "upset"
            assert {line["style"] for line in timeline["lines"]} == {"upset"}


# ------------------------------------------------------------------------------------------- many seeds, no rendering


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**31))
def test_rubrics_decide_reference_and_generic_for_any_seed(seed: int) -> None:
    instances = _drafts_as_instances(seed, per_subcategory=2)
    assert {i.language for i in instances if i.subcategory == "SVMR"} == {"en", "zh"}
    for instance in instances:
        assert _score(instance, instance.reference) == 1.0, (instance.id, instance.reference)
        assert _score(instance, GENERIC_REPLIES[instance.language]) == 0.0, instance.id


def test_plan_is_seeded_and_stable() -> None:
    first = [(i, d.reference, d.turns) for i, _, _, d in plan(per_subcategory=2, seed=3)]
    again = [(i, d.reference, d.turns) for i, _, _, d in plan(per_subcategory=2, seed=3)]
    other = [(i, d.reference, d.turns) for i, _, _, d in plan(per_subcategory=2, seed=4)]
    assert first == again and first != other
    # asking for more instances never changes the first ones
    more = {i: (d.reference, d.turns) for i, _, _, d in plan(per_subcategory=3, seed=3)}
    assert all(more[i] == (ref, turns) for i, ref, turns in first)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="per_subcategory"):
        plan(per_subcategory=0)
    with pytest.raises(ValueError, match="languages"):
        plan(languages=("fr",))


# ------------------------------------------------------------------------------------------- determinism, output dir


def test_same_seed_gives_identical_bench_and_clips(
    minibench: Bench, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMNIVCHAT_CACHE_DIR", str(tmp_path / "fresh-cache"))  # render again, not from the cache
    again = make_minibench(tmp_path / "again", per_subcategory=1, languages=("en", "zh"), workers=1)
    assert (again.root / INSTANCES_FILE).read_bytes() == (minibench.root / INSTANCES_FILE).read_bytes()
    for first, second in zip(minibench.instances, again.instances, strict=True):
        for a, b in zip(first.turns, second.turns, strict=True):
            assert _sha(minibench.media_path(a)) == _sha(again.media_path(b)), a.video


def test_output_directory_rules(minibench: Bench, tmp_path: Path) -> None:
    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "todo.txt").write_text("keep me\n", encoding="utf-8")
    with pytest.raises(MiniBenchError, match="not a bench directory"):
        make_minibench(foreign, per_subcategory=1, force=True)
    assert (foreign / "todo.txt").read_text(encoding="utf-8") == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes"]  # no staging directory left behind
    with pytest.raises(MiniBenchError, match="already holds a bench"):
        make_minibench(minibench.root, per_subcategory=1)


# ------------------------------------------------------------------------------------------- CLI


def test_cli_bench_make(tmp_path: Path) -> None:
    from omnivchat.cli import app

    runner = CliRunner()
    out = tmp_path / "mini"
    args = ["bench", "make", "--output", str(out), "--per-subcategory", "1", "--languages", "en"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert f"wrote {out}" in result.output and "17 instances" in result.output and "SVMR 1" in result.output
    assert {i.language for i in load_bench(out).instances} == {"en"}

    refused = runner.invoke(app, args)
    assert refused.exit_code == 2 and "--force" in refused.output
    replaced = runner.invoke(app, [*args, "--force"])
    assert replaced.exit_code == 0, replaced.output

    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "data.csv").write_text("a,b\n", encoding="utf-8")
    result = runner.invoke(app, ["bench", "make", "--output", str(foreign), "--force"])
    assert result.exit_code == 2 and "not a bench directory" in result.output
    assert [p.name for p in foreign.iterdir()] == ["data.csv"]

    # a bench the tool made, with the user's notes and a paid run put in it since: --force must not wipe them
    (out / "notes.md").write_text("my notes\n", encoding="utf-8")
    (out / "runs" / "qwen").mkdir(parents=True)
    (out / "runs" / "qwen" / "store.sqlite").write_bytes(b"paid for")
    kept = runner.invoke(app, [*args, "--force"], terminal_width=300)
    assert kept.exit_code == 2 and "notes.md" in kept.output and "runs/qwen/store.sqlite" in kept.output
    assert (out / "notes.md").read_text() == "my notes\n" and (out / "runs" / "qwen" / "store.sqlite").is_file()
    (out / "notes.md").unlink()
    shutil.rmtree(out / "runs")
    # an edited file of the bench is the user's too
    with (out / "instances.jsonl").open("a", encoding="utf-8") as handle:
        handle.write("\n")
    edited = runner.invoke(app, [*args, "--force"], terminal_width=300)
    assert edited.exit_code == 2 and "instances.jsonl" in edited.output
    # a bench another tool made (no record of ours) is refused as well
    (out / ".omnivchat-made.json").unlink()
    assert runner.invoke(app, [*args, "--force"]).exit_code == 2

    assert "--per-subcategory" in runner.invoke(app, ["bench", "make", "--help"]).output
