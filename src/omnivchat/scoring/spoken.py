"""Spoken-answer matching: normalisation, negation-aware token matching, numbers, reply language, ASR error band.

Source: the omni evaluation harness note "Omni Evaluation: Does It Use Both Streams?", section 3, "Scoring
Speech Is Its Own Problem". Languages: English and Chinese.

A spoken answer is scored from a transcript, and exact match breaks both ways: under-normalise and "Twenty-three."
scores wrong against "23"; over-normalise and "not Paris" scores right against "Paris" because "paris" is a
substring of "not paris". So this module (1) normalises number words, fillers and contractions, (2) checks negation
*before* any containment test, and (3) matches whole tokens, never characters ("7" is not in "17").

Public API:

- ``normalize(text) -> str`` and ``tokenize(text) -> list[str]``: the normalised form and its tokens.
- ``answer_matches(response, reference) -> bool``: the reference answer is stated in the response.
- ``contains_phrase`` / ``contains_any`` / ``contains_number`` / ``numbers_in`` / ``detect_language``: pure helpers
  for the offline rule judge (any-of, all-of, none-of, required numbers, required language).
- ``score_spoken(transcripts, references, asr_wer)``: accuracy, with the ASR error band reported beside it.

Normalisation, in order (``normalize`` returns the tokens joined by spaces, CJK characters written together):

1. NFKC, casefold; curly apostrophes to ``'``; "−" to "-".
2. Cut-off fragments are dropped ("Par- Paris" -> "Paris").
3. Lexing: words (letters with inner apostrophes), digit numbers ("1,000" -> 1000, "2.50" -> 2.5, "-5"), "1st"-style
   ordinals, a number glued to "s" as one word ("1990s", "the 90's": a decade or a plural, never 1990 or 90),
   single CJK characters (Chinese has no spaces, so each character is a token), "%" -> "percent",
   currency signs ``$ € £ ¥ ¢`` (step 9). Punctuation becomes clause boundaries (``, ; : — …`` soft,
   ``. ! ? 。`` hard) and is then dropped; any other symbol is a space. Hyphens between letters split words
   ("twenty-three" -> "twenty three").
4. Contractions expand ("isn't" -> "is not", "can't"/"cannot" -> "can not", "it's" -> "it is", "I'm" -> "i am");
   other "'s" (possessive) is dropped ("John's" -> "john"). A few spellings fold: yeah/yep/yup -> yes, nope/nah ->
   no, okay -> ok, grey -> gray, colour -> color, centre -> center, dunno -> "do not know".
5. Fillers go: always "uh", "um", "er", "erm", "ah", "hmm", "mm", "eh", "oh", "huh" (and lengthened forms; not
   the "oh" of a year, "nineteen oh five"),
   "i think", "i guess", "i believe", "i suppose", "i mean", "i would say", "let me see/think", "let us see",
   嗯 呃 唔 哦 噢 啊 哎 诶 欸, 我觉得, 我认为, 我猜. Some words are fillers only in context, so they go only there:
   "well", "so", "actually", "basically", "anyway" at the start of a clause when a boundary or a pronoun follows
   ("Well, it's red", "So it's red"; not "well done"); "like" before a comma ("it's, like, red"; not "looks like
   a cat"); "you know" / "you see" at a clause start or end; 那个 这个 就是 然后 额 before a comma.
6. Numbers become digits: English words up to trillions ("twenty-three" -> 23, "a hundred and five" -> 105,
   "two point five" -> 2.5, "three and a half" -> 3.5, "minus five" -> -5, "3 million" -> 3000000), years said in
   two pairs with a first half 13..20 ("nineteen eighty-four" -> 1984, "twenty twenty-four" -> 2024, "nineteen oh
   five" -> 1905; "two thousand and five" -> 2005 is an ordinary number), ordinals ("twenty-third", "23rd", 第二十三
   -> 23rd; an ordinal is not its cardinal, "the third one" is not 3, except as a day of a month, step 8), Chinese
   numerals (二十三 -> 23, 两个 -> "2 个", 一百零五 -> 105, 一百五 -> 150, 3万 -> 30000, 三点一四 -> 3.14,
   二零二五 -> 2025, 百分之五十 -> "50 percent"). Words where a numeral is not a number stay (一样, 一起, 一点
   "a little", 十分, 万一).
7. Articles "the", "a", "an" are dropped.
8. A day of a month is written month first with a cardinal day: "May 23rd", "May the twenty-third", "the 23rd of
   May" -> "may 23"; "23 June" -> "june 23"; "Aug 5th" -> "august 5". May and March are also words ("five may be
   right", "we march 3 miles"), so a day before them needs an ordinal and "of" or an end after the month.
9. Money is a number then one unit word (dollars, euros, pounds, yuan, yen, cents), the sign before or after the
   number or the word after it: "$5", "5$", "five bucks", "5 US dollars", 五美元 -> "5 dollars"; "€5" -> "5 euros";
   "£5" -> "5 pounds"; "¥5", 五元, 五块钱 -> "5 yuan" (¥ is read as yuan; say "yen" for yen); "five dollars and
   fifty cents", "$5.50" -> "5.5 dollars"; 五块五, 五元五角 -> "5.5 yuan". A sign with no number goes. A bare 块
   after a number is also the measure word for pieces (三块蛋糕) and stays as said; matching lets it equal "yuan".

Negation (checked before containment): a negation cue opens a scope that runs to the end of its clause (next
punctuation) or to a contrast word. Tokens inside a scope do not count for a match; the cue tokens themselves do,
so a phrase that starts with its own negation ("no green bottle", "can't move", 无法听) still matches.

- English cues: not (and every "n't"), no, never, neither, nor, none, nothing, nobody, nowhere, without,
  "instead of", "rather than". Not cues: "not only/just/merely", "no doubt/wonder/problem/matter", "never mind",
  "without doubt", and "no" right before a pronoun ("no it's red": an interjection).
- Chinese cues: 不 没 没有 不是 并非 并不 并不是 绝不 从不 从没 非 未 无 毫无 别 莫 甭 勿. Not cues: 不错 不仅
  不但 不少 不断 不久 不同 不管 不论 不好意思 不客气 不得不 差不多 没关系 没问题 非常 无论 无疑 未来 别人 别的
  可不是, and A-not-A questions (是不是, 有没有, 能不能).
- Contrast words end a scope: but, however, though, although, instead, whereas, rather; 但 但是 可是 而是 不过
  然而 却 而. So "not Paris but London" states London and not Paris; "it's red, not blue" states red, not blue.
- A negated copula ends its scope at the next copula: "it isn't blue it's red", 不是蓝色是红色 and 没有蓝色有红色
  all state red.
- "not"/"never" left dangling before a comma carries into the next clause ("not, uh, Paris").
- No comma is needed: ASR text "no paris", "not paris", "its not paris" state no Paris. "No, Paris." (a pause after
  "no") still states Paris, and a plain "No." is the answer "no" (a cue token itself counts for a match).
- A rejecting predicate negates its subject, back to the previous copula, "and", "or", "but", "that": "Paris is
  wrong", "Paris isn't the answer", "Paris would be wrong", "It's London and Paris is wrong" (London is stated), 红色
  不对, 红色是错的. "Paris isn't wrong", 红色不错, 红色对不对 and 红色没错 reject nothing. Predicates: wrong,
  incorrect, false, mistaken, untrue, "not right/correct/true/it/the answer/the case"; 不对 不正确 是错 错了.

Retraction (``answer_matches`` only): a candidate named in order to reject it, across clauses and sentences, is no
answer. ``contains_phrase`` still sees it, since it was said ("Is the left door open? No, it's closed" mentions the
left door).

- A question answered no: "Is it Paris? No, it's London.", "Paris? No.", "Definitely not", "Nope"; 是巴黎吗？不是。
  "No doubt", "Not sure", 没错 and 不错 answer yes or nothing; "Not London" (不是伦敦) after "Is it Paris?" rejects
  London only, while "Not Paris" (不是巴黎) repeats the question to reject it.
- A correction marker between two candidates in one sentence: "Paris, no, London", "Paris, wait, London", "Paris,
  sorry, London", 巴黎，不对，是伦敦 (not when a negation follows, "It's Paris, no, not London", nor a tag "no?").
  "Wait", "oops", "correction", "scratch that", 等等, 不对, 说错了 also take back the sentence before ("It's Paris.
  Wait, no, it's London."); a bare "No." there does not ("It's Paris. No, not London.").
- A rejecting demonstrative: "Paris, that's wrong", "Is it Paris? That's not right.", 巴黎，这是错的.
- A belief then a contrast: "I thought Paris, but it's Lyon", "At first ..., however ...", "I thought Paris. But
  ...", 我以为是巴黎，其实是伦敦, 一开始…但是…; a hedging contrast leaves it ("I thought Paris, but I'm not sure",
  "but I could be wrong", 但不确定), as does a clause opening with "and"/"so"/"then" before the contrast.

Matching: a phrase or reference matches when its tokens occur as a contiguous run of the text's tokens, starting
outside a negation scope. Fillers are stripped from both sides first; when that leaves the phrase empty or finds no
match, a second try keeps them, so a phrase made of filler words (嗯, "I think") can still be found. Each try is
made with years and days of a month read (steps 6 and 8) and then, when that changes either side, without: those
readings can be wrong ("fourteen thirty" may be 14:30; "May 23rd" answers "the 23rd" too), and the second try keeps
every match that held before them, so "nineteen eighty-four" still contains "19". A token 块 matches "yuan". Money
is read on both tries: "$5" needs the unit ("5 euros" and a bare "5" do not state "$5", as a bare "5" never
stated "5 dollars"), while "It's five dollars" states "5". A phrase with no word at all (empty, punctuation, only
articles) raises ValueError. ``answer_matches`` adds one rule for hedges: an occurrence right next to "or" (或,
或者, 还是) with another word on the other side in the same sentence is one of two candidates, not an answer
("Paris or London" matches neither; "Is it Paris or London? Paris." matches Paris). "or so", "or something",
"or not" name no second candidate; 还是 after a pronoun, 都 or 也 means "still". It also applies retraction
(above), and a reference opening with "in", "on" or "at" is also answered without it ("1990" answers "in 1990",
"the kitchen" answers "in the kitchen"), unless another preposition stands there ("before 1990").

Known limits: retraction needs punctuation or a marker word (ASR text "is it paris no its london" still states
Paris); "I mean" is a filler, so "Paris, I mean London" still states Paris; a question without "?" (是巴黎吗 with no
mark) is not seen as one; ``contains_phrase`` sees negation only within a clause; Chinese is
matched by characters, so 红色 is found inside 粉红色 (pink); no stemming ("apples" != "apple"); no
traditional/simplified folding; no dates across languages (五月二十三日 is not "May 23"; money is: 五美元 is "$5");
a negative amount's sign next to a currency sign ("-$5") is lost; clock times ("ten thirty") are two numbers, and a
year's first half of 10..12 is not joined (they are usually times).

Libraries: text2num (``alpha2digit``, threshold 0) and cn2an (``transform``) were run on the number cases of the
tests as they stood before years and dates (63 English, 59 Chinese): text2num read 58/63 ("two and a half" -> 2,
"minus five" -> 5, "3 million" -> 3 and 1000000, "wait a second" -> 2nd) and joins no year pairs either; cn2an read
50/59 (一样, 十分, 一点 as numbers, 三四 as 34, 3万 as 3, 第三 as a cardinal). This reader read 63/63 and 59/59, so
neither is used.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from omnivchat.scoring._spoken_numbers import (
    Tok,
    is_year_oh,
    number_tok,
    read_chinese_numbers,
    read_english_numbers,
)
from omnivchat.scoring._spoken_units import SYMBOLS, read_dates, read_money

__all__ = [
    "SpokenScore",
    "answer_matches",
    "contains_any",
    "contains_number",
    "contains_phrase",
    "detect_language",
    "normalize",
    "numbers_in",
    "score_spoken",
    "tokenize",
]


def _words(text: str) -> tuple[str, ...]:
    """The space-separated words of a word-list literal (keeps long vocabularies readable)."""
    return tuple(text.split())


# ---------------------------------------------------------------------------------------------------------------
# Lexing.

# CJK ideographs (with extensions and compatibility forms), kana and Hangul syllables: one token per character.
_CJK = (
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
    "\U00020000-\U0002a6df\U0002a700-\U0002ebef\U00030000-\U0003134f"
)
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002a6df\U0002a700-\U0002ebef\U00030000-\U0003134f"
_LETTER = rf"[^\W\d_{_CJK}]"
_LEX = re.compile(
    rf"(?P<d>[0-9]+'?s(?!{_LETTER}|[0-9]))"
    rf"|(?P<o>[0-9]+(?:st|nd|rd|th)(?!{_LETTER}|[0-9]))"
    r"|(?P<n>(?:(?<![^\s(\[])-)?(?:[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])|[0-9]+)(?:\.[0-9]+)?)"
    rf"|(?P<w>{_LETTER}+(?:'{_LETTER}+)*)"
    rf"|(?P<c>[{_CJK}])"
    r"|(?P<p>%)"
    rf"|(?P<m>[{re.escape(''.join(SYMBOLS))}])"
    r"|(?P<s>\.{2,}|[,;:、\u2014\u2013\u2026]|--+|(?<!\S)-+(?!\S))"
    r"|(?P<h>[.!?\u3002])"
)
_CUTOFF = re.compile(rf"(?<![\w'-]){_LETTER}+-(?=\s|$)")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'", "\u00b4": "'", "\u2212": "-"})
_IS_CJK = re.compile(f"[{_CJK}]")
_HAN_RE = re.compile(f"[{_HAN}]")
_LATIN_RE = re.compile("[A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f]")


def _prepare(text: str, *, strip_fillers: bool) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = unicodedata.normalize("NFKC", text.casefold()).translate(_APOSTROPHES)
    if strip_fillers:
        text = _CUTOFF.sub(" ", text)
    return text


def _lex(text: str) -> list[Tok]:
    toks: list[Tok] = []
    end = -1
    for m in _LEX.finditer(text):
        kind = m.lastgroup or ""
        glued = m.start() == end
        end = m.end()
        raw = m.group()
        if kind == "n":
            toks.append(number_tok(Decimal(raw.replace(",", "")), glued=glued))
        elif kind == "o":
            toks.append(number_tok(Decimal(raw[:-2]), ordinal=True, glued=glued))
        elif kind == "p":
            toks.append(Tok("w", "percent", None, glued))
        elif kind == "d":  # "1990s", "the 90's": a decade or a plural, one word, never the number itself
            toks.append(Tok("w", raw.replace("'", ""), None, glued))
        else:
            toks.append(Tok(kind, raw, None, glued))
    return toks


# ---------------------------------------------------------------------------------------------------------------
# Contractions and spelling folds.

_SPECIAL: dict[str, tuple[str, ...]] = {
    "can't": ("can", "not"),
    "cannot": ("can", "not"),
    "won't": ("will", "not"),
    "shan't": ("shall", "not"),
    "ain't": ("is", "not"),
    "let's": ("let", "us"),
    "dunno": ("do", "not", "know"),
    "yeah": ("yes",),
    "yep": ("yes",),
    "yup": ("yes",),
    "nope": ("no",),
    "nah": ("no",),
    "okay": ("ok",),
    "grey": ("gray",),
    "colour": ("color",),
    "colours": ("colors",),
    "centre": ("center",),
}
_SUFFIXES = (("n't", "not"), ("'re", "are"), ("'ve", "have"), ("'ll", "will"), ("'d", "would"), ("'m", "am"))
_S_IS = frozenset(_words("it that there here what who where when why how he she this"))


def _expand_word(word: str) -> tuple[str, ...]:
    if word in _SPECIAL:
        return _SPECIAL[word]
    for suffix, replacement in _SUFFIXES:
        if word.endswith(suffix) and len(word) > len(suffix):
            return (*_expand_word(word[: -len(suffix)]), replacement)
    if word.endswith("'s") and len(word) > 2:
        base = word[:-2].replace("'", "")
        return (base, "is") if base in _S_IS else (base,)
    return (word.replace("'", ""),)


def _expand(toks: Sequence[Tok]) -> list[Tok]:
    out: list[Tok] = []
    for t in toks:
        if t.kind != "w":
            out.append(t)
            continue
        for k, piece in enumerate(_expand_word(t.text)):
            out.append(Tok("w", piece, None, t.glued if k == 0 else True))
    return out


# ---------------------------------------------------------------------------------------------------------------
# Fillers and disfluencies.

_FILLER_WORD = re.compile(r"u+h+m*|u+m+|e+r+m*|a+h+|h+m+|m{2,}|e+h+|o+h+|h+u+h+")
_FILLER_ZH = frozenset("嗯呃唔哦噢啊哎诶欸")
_FILLER_SEQS: tuple[tuple[str, ...], ...] = tuple(
    sorted(
        (
            ("i", "think"),
            ("i", "guess"),
            ("i", "believe"),
            ("i", "suppose"),
            ("i", "mean"),
            ("i", "would", "say"),
            ("let", "me", "see"),
            ("let", "me", "think"),
            ("let", "us", "see"),
            ("我", "觉", "得"),
            ("我", "认", "为"),
            ("我", "猜"),
        ),
        key=len,
        reverse=True,
    )
)
_OPENERS = frozenset({"well", "so", "actually", "basically", "anyway"})
_AFTER_OPENER = frozenset(
    _words(
        "i it its that this these those there they we you he she my your his her our their "
        "what which how maybe probably well so actually basically anyway like"
    )
)
_ZH_COMMA_FILLERS: tuple[tuple[str, ...], ...] = (("那", "个"), ("这", "个"), ("就", "是"), ("然", "后"), ("额",))


def _is_filler_token(t: Tok) -> bool:
    return (t.kind == "w" and _FILLER_WORD.fullmatch(t.text) is not None) or (t.kind == "c" and t.text in _FILLER_ZH)


def _match_seq(toks: Sequence[Tok], i: int, seq: tuple[str, ...]) -> int:
    """End index when ``seq`` occurs at ``toks[i]`` (punctuation between its words is skipped), else -1."""
    j = i
    for k, word in enumerate(seq):
        if k:
            while j < len(toks) and toks[j].kind in "sh":
                j += 1
        if j >= len(toks) or toks[j].kind not in "wc" or toks[j].text != word:
            return -1
        j += 1
    return j


def _drop_unconditional(toks: Sequence[Tok]) -> list[Tok]:
    out: list[Tok] = []
    i = 0
    while i < len(toks):
        if _is_filler_token(toks[i]) and not is_year_oh(toks, i):  # "nineteen oh five" is 1905: keep its "oh"
            i += 1
            continue
        for seq in _FILLER_SEQS:
            end = _match_seq(toks, i, seq)
            if end > 0:
                out.extend(t for t in toks[i:end] if t.kind in "sh")  # keep the boundaries, drop the words
                i = end
                break
        else:
            out.append(toks[i])
            i += 1
    return out


def _is_boundary(toks: Sequence[Tok], k: int) -> bool:
    return k < 0 or k >= len(toks) or toks[k].kind in "sh"


def _drop_contextual(toks: Sequence[Tok]) -> list[Tok]:
    """One pass of context-dependent filler removal; the caller repeats it to a fixed point."""
    out: list[Tok] = []
    i = 0
    n = len(toks)
    while i < n:
        t = toks[i]
        at_start = _is_boundary(out, len(out) - 1)
        if t.kind == "w":
            nxt = toks[i + 1] if i + 1 < n else None
            if t.text in _OPENERS and at_start and (nxt is None or nxt.kind in "sh" or nxt.text in _AFTER_OPENER):
                i += 1
                continue
            if t.text == "like" and nxt is not None and nxt.kind == "s":
                i += 1
                continue
            if (
                t.text == "you"
                and i + 1 < n
                and toks[i + 1].kind == "w"
                and toks[i + 1].text in ("know", "see")
                and (at_start or _is_boundary(toks, i + 2))
            ):
                i += 2
                continue
        if t.kind == "c":
            for seq in _ZH_COMMA_FILLERS:
                end = i + len(seq)
                if tuple(x.text for x in toks[i:end]) == seq and end < n and toks[end].kind == "s":
                    i = end
                    break
            else:
                out.append(t)
                i += 1
            continue
        out.append(t)
        i += 1
    return out


# ---------------------------------------------------------------------------------------------------------------
# Negation scopes.

_COPULAS = frozenset({"is", "are", "was", "were", "am"})
_PRONOUNS = frozenset(_words("i it its that this there they we you he she my your"))
_DANGLING = frozenset({"not", "never"})
# Sequence -> (kind, words that end the scope). Kinds: "cue", "noncue", "contrast".
_SEQ: dict[tuple[str, ...], tuple[str, frozenset[str] | None]] = {}


def _add(kind: str, words: Iterable[str], *, chinese: bool = False, reset: frozenset[str] | None = None) -> None:
    for w in words:
        key = tuple(w) if chinese else tuple(w.split())
        _SEQ[key] = (kind, reset)


_add("cue", _words("not no never neither nor none nothing nobody nowhere without"))
_add("cue", ["instead of", "rather than"])
_add(
    "noncue",
    ["not only", "not just", "not merely", "no doubt", "no wonder", "no problem", "no matter", "never mind"],
)
_add("noncue", ["without doubt"])
_add("contrast", _words("but however though although instead whereas rather"))
_add("cue", _words("不 没 非 未 无 别 莫 甭 勿 从不 从没 并不 绝不 毫无"), chinese=True)
_add("cue", ["不是", "并非", "并不是", "绝不是"], chinese=True, reset=frozenset({"是"}))
_add("cue", ["没有", "并没有"], chinese=True, reset=frozenset({"有"}))
_add(
    "noncue",
    _words(
        "不错 不仅 不但 不少 不断 不久 不同 不管 不论 不好意思 不客气 不得不 差不多 "
        "没关系 没问题 非常 无论 无疑 未来 别人 别的 别处 可不是 而且 从而 因而"
    ),
    chinese=True,
)
_add("contrast", _words("但 但是 可是 而是 不过 然而 却 而"), chinese=True)
_MAX_SEQ = max(len(k) for k in _SEQ)


def _classify(words: Sequence[str], p: int) -> tuple[str, int, frozenset[str] | None]:
    """(kind, length, scope-ending words) of the negation-relevant item at ``words[p]``; kind "plain" if none."""
    w = words[p]
    m = len(words)
    if w in ("不", "没") and 0 < p < m - 1 and words[p - 1] == words[p + 1]:
        return "noncue", 1, None  # A-not-A question: 是不是, 有没有
    if w == "no" and p + 1 < m and words[p + 1] in _PRONOUNS:
        return "noncue", 1, None  # "no it's red": an interjection
    for length in range(min(_MAX_SEQ, m - p), 0, -1):
        hit = _SEQ.get(tuple(words[p : p + length]))
        if hit is not None:
            kind, reset = hit
            if kind == "cue" and length == 1 and w in ("not", "no") and p > 0 and words[p - 1] in _COPULAS:
                reset = _COPULAS  # "isn't blue it's red": a negated copula ends at the next copula
            return kind, length, reset
    return "plain", 1, None


# A predicate that rejects what came before it in its clause: "Paris is wrong", "Paris isn't the answer" (articles
# are gone by now), 红色不对, 红色是错的. "is not wrong" is no rejection; 对不对 is a question, 不错 "not bad", 没错
# "right", 不对称 "asymmetric".
_WRONG_COPULAS = _COPULAS | {"be"}
_WRONG = frozenset(_words("wrong incorrect false mistaken untrue"))
_NOT_RIGHT = frozenset(_words("right correct true it answer case"))
_ZH_WRONG: tuple[tuple[str, ...], ...] = (("不", "对"), ("不", "正", "确"), ("是", "错"), ("错", "了"))
_ZH_NOT_BEFORE_WRONG = frozenset("对不没")  # 对不对 (a question), 不是错的 / 没错了 (not wrong)
_ZH_NOT_AFTER_WRONG = frozenset("称")
# Where the rejected subject starts: after the last of these before the predicate ("It's London and Paris is wrong"
# rejects Paris only).
_SUBJECT_STOPS = _COPULAS | frozenset(_words("and or but so because if then that however though although instead"))
_ZH_SUBJECT_STOPS = frozenset("是但而")


def _rejected_subjects(words: Sequence[str]) -> list[tuple[int, int]]:
    """(start, end) spans of ``words`` that a following predicate rejects ("Paris is wrong": "paris")."""
    spans: list[tuple[int, int]] = []
    m = len(words)
    for p in range(1, m):
        nxt = words[p + 1] if p + 1 < m else None
        english = words[p] in _WRONG_COPULAS and (
            nxt in _WRONG or (nxt == "not" and p + 2 < m and words[p + 2] in _NOT_RIGHT)
        )
        chinese = words[p - 1] not in _ZH_NOT_BEFORE_WRONG and any(
            tuple(words[p : p + len(seq)]) == seq
            and (p + len(seq) >= m or words[p + len(seq)] not in _ZH_NOT_AFTER_WRONG)
            for seq in _ZH_WRONG
        )
        if not (english or chinese):
            continue
        end = p - 1 if chinese and words[p - 1] == "是" else p  # 红色是不对的: the subject is before 是
        stops = _SUBJECT_STOPS if english else _ZH_SUBJECT_STOPS
        start = end
        while start > 0 and words[start - 1] not in stops:
            start -= 1
        if start < end:
            spans.append((start, end))
    return spans


def _negate_clause(
    words: Sequence[str], carry: tuple[bool, frozenset[str] | None] | None
) -> tuple[list[bool], tuple[bool, frozenset[str] | None] | None]:
    """Per-token "inside a negation scope" flags for one clause, and the scope left dangling at its end."""
    in_scope, reset = carry if carry is not None else (False, None)
    flags = [False] * len(words)
    p = 0
    last_cue: tuple[int, int, frozenset[str] | None] | None = None
    while p < len(words):
        kind, length, cue_reset = _classify(words, p)
        if kind == "contrast":
            in_scope, reset = False, None
        elif kind == "cue":
            flags[p : p + length] = [in_scope] * length
            in_scope, reset = True, cue_reset
            last_cue = (p, p + length, cue_reset)
        elif kind == "noncue":
            flags[p : p + length] = [in_scope] * length
        else:
            if in_scope and reset is not None and words[p] in reset:
                in_scope, reset = False, None
            flags[p] = in_scope
        p += length
    for start, end in _rejected_subjects(words):
        flags[start:end] = [True] * (end - start)
    dangling = None
    if last_cue is not None and last_cue[1] == len(words) and words[last_cue[0]] in _DANGLING:
        dangling = (True, last_cue[2])
    return flags, dangling


# ---------------------------------------------------------------------------------------------------------------
# Retraction: a candidate named in order to reject it, across clauses and sentences. These spans count against an
# answer (``answer_matches``) but not against a mention (``contains_phrase``): in "Is the left door open? No, it's
# closed" the question is rejected as an answer, yet "left door" was still said.

# A sentence that answers a question with a rejection: "No, ...", "Not at all", "Definitely not", 不是, 不对.
_EN_NO_OPENERS = frozenset({"no"})
_EN_REJECTION_WORDS = frozenset(_words("no not never wrong incorrect false"))
_EN_INTENSIFIERS = frozenset(_words("definitely certainly absolutely surely of course really probably"))
_EN_NOT_A_REJECTION = frozenset(_words("doubt wonder problem matter sure certain only just merely"))
_ZH_REJECTIONS = frozenset(
    _words("不 不是 不对 没有 错 错了 不是的 不对的 不不 当然不是 肯定不是 并不是 绝对不是 当然不 肯定不")
)
# A clause that takes back what came before it in its sentence ("Paris, no, London"; "Paris, wait, London").
_EN_MARKER_WORDS = frozenset(_words("no wait sorry oops correction wrong incorrect"))
_EN_MARKER_PHRASES = frozenset({"scratch that", "hold on", "my mistake", "i was wrong", "let me correct that"})
_ZH_MARKERS = frozenset(_words("不 不对 不是 不不 等等 等一下 错了 说错了 更正"))
# Markers strong enough to take back the previous sentence too ("It's Paris. Wait, no, it's London."): a bare "No."
# after a statement may be the start of a new point ("It's Paris. No, not London."), so it does not.
_EN_REPAIR_WORDS = frozenset(_words("wait oops correction"))
_ZH_REPAIRS = frozenset(_words("等等 等一下 不对 说错了 更正 错了"))
# A belief later corrected: "I thought Paris, but it's Lyon", "At first ..., but ...", 我以为是巴黎，其实是伦敦.
_EN_BELIEF_SEQS: tuple[tuple[str, ...], ...] = (
    *((w,) for w in _words("thought assumed guessed believed figured expected supposed imagined initially originally")),
    ("at", "first"),
    ("would", "have", "said"),
    ("was", "going", "to", "say"),
)
_ZH_BELIEF_SEQS: tuple[tuple[str, ...], ...] = (
    ("以", "为"),
    ("起", "初"),
    ("本", "来"),
    ("原", "本"),
    ("当", "初"),
    ("1", "开", "始"),  # 一开始, with 一 read as a numeral
    ("乍", "1", "看"),
)
_BELIEF_CONTRASTS = frozenset(_words("but however 但 但是 可是 不过 其实 结果 实际上 却 而是"))
_ZH_BELIEF_CONTRASTS: tuple[tuple[str, ...], ...] = tuple(
    tuple(w) for w in _words("但是 可是 不过 其实 结果 实际上 而是 但 却")
)
# A contrast that hedges instead of correcting ("I thought Paris, but I'm not sure") leaves the belief standing.
_HEDGE_WORDS = frozenset(_words("sure certain positive confident know"))
_ZH_HEDGES = ("确定", "知道", "肯定", "一定")
_MODALS = frozenset(_words("could might may can"))
# Clauses that keep stating rather than turning: "I thought about it, and it's Paris, but ..." keeps Paris.
_CONTINUATIONS = frozenset(_words("and so then because 所 然 因"))
# "Paris, that's wrong": a demonstrative whose predicate rejects (see _rejected_subjects) rejects what came before.
_DEMONSTRATIVES = frozenset(_words("that this which it"))
_ZH_DEMONSTRATIVE_REJECTIONS = frozenset(
    _words("这是错的 那是错的 这不对 那不对 这是不对的 那是不对的 这个不对 那个不对")
)


def _zh(words: Sequence[str]) -> str:
    return "".join(words)


def _answers_no(words: Sequence[str], question: Sequence[str]) -> bool:
    """True when ``words``, the first clause of the sentence after the ``question``, rejects it ("No", "Not at all",
    "Definitely not", "Not Paris" after "Is it Paris?", 不是); "No doubt", "Not sure", "Not London" (after "Is it
    Paris?": that rejects London), 不错 and 没错 do not."""
    if not words:
        return False
    said = set(question) | _EN_REJECTION_WORDS | _EN_INTENSIFIERS | {"at", "all", "quite", "exactly"}
    if words[0] in _EN_NO_OPENERS:
        return len(words) == 1 or words[1] not in _EN_NOT_A_REJECTION
    if words[0] == "not" and _classify(words, 0)[0] == "cue":
        return all(w in said for w in words)
    if all(w in _EN_REJECTION_WORDS or w in _EN_INTENSIFIERS for w in words):
        return any(w in _EN_REJECTION_WORDS for w in words)
    text = _zh(words)
    if text in _ZH_REJECTIONS:
        return True
    # 不是巴黎 after 是巴黎吗 repeats the question to reject it; 不是伦敦 rejects London only.
    return text.startswith(("不是", "不对")) and all(w in question for w in words[2:])


def _is_marker(words: Sequence[str]) -> bool:
    text = " ".join(words)
    return (
        all(w in _EN_MARKER_WORDS for w in words) or text in _EN_MARKER_PHRASES or _zh(words) in _ZH_MARKERS
    ) and bool(words)


def _is_repair(words: Sequence[str]) -> bool:
    return _is_marker(words) and (
        any(w in _EN_REPAIR_WORDS for w in words) or " ".join(words) in _EN_MARKER_PHRASES or _zh(words) in _ZH_REPAIRS
    )


def _rejects_before(words: Sequence[str]) -> bool:
    """True for a clause such as "that's wrong", "which is not right", 这是错的, which rejects the clause before it."""
    if _zh(words) in _ZH_DEMONSTRATIVE_REJECTIONS:
        return True
    if len(words) < 3 or words[0] not in _DEMONSTRATIVES:
        return False
    rest = list(words[1:])
    if rest[0] in _MODALS or rest[0] == "would":
        rest = rest[1:]
    return bool(rest) and _rejected_subjects(["x", *rest]) == [(0, 1)] and len(rest) <= 3


def _starts_negated(words: Sequence[str]) -> bool:
    return bool(words) and _classify(words, 0)[0] == "cue"


def _is_hedge(words: Sequence[str]) -> bool:
    text = _zh(words)
    if any(h in text for h in _ZH_HEDGES) or any(w in _HEDGE_WORDS for w in words):
        return True
    return any(
        words[k] in _MODALS and words[k + 1 : k + 3] in (["be", "wrong"], ["be", "mistaken"])
        for k in range(len(words) - 2)
    )


def _seq_at(words: Sequence[str], p: int, seqs: Iterable[tuple[str, ...]]) -> int:
    """Length of the first of ``seqs`` that occurs at ``words[p]``, else 0."""
    for seq in seqs:
        if tuple(words[p : p + len(seq)]) == seq:
            return len(seq)
    return 0


def _retracted(texts: Sequence[str], sentences: Sequence[tuple[list[list[int]], bool]]) -> list[bool]:
    """Per word: named in order to be rejected, across clauses and sentences (see the module docstring).

    ``sentences`` holds, per sentence, its clauses (lists of word indices) and whether it ends with "?".
    """
    flags = [False] * len(texts)

    def mark(clauses: Iterable[list[int]]) -> None:
        for clause in clauses:
            for k in clause:
                flags[k] = True

    for s, (clauses, question) in enumerate(sentences):
        words = [[texts[k] for k in clause] for clause in clauses]
        following = sentences[s + 1][0] if s + 1 < len(sentences) else []
        # "Is it Paris? No, it's London."; "Paris? No."
        question_words = [w for clause in words for w in clause]
        if question and following and _answers_no([texts[k] for k in following[0]], question_words):
            mark(clauses)
        start = 0
        for c, clause_words in enumerate(words):
            later = words[c + 1] if c + 1 < len(words) else None
            if c > 0 and _is_marker(clause_words) and later is not None and not _starts_negated(later):
                mark(clauses[start:c])  # "Paris, no, London"
                start = c + 1
            elif c == 0 and s > 0 and (_is_repair(clause_words) or _rejects_before(clause_words)):
                mark(sentences[s - 1][0])  # "It's Paris. Wait, no, it's London."; "Is it Paris? That's wrong."
            elif c > 0 and _rejects_before(clause_words):
                mark(clauses[start:c])  # "Paris, that's wrong"
                start = c + 1
        # "I thought Paris, but it's Lyon": the belief, up to a contrast that corrects it.
        flat = [(c, k) for c, clause in enumerate(clauses) for k in range(len(clause))]
        for pos, (c, k) in enumerate(flat):
            length = _seq_at(words[c], k, _EN_BELIEF_SEQS) or _seq_at(words[c], k, _ZH_BELIEF_SEQS)
            if not length:
                continue
            for c2, k2 in flat[pos + length :]:
                if k2 == 0 and c2 != c and words[c2][0] in _CONTINUATIONS:
                    break
                turn = _seq_at(words[c2], k2, _ZH_BELIEF_CONTRASTS) or int(words[c2][k2] in _BELIEF_CONTRASTS)
                if turn:
                    if not _is_hedge(words[c2][k2 + turn :]):
                        for c3, k3 in flat[pos + length :]:
                            if (c3, k3) == (c2, k2):
                                break
                            flags[clauses[c3][k3]] = True
                    break
            else:
                # The contrast may open the next sentence: "I thought Paris. But it's Lyon."
                if following and texts[following[0][0]] in _BELIEF_CONTRASTS:
                    rest = [texts[k] for k in following[0][1:]]
                    if not _is_hedge(rest):
                        for c3, k3 in flat[pos + length :]:
                            flags[clauses[c3][k3]] = True
            break
    return flags


# ---------------------------------------------------------------------------------------------------------------
# Analysis.


@dataclass(frozen=True, slots=True)
class _Analysis:
    """A text after normalisation: its tokens, and per token its kind, number value, negation flag and sentence."""

    tokens: tuple[str, ...]
    kinds: tuple[str, ...]
    values: tuple[Decimal | None, ...]
    negated: tuple[bool, ...]
    sentence: tuple[int, ...]
    retracted: tuple[bool, ...] = ()


_ARTICLES = frozenset({"the", "a", "an"})


@lru_cache(maxsize=8192)
def _analyse(text: str, strip_fillers: bool = True, readings: bool = True) -> _Analysis:
    """Run the normalisation steps of the module docstring, then mark negation scopes clause by clause (cached).

    ``readings`` turns on the two readings that can be wrong, years said in pairs and days of a month ("ten thirty"
    may be a time, "May 23rd" may be answering "the 23rd"); matching tries them on and then off.
    """
    toks = _expand(_lex(_prepare(text, strip_fillers=strip_fillers)))
    if strip_fillers:
        toks = _drop_unconditional(toks)
    # An article matters to the number readers only before an English word ("a hundred"); elsewhere it goes first,
    # so that 一a百 reads as 一百 does (the article is gone on a second normalisation).
    toks = [
        t
        for k, t in enumerate(toks)
        if not (t.kind == "w" and t.text in _ARTICLES and (k + 1 == len(toks) or toks[k + 1].kind != "w"))
    ]
    toks = read_english_numbers(read_chinese_numbers(toks), years=readings)
    toks = [t for t in toks if not (t.kind == "w" and t.text in _ARTICLES)]
    # Money before dates, so every currency sign is an amount's unit or gone before a date is read ("Aug $5" reads
    # as "aug 5 dollars" does), and after them, so the day a date makes can take a unit ("May 23rd 元").
    toks = read_money(toks)
    if readings:
        toks = read_money(read_dates(toks))
    if strip_fillers:
        while True:
            nxt = _drop_contextual(_drop_unconditional(toks))
            if len(nxt) == len(toks):
                break
            toks = nxt

    words: list[Tok] = []
    sentence: list[int] = []
    clauses: list[tuple[list[int], str]] = []
    current: list[int] = []
    sid = 0
    questions: set[int] = set()
    for t in toks:
        if t.kind in "sh":
            if current:
                clauses.append((current, t.kind))
                current = []
            elif clauses and t.kind == "h":
                clauses[-1] = (clauses[-1][0], "h")
            if t.kind == "h":
                if t.text == "?":
                    questions.add(sid)
                sid += 1
            continue
        current.append(len(words))
        words.append(t)
        sentence.append(sid)
    if current:
        clauses.append((current, "h"))

    texts = [t.text for t in words]
    negated = [False] * len(words)
    carry = None
    for members, end in clauses:
        flags, dangling = _negate_clause([texts[k] for k in members], carry)
        for k, flag in zip(members, flags, strict=True):
            negated[k] = flag
        carry = dangling if end == "s" else None
    by_sentence: dict[int, list[list[int]]] = {}
    for members, _end in clauses:
        by_sentence.setdefault(sentence[members[0]], []).append(members)
    retracted = _retracted(texts, [(cs, sid in questions) for sid, cs in by_sentence.items()])
    return _Analysis(
        tokens=tuple(texts),
        kinds=tuple(t.kind for t in words),
        values=tuple(t.value if t.kind in "no" else None for t in words),
        negated=tuple(negated),
        sentence=tuple(sentence),
        retracted=tuple(retracted),
    )


def _phrase_pair(text: str, phrase: str) -> list[tuple[_Analysis, _Analysis]]:
    """The (text analysis, phrase analysis) pairs to try: fillers stripped, then kept when that changes the phrase;
    each with the year and date readings on, then off when that changes either side.

    Stripping first makes "uh, I think it's Paris" state "Paris"; keeping them as a second try lets a phrase made of
    filler words ("I think", "you know", 嗯) be found at all. Reading "nineteen eighty-four" as 1984 and "May 23rd"
    as may 23 first makes them match "1984" and "May 23"; reading them as said as a second try keeps what matched
    before those readings ("fourteen thirty" still matches "14:30", "May 23rd" still states "23rd").
    Raises ValueError when the phrase has no token.
    """
    if not _analyse(phrase, False).tokens:
        raise ValueError(f"phrase {phrase!r} has no words after normalisation")
    pairs: list[tuple[_Analysis, _Analysis]] = []
    seen: set[tuple[_Analysis, _Analysis]] = set()
    for readings in (True, False):
        stripped = _analyse(phrase, True, readings)
        kept = _analyse(phrase, False, readings)
        tries = [(True, stripped)] if stripped.tokens else []
        if kept.tokens != stripped.tokens:
            tries.append((False, kept))
        for strip, ph in tries:
            an = _analyse(text, strip, readings)
            if (an, ph) not in seen:
                seen.add((an, ph))
                pairs.append((an, ph))
    return pairs


# 块 after a number is yuan (五块, "5 yuan") or the measure word for pieces (三块蛋糕): it is left as said and
# matches either.
_SAME = frozenset({("块", "yuan"), ("yuan", "块")})


def _occurrences(tokens: Sequence[str], phrase: Sequence[str]) -> Iterable[int]:
    k = len(phrase)
    for i in range(len(tokens) - k + 1):
        if all(a == b or (a, b) in _SAME for a, b in zip(tokens[i : i + k], phrase, strict=True)):
            yield i


_OR_SEQS: tuple[tuple[str, ...], ...] = (("或", "者"), ("或", "是"), ("还", "是"), ("or",), ("或",))
_OR_NOT_A_CHOICE = frozenset({"so", "something", "anything", "whatever", "not", "else", "许"})
_HEDGE_ADVERBS = frozenset({"maybe", "perhaps", "possibly", "probably", "even"})
_STILL_SUBJECTS = frozenset("它他她这那我你都也")


def _hedged(an: _Analysis, i: int, j: int) -> bool:
    """True when the occurrence ``tokens[i:j]`` is one of two candidates joined by "or" (或, 或者, 还是).

    The occurrence must sit right next to the "or" (hedging adverbs such as "maybe" may come between), and the
    other side must hold a word in the same sentence. "or so", "or something", "or not" offer no second candidate.
    还是 also means "still", so after a pronoun or 都/也 it is not read as "or".
    """
    toks, sent = an.tokens, an.sentence
    n = len(toks)
    same = sent[i]
    for seq in _OR_SEQS:
        end = j + len(seq)
        if toks[j:end] != seq or end >= n or sent[end] != same or toks[end] in _OR_NOT_A_CHOICE:
            continue
        if not (seq == ("还", "是") and i > 0 and toks[i - 1] in _STILL_SUBJECTS and sent[i - 1] == same):
            return True
    k = i
    while k > 0 and toks[k - 1] in _HEDGE_ADVERBS and sent[k - 1] == same:
        k -= 1
    for seq in _OR_SEQS:
        start = k - len(seq)
        if start > 0 and toks[start:k] == seq and sent[start - 1] == same and sent[start] == same:
            if seq == ("还", "是") and toks[start - 1] in _STILL_SUBJECTS:
                continue
            return True
    return False


# A reference that opens with "in", "on" or "at" ("in 1990", "on the table") is also answered by what follows it
# ("1990", "the table"), unless the reply puts another preposition there ("before 1990", "under the table").
_OPTIONAL_PREPOSITIONS = frozenset(_words("in on at"))
_PREPOSITIONS = frozenset(
    _words(
        "in on at before after since until till by around about from to under over above below behind near during "
        "within through past circa beyond inside outside into onto toward towards beneath beside between of for"
    )
)


def _found(text: str, phrase: str, *, negation_aware: bool, answer: bool) -> bool:
    """Whether ``phrase`` occurs in ``text`` outside negation scopes; with ``answer`` also not as one side of a
    hedge ("Paris or London") nor named to be rejected ("Is it Paris? No, ..."), and a leading "in"/"on"/"at" of
    the phrase may be left unsaid."""
    for an, ph in _phrase_pair(text, phrase):
        # A phrase that rejects its own start ("Paris is wrong", 红色不对) is found where it is said; any other
        # phrase only outside a negation scope. So is a phrase that retracts its own start ("Paris, no, London").
        forms = [(0, False)]
        if answer and len(ph.tokens) > 1 and ph.tokens[0] in _OPTIONAL_PREPOSITIONS:
            forms.append((1, True))
        for first, bare in forms:
            tokens = ph.tokens[first:]
            own_rejection, own_retraction = ph.negated[first], ph.retracted[first]
            for i in _occurrences(an.tokens, tokens):
                if bare and i > 0 and an.tokens[i - 1] in _PREPOSITIONS:
                    continue
                if negation_aware and an.negated[i] and not own_rejection:
                    continue
                if answer and (_hedged(an, i, i + len(tokens)) or (an.retracted[i] and not own_retraction)):
                    continue
                return True
    return False


# ---------------------------------------------------------------------------------------------------------------
# Public API.


def tokenize(text: str) -> list[str]:
    """The normalised tokens of ``text`` (see the module docstring for the steps); CJK characters are one each."""
    return list(_analyse(text, True).tokens)


def normalize(text: str) -> str:
    """Normalised form of a spoken answer: the tokens of ``tokenize`` joined by spaces ("Uh, twenty-three." -> "23",
    "I think it's Paris!" -> "it is paris", "嗯，是二十三个" -> "是 23 个").

    Adjacent CJK characters are written together ("红色的" stays "红色的"); every other pair of tokens gets one
    space ("这是 red cube 吗", "2 个"). Idempotent: ``normalize(normalize(t)) == normalize(t)``. Punctuation is gone
    from the result, so compare answers with ``answer_matches``, which also sees clause boundaries and negation.
    """
    # The readers (numbers, then dates and money) can leave a form another pass would read again ("five五june块五"
    # -> "5 june ..." -> "june 5 ..."): pass again until nothing changes, so that the result is a fixed point.
    result = _normalize_once(text)
    for _ in range(4):
        again = _normalize_once(result)
        if again == result:
            break
        result = again
    return result


def _normalize_once(text: str) -> str:
    out: list[str] = []
    prev = ""
    for tok in _analyse(text, True).tokens:
        if out and not (len(tok) == 1 and len(prev) == 1 and _IS_CJK.match(tok) and _IS_CJK.match(prev)):
            out.append(" ")
        out.append(tok)
        prev = tok
    return "".join(out)


def contains_phrase(text: str, phrase: str, *, negation_aware: bool = True) -> bool:
    """True when the normalised ``phrase`` occurs in the normalised ``text`` as a contiguous run of whole tokens.

    Token-level: "7" is not in "17", "red" is not in "reddish". Chinese is compared character by character, so 红色
    is in 红色的 (and, as a limit of not segmenting words, in 粉红色). With ``negation_aware`` (the default, for
    any-of / all-of checks) an occurrence inside a negation scope does not count: "it is not red" does not contain
    "red", 不是红色 does not contain 红色, while "it's red, not blue" contains "red". Pass ``negation_aware=False``
    for forbidden-word (none-of) checks, which must see a word however it is used. A phrase that starts with its own
    negation ("can't move", "no green bottle", 听不到) matches wherever it is not itself negated.

    Raises ValueError when ``phrase`` has no word after normalisation (empty, punctuation, only articles).
    """
    return _found(text, phrase, negation_aware=negation_aware, answer=False)


def contains_any(text: str, phrases: Iterable[str], *, negation_aware: bool = True) -> bool:
    """True when at least one of ``phrases`` (synonyms of one idea) is in ``text``; see ``contains_phrase``."""
    return any(contains_phrase(text, p, negation_aware=negation_aware) for p in phrases)


def answer_matches(response: str, reference: str) -> bool:
    """True when the spoken ``response`` states the ``reference`` answer.

    The reference token sequence must occur in the response tokens (after ``normalize``'s steps) at a place that
    is (1) outside every negation scope, checked before containment ("not Paris" does not match "Paris"; "not Paris
    but London" matches "London"), and (2) not one side of an "or" between two candidates ("Paris or London" does
    not match "Paris": a hedge is not an answer; "Is it Paris or London? Paris." does), and (3) not named to be
    rejected in a later clause or sentence ("Is it Paris? No, it's London.", "Paris? No.", "I thought Paris, but
    it's Lyon", 是巴黎吗？不是，是伦敦: see Retraction in the module docstring). Matching is by tokens, so "17" does
    not match "7", "the 1990s" does not match "1990", and number words equal digits ("Twenty-three." matches "23",
    二十三 matches "23"). A reference opening with "in", "on" or "at" is answered without it ("1990" matches "in
    1990"), unless another preposition stands there ("before 1990").

    Raises ValueError when the reference has no word after normalisation.
    """
    return _found(response, reference, negation_aware=True, answer=True)


def numbers_in(text: str, *, ordinals: bool = False) -> list[float]:
    """Every number stated in ``text``, in order, as floats: digits ("1,000", "2.5", "-3"), English number words
    ("twenty-three", "a hundred and five", "two point five"), Chinese numerals (二十三, 两, 零, 3万, 三点一四).

    "50%" and 百分之五十 give 50. Ordinals ("third", "23rd", 第三) are included only when ``ordinals`` is True.
    Negation is not applied here ("not 23" still states 23); use ``contains_number`` for a negation-aware check.
    Numerals inside words that are not numbers (一样, 一点 "a little", 十分 "very") are not reported; "one" as a
    pronoun ("the red one") is, since words alone cannot tell it apart.
    """
    an = _analyse(text, True)
    kinds = ("n", "o") if ordinals else ("n",)
    return [float(v) for k, v in zip(an.kinds, an.values, strict=True) if k in kinds and v is not None]


def contains_number(
    text: str, value: float, *, negation_aware: bool = True, ordinals: bool = False, rel_tol: float = 1e-9
) -> bool:
    """True when ``text`` states ``value`` (within ``rel_tol``), outside a negation scope when ``negation_aware``.

    "It's not 23, it's 24" states 24 and not 23. Ordinals count only when ``ordinals`` is True.
    """
    an = _analyse(text, True)
    kinds = ("n", "o") if ordinals else ("n",)
    for kind, v, neg in zip(an.kinds, an.values, an.negated, strict=True):
        if kind not in kinds or v is None or (negation_aware and neg):
            continue
        if math.isclose(float(v), value, rel_tol=rel_tol, abs_tol=0.0 if value else 1e-12):
            return True
    return False


def detect_language(text: str) -> Literal["zh", "en"] | None:
    """Language of a reply by the CJK-ratio rule: "zh" when han >= latin_letters / 4, else "en"; None when the
    text holds neither a han character nor a Latin letter (digits, punctuation, emoji, other scripts only).

    Deterministic and instant; on the 30 short replies of reference/offline-media.md section 4 ("嗯", "左边", "二",
    "红色 cube", "Yes", "OK", "left side") it is 30/30, where general language identifiers guess on short input.
    Latin letters include accented ones; kana and Hangul are not han, so Japanese-only or Korean-only text is None.
    """
    text = unicodedata.normalize("NFKC", text)
    han = len(_HAN_RE.findall(text))
    latin = len(_LATIN_RE.findall(text))
    if han == 0 and latin == 0:
        return None
    return "zh" if 4 * han >= latin else "en"


class SpokenScore(BaseModel):
    """Accuracy of spoken answers, with the ASR error band beside it (never subtracted from it).

    The harness note, section 3: at 5% WER roughly 5% of the "model errors" may be transcription errors, concentrated on
    names and numbers. Subtracting that would invent a precision nobody has; reporting the band tells the reader
    that a gap smaller than it may be transcription noise.
    """

    model_config = ConfigDict(frozen=True)

    n: int = Field(description="Items given.")
    scored: int = Field(description="Items with a transcript, which accuracy is computed over.")
    unverified: int = Field(description="Items without a transcript (None: e.g. Chinese, no offline ASR); not wrong.")
    correct: int = Field(description="Scored items whose transcript matches the reference (answer_matches).")
    accuracy: float | None = Field(description="correct / scored, as measured; None when nothing was scored.")
    asr_wer: float | None = Field(default=None, description="Word error rate of the ASR, when given.")
    band: float | None = Field(
        default=None, description="Half-width of the ASR error band: mean over scored items of 1 - (1 - WER)^k."
    )
    low: float | None = Field(default=None, description="max(0, accuracy - band).")
    high: float | None = Field(default=None, description="min(1, accuracy + band).")
    matches: tuple[bool | None, ...] = Field(default=(), description="Per item: match, or None when unverified.")

    def summary(self) -> str:
        """One line for reports, e.g. "accuracy 0.800 (8/10) ± 0.050 ASR band at WER 0.050; 2 unverified"."""
        if self.accuracy is None:
            text = f"accuracy n/a (0 scored of {self.n})"
        else:
            text = f"accuracy {self.accuracy:.3f} ({self.correct}/{self.scored})"
        if self.band is not None and self.asr_wer is not None:
            text += f" ± {self.band:.3f} ASR band at WER {self.asr_wer:.3f}"
        if self.unverified:
            text += f"; {self.unverified} unverified"
        return text


def score_spoken(
    transcripts: Sequence[str | None], references: Sequence[str], asr_wer: float | None = None
) -> SpokenScore:
    """Score transcribed spoken answers against references, reporting the ASR error band beside the accuracy.

    ``transcripts[i]`` is the ASR transcript of answer i, or None when it could not be transcribed (there is no
    offline Chinese ASR): such items are "unverified", counted apart and excluded from accuracy, never scored wrong.

    Error band: an ASR error on any of the k tokens of an answer can flip its verdict, so with word error rate w an
    item is at risk with probability 1 - (1 - w)^k, where k is the number of normalised reference tokens (a
    one-token answer at 5% WER: 0.05). The band half-width is the mean of that risk over scored items, with w
    clamped to [0, 1]; ``low``/``high`` are accuracy ∓ band bounded to [0, 1]. ``accuracy`` itself is as measured:
    the band is reported beside it and never subtracted.

    Raises ValueError when the lengths differ, ``asr_wer`` is negative or not finite, or a reference has no word.
    """
    if len(transcripts) != len(references):
        raise ValueError(f"{len(transcripts)} transcripts for {len(references)} references")
    if asr_wer is not None and not (math.isfinite(asr_wer) and asr_wer >= 0):
        raise ValueError(f"asr_wer must be a finite number >= 0, got {asr_wer}")
    matches: list[bool | None] = []
    risks: list[float] = []
    w = min(asr_wer, 1.0) if asr_wer is not None else 0.0
    for transcript, reference in zip(transcripts, references, strict=True):
        k = len(_analyse(reference, True).tokens) or len(_analyse(reference, False).tokens)
        if k == 0:
            raise ValueError(f"reference {reference!r} has no words after normalisation")
        if transcript is None:
            matches.append(None)
            continue
        matches.append(answer_matches(transcript, reference))
        risks.append(1.0 - (1.0 - w) ** k)
    scored = len(risks)
    correct = sum(1 for m in matches if m)
    accuracy = correct / scored if scored else None
    band = low = high = None
    if asr_wer is not None and accuracy is not None:
        band = min(1.0, math.fsum(risks) / scored)
        low = max(0.0, accuracy - band)
        high = min(1.0, accuracy + band)
    return SpokenScore(
        n=len(matches),
        scored=scored,
        unverified=len(matches) - scored,
        correct=correct,
        accuracy=accuracy,
        asr_wer=asr_wer,
        band=band,
        low=low,
        high=high,
        matches=tuple(matches),
    )
