"""w(y) and Reply Efficiency (Section 4.2)."""

import math

import pytest

from omnivchat.scoring import reply_efficiency, word_count


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("   ", 0),
        ("Hello there", 2),
        ("I don't think it's red.", 5),  # contractions stay one unit
        ("It’s a well-known, state-of-the-art mug.", 5),  # curly apostrophe, hyphenated words
        ("rock'n'roll", 1),
        ("'quoted' -dash- end-", 3),  # edge apostrophes and hyphens do not join anything
        ("word--word", 2),  # a double hyphen is not inside one run
        ("COVID-19 and 2026", 3),
        ("3.5 kg", 3),  # the point is punctuation: two digit runs
        ("你好", 2),
        ("红色的杯子", 5),
        ("这是red cube吗？", 5),  # 这 是 red cube 吗
        ("GPT好", 2),
        ("我有3个apple", 5),  # 我 有 3 个 apple
        ("！？。，、…", 0),
        ("🎄🎅 Merry Christmas 🎁", 2),
        ("ｆｕｌｌ ｗｉｄｔｈ １２３", 3),  # NFKC: full-width letters and digits count as Latin
        ("café naïve", 2),
        ("hello\nworld\ttab", 3),
    ],
)
def test_word_count(text, expected):
    assert word_count(text) == expected


def test_reply_efficiency_is_credit_per_thousand_words():
    replies = ["one two three four", "五六七八九十"]  # 4 + 6 = 10 counted words
    assert reply_efficiency([0.5, 1.0], replies) == pytest.approx(150.0)


def test_reply_efficiency_undefined_without_words():
    assert math.isnan(reply_efficiency([0.0], ["..."]))
    with pytest.raises(ValueError, match="2 scores for 1 replies"):
        reply_efficiency([0.1, 0.2], ["a"])
