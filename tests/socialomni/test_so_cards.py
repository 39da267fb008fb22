"""Prompt cards: omnivchat's defaults, official cards from a file, their hashes, and the request texts."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from omnivchat.socialomni._cards import PromptCards, default_cards, how_text, load_cards, when_text, who_text
from omnivchat.socialomni._data import SocialOmniError, WhenItem, WhoItem

WHO = WhoItem(
    id="7",
    video=Path("video_7.mp4"),
    question="What happened in the video from 0:06 to 0:12?",
    options=["A. one", "B. two", "C.three", "D. four"],
    gold="C",
    cutoff=12.0,
)
WHEN = WhenItem(
    id="video_0042",
    video=Path("video_0042.mp4"),
    question="Should the tall man start speaking now?",
    timestamp=17.0,
    gold="YES",
    participant="the tall man",
    how_question="What should the tall man say?",
    reference="REFERENCE-TEXT-NEVER-SENT",
)


def test_default_cards() -> None:
    cards = load_cards(None)
    assert cards == default_cards()
    assert "{target}" in cards.when
    for text in (cards.who, cards.when, cards.how):
        assert text == text.rstrip("\n") and text.strip()
    assert "letter only" in cards.who and "letter only" in cards.when
    assert "A. YES" in cards.when and "B. NO" in cards.when
    assert "next utterance" in cards.how


def test_hashes_are_sha256_of_each_card() -> None:
    cards = load_cards(None)
    assert cards.hashes() == {
        task: hashlib.sha256(getattr(cards, task).encode("utf-8")).hexdigest() for task in ("who", "when", "how")
    }


def test_request_texts_exactly() -> None:
    cards = PromptCards(who="WHO CARD", when="Should {target} speak? A = YES, B = NO.", how="HOW CARD")
    assert who_text(cards, WHO) == (
        "WHO CARD\nWhat happened in the video from 0:06 to 0:12?\nA. one\nB. two\nC.three\nD. four"
    )
    assert when_text(cards, WHEN) == "Should the tall man speak? A = YES, B = NO."
    assert how_text(cards, WHEN) == "HOW CARD\nTarget participant: the tall man"


def test_request_texts_never_carry_the_reference() -> None:
    cards = load_cards(None)
    for text in (who_text(cards, WHO), when_text(cards, WHEN), how_text(cards, WHEN)):
        assert "REFERENCE-TEXT-NEVER-SENT" not in text
    assert when_text(cards, WHEN) == cards.when.format(target="the tall man")
    assert how_text(cards, WHEN).endswith("\nTarget participant: the tall man")


def test_official_cards_from_a_file(tmp_path: Path) -> None:
    official = {"who": "Official who.\n", "when": "Official {target} when; keep {{braces}}.", "how": "Official how."}
    path = tmp_path / "cards.json"
    path.write_text(json.dumps(official), encoding="utf-8")
    cards = load_cards(path)
    assert cards.who == "Official who.\n"  # used byte for byte
    assert when_text(cards, WHEN) == "Official the tall man when; keep {braces}."
    assert cards.hashes()["how"] == hashlib.sha256(b"Official how.").hexdigest()
    assert cards.hashes() != load_cards(None).hashes()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ({"who": "w", "when": "{target}"}, "exactly the keys"),
        ({"who": "w", "when": "{target}", "how": "h", "system": "s"}, "exactly the keys"),
        (["w", "{target}", "h"], "exactly the keys"),
        ({"who": "w", "when": "no placeholder", "how": "h"}, "target"),
        ({"who": "w", "when": "{target} and {other}", "how": "h"}, "other"),
        ({"who": "w", "when": "{target} and {}", "how": "h"}, "target"),
        ({"who": "w", "when": "{target", "how": "h"}, "format"),
        ({"who": " ", "when": "{target}", "how": "h"}, "empty"),
        ({"who": "w", "when": "{target}", "how": 3}, "how"),
    ],
)
def test_invalid_card_files(tmp_path: Path, content: object, message: str) -> None:
    path = tmp_path / "cards.json"
    path.write_text(json.dumps(content), encoding="utf-8")
    with pytest.raises(SocialOmniError, match=message) as info:
        load_cards(path)
    assert str(path) in str(info.value)


def test_unreadable_card_files(tmp_path: Path) -> None:
    with pytest.raises(SocialOmniError, match="cannot read"):
        load_cards(tmp_path / "absent.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{", encoding="utf-8")
    with pytest.raises(SocialOmniError, match="not UTF-8 JSON"):
        load_cards(bad)
