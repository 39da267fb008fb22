"""Which prompt ran, said plainly: "omnivchat default", the paper's own prompts (recognised by hash), or a user file,
in the manifest, `score`, scores.json, the export, `runs show` and the HTML report.

The paper's prompts are never committed: the tests that need them rebuild them at run time from the paper's text
beside the checkout (../shared/seeds, or $OMNIVCHAT_SEEDS), and are skipped where it is absent.
"""

from __future__ import annotations

import json
import os
import re
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnivchat.cli import app
from omnivchat.prompts import load_prompt, normalised_sha256, prompt_label
from omnivchat.socialomni import load_cards
from omnivchat.testing import Behaviour, LoopbackServer, message_text

runner = CliRunner()
SEEDS = Path(os.environ.get("OMNIVCHAT_SEEDS", Path(__file__).resolve().parents[1] / ".." / "shared" / "seeds"))


def _paper_text() -> str:
    found = sorted(SEEDS.glob("000_*.txt"))
    if not found:
        pytest.skip(f"the paper's text ({SEEDS}/000_*.txt) is not on this machine")
    return found[0].read_text(encoding="utf-8")


def _listing(body: str, numbers: list[int]) -> list[str]:
    """The lines of a listing whose text layer glued each line number to its line ("3-Speak ..."), split at the
    numbers in order (each starts the body or follows whitespace)."""
    spans = []
    pos = 0
    for number in numbers:
        found = re.compile(rf"(?:^|(?<=\s)){number}").search(body, pos)
        assert found is not None, f"listing line {number} not found"
        spans.append(found.span())
        pos = found.end()
    ends = [start for start, _ in spans[1:]] + [len(body)]
    return [body[end:stop].rstrip(" ") for (_, end), stop in zip(spans, ends, strict=True)]


def _between(text: str, before: str, after: str) -> str:
    start = text.index(before) + len(before)
    return text[start : text.index(after, start)]


def paper_prompts() -> dict[str, list[str]]:
    """The paper's policy prompt and style prompt (instructions, then checklist) from Appendix E.4, line by line,
    as printed, without their listing numbers and page lines (anchored on the paper's prose around them)."""
    text = _paper_text()
    policy = _between(text, "under matched settings. ", " 02505007501000")  # a figure's ticks follow the listing
    style = _between(text, "treating them as style failures. ", " Requirement 7 separates")
    style = re.sub(r" \d+ Under Review ", " ", style)  # the page break inside the listing
    return {
        "system": _listing(policy, list(range(1, 24))),
        "style": _listing(style, [*range(1, 24), *range(1, 42)]),
    }


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------------- the label


def test_the_paper_prompts_are_recognised_as_a_user_would_copy_them():
    prompts = paper_prompts()
    policy = "\n".join(prompts["system"])
    # The rebuilt policy prompt is the paper's "1,296-character system prompt" once its bullets read "- ".
    assert len(re.sub(r"^\u2212", "- ", policy, flags=re.M).replace("\u2212", "-")) == 1296
    style = "\n".join(prompts["style"])
    assert prompt_label(policy, "system", "paper.txt") == "paper E.4 prompt"
    assert prompt_label(style, "style", "style.txt") == "paper style prompt"
    # A copy wrapped, indented and ended otherwise, or with the listing's own line numbers, is the same prompt.
    crlf = "\r\n".join(textwrap.wrap(" ".join(prompts["system"]), 60, initial_indent="  ", subsequent_indent="\t"))
    numbered = "\n".join(f"{n} {line}" for n, line in enumerate(prompts["system"], start=1))
    assert prompt_label(crlf, "system", "a.txt") == prompt_label(numbered, "system", "b.txt") == "paper E.4 prompt"
    # One word changed, or the right text for the other role, is a user file.
    changed = policy.replace("friend", "colleague", 1)
    assert prompt_label(changed, "system", "/tmp/mine.txt").startswith("user file mine.txt (sha256 ")
    assert prompt_label(policy, "style", "/tmp/p.txt").startswith("user file p.txt")
    assert normalised_sha256(changed) != normalised_sha256(policy)


def test_defaults_user_files_and_code_are_labelled_without_the_paper(tmp_path):
    system, source = load_prompt(None)
    assert prompt_label(system, "system", source) == prompt_label(system, "system") == "omnivchat default"
    style, source = load_prompt(None, "style_judge.txt")
    assert prompt_label(style, "style", source) == "omnivchat default"
    mine, source = load_prompt(_write(tmp_path / "mine.txt", "Answer briefly.\n"))
    assert prompt_label(mine, "system", source) == f"user file mine.txt (sha256 {_sha(mine)[:12]})"
    # other text under the shipped name (a library caller's) is not the default; an empty prompt is none
    assert prompt_label("x", "system", "omnivchat:spoken_assistant.txt").startswith("text given in code (sha256 ")
    assert prompt_label(" \n", "system") == "none"


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_socialomni_cards_are_labelled(tmp_path):
    assert set(load_cards(None).labels().values()) == {"omnivchat card"}
    cards = {"who": "Pick A-D.", "when": "Should {target} speak now? A = YES, B = NO.", "how": "Say the next line."}
    path = _write(tmp_path / "official.json", json.dumps(cards))
    labels = load_cards(path).labels()
    assert labels["who"] == f"user file official.json (sha256 {_sha('Pick A-D.')[:12]})"
    assert all(label.startswith("user file official.json (sha256 ") for label in labels.values())


# --------------------------------------------------------------------------------------- a run, end to end


def _verdicts(request_json):
    if "checklist of 7" in message_text(request_json) or "7 style requirements" in message_text(request_json):
        return Behaviour(text='{"hits": [1, 2, 3, 4, 5, 6, 7], "reasoning": "fine"}')
    return Behaviour(text='{"hits": [1, 2, 3], "reasoning": "all"}')


def _run_and_report(tmp_path: Path, bench: Path, system: Path | None, style: Path | None) -> dict[str, str]:
    """eval (sim model) -> judge with a style judge -> score -> export -> runs show -> report: each one's output."""
    run = tmp_path / "run"
    extra = ["--system-prompt", str(system)] if system else []
    result = runner.invoke(app, ["eval", "--data", str(bench), "--model", "sim:healthy", "-o", str(run), *extra])
    assert result.exit_code == 0, result.output
    with LoopbackServer(rules=_verdicts) as server:
        judges = _write(
            tmp_path / "judges.json",
            json.dumps(
                {"judges": [{"name": "A", "model": "judge-a", "base_url": server.base_url}], "panels": {"p": ["A"]}}
            ),
        )
        styled = ["--style-prompt", str(style)] if style else []
        args = ["judge", str(run), "--judges", str(judges), "--panel", "p", "--style-judge", "A", "--no-progress"]
        result = runner.invoke(app, [*args, *styled])
        assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["score", str(run), "--judges", str(judges), "--panel", "p", "--style-judge", "A"])
    assert result.exit_code == 0, result.output
    score_output = result.output
    exported = tmp_path / "export.json"
    result = runner.invoke(app, ["export", str(run), "-o", str(exported)])
    assert result.exit_code == 0, result.output
    show = runner.invoke(app, ["runs", "show", str(run)])
    assert show.exit_code == 0, show.output
    html = tmp_path / "report.html"
    result = runner.invoke(app, ["report", str(run), "-o", str(html)])
    assert result.exit_code == 0, result.output
    return {
        "score": score_output,
        "scores": json.loads((run / "scores.json").read_text(encoding="utf-8"))["metrics"]["prompts"],
        "export": json.loads(exported.read_text(encoding="utf-8"))["extra"]["prompts"],
        "manifest": json.loads((run / "manifest.json").read_text(encoding="utf-8"))["prompt_labels"],
        "show": show.output,
        "html": html.read_text(encoding="utf-8"),
    }


def test_a_default_run_says_omnivchat_default_everywhere(small_bench, tmp_path):
    out = _run_and_report(tmp_path, small_bench.root, None, None)
    assert out["scores"] == {"system": "omnivchat default", "style": "omnivchat default"}
    assert out["export"] == out["manifest"] == {"system": "omnivchat default"}
    assert "system prompt: omnivchat default; style prompt: omnivchat default" in out["score"]
    assert "Prompts: system omnivchat default" in out["show"]
    assert 'system prompt: <span class="prompt">omnivchat default</span>' in out["html"]


def test_a_run_with_user_files_names_them(small_bench, tmp_path):
    system = _write(tmp_path / "my-policy.txt", "Reply in one friendly sentence.\n")
    style = _write(tmp_path / "my-style.txt", "You check a reply against a checklist of 7 requirements.\n")
    out = _run_and_report(tmp_path, small_bench.root, system, style)
    system_label = f"user file my-policy.txt (sha256 {_sha(system.read_text())[:12]})"
    style_label = f"user file my-style.txt (sha256 {_sha(style.read_text())[:12]})"
    assert out["scores"] == {"system": system_label, "style": style_label}
    assert out["export"] == out["manifest"] == {"system": system_label}
    assert f"Prompts: system {system_label}" in out["show"]
    assert system_label in out["html"] and style_label in out["html"]


def test_a_run_with_the_paper_prompts_says_so(small_bench, tmp_path):
    prompts = paper_prompts()
    system = _write(tmp_path / "e4-policy.txt", "\n".join(prompts["system"]))
    style = _write(tmp_path / "e4-style.txt", "\n".join(prompts["style"]))
    out = _run_and_report(tmp_path, small_bench.root, system, style)
    assert out["scores"] == {"system": "paper E.4 prompt", "style": "paper style prompt"}
    assert out["export"] == out["manifest"] == {"system": "paper E.4 prompt"}
    assert "system prompt: paper E.4 prompt; style prompt: paper style prompt" in out["score"]
    assert "paper E.4 prompt" in out["show"] and "paper style prompt" in out["html"]


def test_a_run_made_before_labels_resumes_and_is_labelled_from_its_source(small_bench, tmp_path):
    run = tmp_path / "run"
    args = ["eval", "--data", str(small_bench.root), "--model", "sim:healthy", "-o", str(run)]
    assert runner.invoke(app, args).exit_code == 0
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    del manifest["prompt_labels"]  # as an older omnivchat wrote it
    (run / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output  # the same run: resumed, not refused
    show = runner.invoke(app, ["runs", "show", str(run)])
    assert "Prompts: system omnivchat default" in show.output


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (None, "prompt file {path}: cannot read (No such file or directory)"),
        (b"\xff\xfe not UTF-8", "{path}:1: not UTF-8 text (byte 0); save it as UTF-8"),
        ("folder", "prompt file {path} is a directory, not a file"),
    ],
)
def test_a_prompt_file_that_cannot_be_read_is_one_line_and_nothing_is_written(small_bench, tmp_path, content, said):
    """A missing prompt file, a folder or one that is not UTF-8: one line naming it (a UnicodeDecodeError traceback
    before), exit 2, no run directory made."""
    path = tmp_path / "prompt.txt"
    if content == "folder":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    run = tmp_path / "run"
    args = ["eval", "--data", str(small_bench.root), "--model", "sim:healthy", "-o", str(run), "--no-progress"]
    result = runner.invoke(app, [*args, "--system-prompt", str(path)], env={"COLUMNS": "300"})
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert said.format(path=path) in result.output and not run.exists()
