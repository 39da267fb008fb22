"""Tokens and number reading for ``omnivchat.scoring.spoken``: English number words and Chinese numerals to values.

Private helper of the spoken-answer matcher. It works on the token stream that ``spoken`` lexes, so it only sees
words, digit runs, single CJK characters and punctuation; it never reads raw text.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import dataclass
from decimal import Decimal

# Token kinds: "w" a Latin-script word, "n" a number, "o" an ordinal, "c" one CJK character,
# "s" a soft clause boundary (comma, colon, dash, ellipsis), "h" a hard one (sentence end).


@dataclass(frozen=True, slots=True)
class Tok:
    """One lexed token; ``glued`` is True when no whitespace separates it from the previous token in the source."""

    kind: str
    text: str
    value: Decimal | None = None
    glued: bool = False


def number_text(value: Decimal) -> str:
    """Canonical spelling of a number: plain digits, no exponent, no trailing zeros ("2.50" and "2.5" agree)."""
    if value == 0:
        return "0"
    text = format(value.normalize(), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def ordinal_text(value: int) -> str:
    """Canonical ordinal token: 1st, 2nd, 3rd, 11th, 23rd. Distinct from the cardinal, so "3rd" != "3"."""
    suffix = "th" if 10 <= value % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(value % 10, "th")
    return f"{value}{suffix}"


def number_tok(value: Decimal, *, ordinal: bool = False, glued: bool = False) -> Tok:
    """A number (or ordinal, when ``ordinal`` and the value is a positive integer) token with its canonical text."""
    if ordinal and value == value.to_integral_value() and value > 0:
        return Tok("o", ordinal_text(int(value)), value, glued)
    return Tok("n", number_text(value), value, glued)


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


# ---------------------------------------------------------------------------------------------------------------
# English number words.

_SMALL = {
    w: i
    for i, w in enumerate(
        _words(
            "zero one two three four five six seven eight nine ten eleven twelve thirteen "
            "fourteen fifteen sixteen seventeen eighteen nineteen"
        )
    )
}
_TENS = {w: 10 * i for i, w in enumerate(_words("twenty thirty forty fifty sixty seventy eighty ninety"), start=2)}
_SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
_ORD_SMALL = {
    w: i
    for i, w in enumerate(
        _words(
            "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth "
            "thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth"
        ),
        start=1,
    )
}
_ORD_TENS = {
    w: 10 * i
    for i, w in enumerate(
        _words("twentieth thirtieth fortieth fiftieth sixtieth seventieth eightieth ninetieth"), start=2
    )
}
_ORD_SCALES = {"thousandth": 10**3, "millionth": 10**6, "billionth": 10**9}
MONTHS = _words("january february march april may june july august september october november december")
# "second" is also a unit of time; it is read as an ordinal only after one of these words or inside a compound
# ("twenty-second"). Articles are dropped later, so this keeps normalisation idempotent. After a month it is a day
# ("May second"); a month name stays in the text, so that is idempotent too.
_SECOND_AFTER = frozenset({"the", "my", "your", "his", "her", "its", "our", "their", *MONTHS})
# Years said in two pairs: the first half is 13..20 ("nineteen eighty-four", "twenty twenty-four"). 10..12 are left
# out because "ten thirty", "eleven fifteen", "twelve thirty" are far more often clock times than years 1030-1299.
_YEAR_FIRST = frozenset(range(13, 21))
_YEAR_OH = frozenset({"oh", "o"})
# Words after which a pair is part of a bigger number, not a year ("nineteen eighty thousand", "... point five").
_NUMBER_WORDS = frozenset(
    {*_SMALL, *_TENS, *_SCALES, *_ORD_SMALL, *_ORD_TENS, *_ORD_SCALES, "hundred", "hundredth", "point"}
)


def _word(toks: Sequence[Tok], k: int) -> str | None:
    return toks[k].text if 0 <= k < len(toks) and toks[k].kind == "w" else None


def _word_before(toks: Sequence[Tok], i: int) -> str | None:
    """The word before ``toks[i]``, looking past punctuation and currency signs: ``normalize`` drops both, so "my,
    second" must read as "my second" does, or a second normalisation would change it."""
    k = i - 1
    while k >= 0 and toks[k].kind in "shm":
        k -= 1
    return _word(toks, k)


def is_year_oh(toks: Sequence[Tok], k: int) -> bool:
    """True when ``toks[k]`` is the "oh" of a year said in pairs ("nineteen oh five"): the filler remover keeps it."""
    before, after = _word(toks, k - 1), _word(toks, k + 1)
    return (
        _word(toks, k) in _YEAR_OH
        and before is not None
        and (_SMALL.get(before, -1) in _YEAR_FIRST or _TENS.get(before) in _YEAR_FIRST)
        and after is not None
        and 1 <= _SMALL.get(after, 0) <= 9
    )


def _year_second_half(toks: Sequence[Tok], j: int) -> tuple[int, int] | None:
    """(end index, value 1..99) of the second pair of a year at ``toks[j]``: "eighty-four", "ten", "oh five"."""
    w = _word(toks, j)
    if w is None:
        return None
    unit = _word(toks, j + 1)
    if w in _YEAR_OH and unit is not None and 1 <= _SMALL.get(unit, 0) <= 9:
        return j + 2, _SMALL[unit]
    if 10 <= _SMALL.get(w, 0) <= 19:
        return j + 1, _SMALL[w]
    if w in _TENS:
        if unit is not None and 1 <= _SMALL.get(unit, 0) <= 9:
            return j + 2, _TENS[w] + _SMALL[unit]
        return j + 1, _TENS[w]
    return None


def _parse_english(toks: Sequence[Tok], i: int, *, years: bool = True) -> tuple[int, Decimal, bool] | None:
    """Read one English number starting at ``toks[i]``: (end index, value, is_ordinal), or None.

    Grammar (greedy, stops at the first token that does not fit): optional "minus"/"negative" before a number word;
    "a"/"an" before hundred/thousand/...; units, teens, tens ("twenty three", hyphens already split); "hundred";
    descending scales up to trillion; "and" only between hundred/scale and a smaller number ("a hundred and five");
    "point" followed by digit words ("two point five"); "and a half"; an ordinal word ends the number
    ("twenty-third"). A digit token is read only when a scale word follows it ("3 million"); two digit tokens never
    merge. With ``years``, a number 13..20 said alone and followed by a second pair 10..99 or "oh" and a digit is a
    year ("nineteen eighty-four" 1984, "twenty twenty-four" 2024, "nineteen oh five" 1905), unless a number word
    follows the pair ("nineteen eighty thousand"); without it those read as two numbers (19 and 84).
    """
    n = len(toks)
    j = i
    sign = 1
    if _word(toks, j) in ("minus", "negative") and not (j > 0 and toks[j - 1].kind in "no"):
        nxt = _word(toks, j + 1)
        if nxt in _SMALL or nxt in _TENS or nxt in _ORD_SMALL:
            sign = -1
            j += 1
    total = Decimal(0)
    group = Decimal(0)
    last: str | None = None
    prev_scale: int | None = None
    ordinal = False
    value: Decimal | None = None
    while j < n:
        t = toks[j]
        if t.kind == "n":
            nxt = _word(toks, j + 1)
            if last is None and t.value is not None and t.value >= 0 and (nxt == "hundred" or nxt in _SCALES):
                group = t.value
                last = "digits"
                j += 1
                continue
            break
        w = t.text if t.kind == "w" else None
        if w is None:
            break
        if w in _SMALL:
            v = _SMALL[w]
            if last in (None, "hundred", "scale", "and") or (last == "tens" and 1 <= v <= 9):
                group += v
                last = "unit"
                j += 1
                continue
            break
        if w in _TENS:
            if last in (None, "hundred", "scale", "and"):
                group += _TENS[w]
                last = "tens"
                j += 1
                continue
            break
        if w in ("a", "an") and last is None and (_word(toks, j + 1) == "hundred" or _word(toks, j + 1) in _SCALES):
            group = Decimal(1)
            last = "unit"
            j += 1
            continue
        if w == "hundred":
            if last in ("unit", "tens", "digits") and 0 < group < 100:
                group *= 100
            elif last is None:
                group = Decimal(100)
            else:
                break
            last = "hundred"
            j += 1
            continue
        if w in _SCALES:
            s = _SCALES[w]
            if prev_scale is not None and s >= prev_scale:
                break
            if last in ("unit", "tens", "hundred", "digits") and group > 0:
                total += group * s
            elif last is None:
                total += s
            else:
                break
            group = Decimal(0)
            prev_scale = s
            last = "scale"
            j += 1
            continue
        if w == "and" and last in ("hundred", "scale"):
            nxt = _word(toks, j + 1)
            if nxt in _SMALL or nxt in _TENS or nxt in _ORD_SMALL or nxt in _ORD_TENS:
                last = "and"
                j += 1
                continue
            break
        if w == "point" and last in ("unit", "tens", "hundred", "scale", "digits") and _word(toks, j + 1) in _SMALL:
            digits = ""
            k = j + 1
            while (d := _word(toks, k)) in _SMALL and _SMALL[d] < 10:
                digits += str(_SMALL[d])
                k += 1
            if digits:
                value = total + group + Decimal("0." + digits)
                j = k
                last = "point"
            break
        if w in _ORD_SMALL:
            v = _ORD_SMALL[w]
            if w == "second" and last is None and _word_before(toks, i) not in _SECOND_AFTER:
                break
            if last in (None, "hundred", "scale", "and") or (last == "tens" and v <= 9):
                group += v
                ordinal = True
                j += 1
            break
        if w in _ORD_TENS:
            if last in (None, "hundred", "scale", "and"):
                group += _ORD_TENS[w]
                ordinal = True
                j += 1
            break
        if w == "hundredth":
            if last in ("unit", "tens", "digits") and 0 < group < 100:
                group *= 100
            elif last is None:
                group = Decimal(100)
            else:
                break
            ordinal = True
            j += 1
            break
        if w in _ORD_SCALES:
            s = _ORD_SCALES[w]
            if prev_scale is not None and s >= prev_scale:
                break
            if last in ("unit", "tens", "hundred", "digits") and group > 0:
                total += group * s
            elif last is None:
                total += s
            else:
                break
            group = Decimal(0)
            ordinal = True
            j += 1
            break
        break
    if last is None and not ordinal:
        return None
    if sign < 0 and ordinal:
        return None  # "minus first" is no number; the caller keeps "minus" as a word and reads "first" next
    if (
        years
        and sign > 0
        and value is None
        and not ordinal
        and last in ("unit", "tens")
        and total == 0
        and 13 <= group <= 20
        and (second := _year_second_half(toks, j)) is not None
        and _word(toks, second[0]) not in _NUMBER_WORDS
    ):
        return second[0], group * 100 + second[1], False
    if value is None:
        value = total + group
        if (
            not ordinal
            and _word(toks, j) == "and"
            and _word(toks, j + 1) in ("a", "an")
            and _word(toks, j + 2) == "half"
        ):
            value += Decimal("0.5")
            j += 3
    return j, sign * value, ordinal


def read_english_numbers(toks: Sequence[Tok], *, years: bool = True) -> list[Tok]:
    """Replace every English number phrase with one number or ordinal token (see ``_parse_english``)."""
    out: list[Tok] = []
    i = 0
    while i < len(toks):
        parsed = _parse_english(toks, i, years=years) if toks[i].kind in "wn" else None
        if parsed is None:
            out.append(toks[i])
            i += 1
            continue
        end, value, ordinal = parsed
        out.append(number_tok(value, ordinal=ordinal, glued=toks[i].glued))
        i = end
    return out


# ---------------------------------------------------------------------------------------------------------------
# Chinese numerals.

_ZH_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_ZH_TRUE_DIGITS = frozenset(_ZH_DIGITS) - {"两"}
_ZH_UNITS = {"十": 10, "百": 100, "千": 1000}
_ZH_BIG = {"万": 10**4, "亿": 10**8}
# Words in which a lone numeral character is not a number ("一样" the same, "十分" very, "三角" triangle, "万一" in
# case): a one-character run is left as text when it forms one of these with its neighbour.
_ZH_NOT_NUMBER = frozenset(
    _words(
        "一样 一起 一些 一下 一定 一直 一般 一切 一旦 一致 一边 一会 一向 一律 "
        "一同 一再 一旁 一时 一面 一路 一点 一半 一模 一番 一概 一贯 一身 一心 "
        "一共 十分 三角 四周 四处 统一 唯一 万一 之一"
    )
)


def _is_c(toks: Sequence[Tok], k: int, chars: Container[str]) -> bool:
    return 0 <= k < len(toks) and toks[k].kind == "c" and toks[k].text in chars


def _zh_segment_value(items: list[tuple[str, Decimal]]) -> Decimal:
    """Value of one numeral segment with units: 二十三, 一百零五, 两千三 (= 2300), 3万, 一亿二千万."""
    total = Decimal(0)
    wan = Decimal(0)
    section = Decimal(0)
    number: Decimal | None = None
    last_unit: int | None = None  # the unit right before a trailing digit, for the colloquial 一百五 = 150
    for kind, v in items:
        if kind == "d":
            number = v
            if v == 0:
                last_unit = None
        elif kind == "u":
            section += (number if number is not None else Decimal(1)) * v
            number = None
            last_unit = int(v)
        else:  # "b": 万 or 亿
            current = section + (number or 0)
            if current == 0:
                current = Decimal(1)
            if v == 10**8:
                total = (total + wan + current) * v
                wan = Decimal(0)
            else:
                wan = (wan + current) * v
            section = Decimal(0)
            number = None
            last_unit = int(v)
    if number is not None:
        if last_unit is not None and last_unit >= 100:
            number *= last_unit // 10
        section += number
    return total + wan + section


def _zh_values(items: list[tuple[str, Decimal]]) -> list[Decimal]:
    """Values of one numeral run (items: ("d", digit) | ("u", 10/100/1000) | ("b", 10^4/10^8) | ("p", 0) point)."""
    if any(kind == "p" for kind, _ in items):
        p = next(k for k, (kind, _) in enumerate(items) if kind == "p")
        whole = _zh_values(items[:p])
        frac = items[p + 1 :]
        scale = Decimal(1)
        if frac and frac[-1][0] == "b":
            scale = frac[-1][1]
            frac = frac[:-1]
        digits = "".join(str(int(v)) for _, v in frac)
        return [*whole[:-1], (whole[-1] + Decimal("0." + digits)) * scale]
    if not any(kind in "ub" for kind, _ in items):
        values = [v for _, v in items]
        if len(values) == 1:
            return values
        if len(values) == 2 and 0 not in values:
            return values  # 三四 "three or four": two numbers, not 34
        return [Decimal("".join(str(int(d)) for d in values))]  # 二零二五 = 2025
    # A digit right after a non-zero digit starts a new number: 三四十 reads as 3 and 40.
    segments: list[list[tuple[str, Decimal]]] = [[]]
    for k, item in enumerate(items):
        if k and item[0] == "d" and items[k - 1][0] == "d" and items[k - 1][1] != 0:
            segments.append([])
        segments[-1].append(item)
    return [_zh_segment_value(seg) for seg in segments]


def _zh_run(toks: Sequence[Tok], i: int) -> tuple[int, list[Decimal]] | None:
    """Read a Chinese numeral run starting at ``toks[i]``: (end index, values), or None when it is not a number.

    A run starts with a numeral digit (零〇一二三四五六七八九两), with 十, or with a digit token glued to a unit
    ("3万", "1.5亿"); 万/千/百/亿 alone (千万 "by all means", 万一 "in case") are not numbers. 点 between numerals is a
    decimal point (三点一四); 一点 without a following digit ("a little") is text.
    """
    n = len(toks)
    items: list[tuple[str, Decimal]] = []
    j = i
    unit_chars = set(_ZH_UNITS) | set(_ZH_BIG)
    t = toks[i]
    if t.kind == "n" and t.value is not None and t.value >= 0 and _is_c(toks, i + 1, unit_chars) and toks[i + 1].glued:
        items.append(("d", t.value))
        j += 1
    elif not (t.kind == "c" and (t.text in _ZH_DIGITS or t.text == "十")):
        return None
    after_point = False
    while j < n:
        t = toks[j]
        if t.kind == "c" and t.text in _ZH_DIGITS and (not after_point or t.text in _ZH_TRUE_DIGITS):
            items.append(("d", Decimal(_ZH_DIGITS[t.text])))
        elif t.kind == "c" and t.text in _ZH_UNITS and not after_point:
            items.append(("u", Decimal(_ZH_UNITS[t.text])))
        elif t.kind == "c" and t.text in _ZH_BIG:
            items.append(("b", Decimal(_ZH_BIG[t.text])))
            if after_point:
                j += 1
                break
        elif (
            t.kind == "c"
            and t.text == "点"
            and not after_point
            and items
            and items[-1][0] == "d"
            and _is_c(toks, j + 1, _ZH_TRUE_DIGITS)
        ):
            items.append(("p", Decimal(0)))
            after_point = True
        elif (
            t.kind == "n"
            and t.glued
            and t.value is not None
            and t.value >= 0
            and items
            and items[-1][0] in "ub"
            and not after_point
            and _is_c(toks, j + 1, unit_chars)
            and toks[j + 1].glued
        ):
            items.append(("d", t.value))  # 3千5百
        else:
            break
        j += 1
    if toks[i].kind == "c":
        char = toks[i].text
        before = toks[i - 1].text if i > 0 and toks[i - 1].kind == "c" else ""
        after = toks[j].text if j < n and toks[j].kind == "c" else ""
        # 之一 / 万一 end a word whatever follows: 之一，百 normalises to 之一百, which must not then read as 100.
        if before + char in _ZH_NOT_NUMBER or (len(items) == 1 and char + after in _ZH_NOT_NUMBER):
            return None
    return j, _zh_values(items)


def read_chinese_numbers(toks: Sequence[Tok]) -> list[Tok]:
    """Replace Chinese numeral runs with number tokens: 二十三 -> 23, 两个 -> 2 个, 3万 -> 30000, 一点五 -> 1.5.

    第 before a numeral makes an ordinal (第三 -> 3rd); 百分之 before one gives the number and "percent"
    (百分之五十 -> 50 percent). A digit token joins 第/百分之/a unit only when glued to it, so normalised output
    ("第 3") reads back unchanged.
    """
    out: list[Tok] = []
    i = 0
    n = len(toks)
    while i < n:
        t = toks[i]
        if t.kind == "c" and t.text == "第" and i + 1 < n:
            nxt = toks[i + 1]
            if nxt.kind == "n" and nxt.glued and nxt.value is not None and not _is_c(toks, i + 2, "万亿千百十"):
                out.append(number_tok(nxt.value, ordinal=True, glued=t.glued))
                i += 2
                continue
            run = _zh_run(toks, i + 1) if nxt.kind == "c" or nxt.glued else None
            if run is not None:
                end, values = run
                out.append(number_tok(values[0], ordinal=True, glued=t.glued))
                out.extend(number_tok(v) for v in values[1:])
                i = end
                continue
        if t.kind == "c" and t.text == "百" and _is_c(toks, i + 1, "分") and _is_c(toks, i + 2, "之") and i + 3 < n:
            nxt = toks[i + 3]
            run = _zh_run(toks, i + 3) if nxt.kind == "c" or nxt.glued else None
            if nxt.kind == "n" and nxt.glued and run is None and nxt.value is not None:
                run = (i + 4, [nxt.value])
            if run is not None:
                end, values = run
                out.extend(number_tok(v, glued=t.glued) for v in values)
                out.append(Tok("w", "percent"))
                i = end
                continue
        run = _zh_run(toks, i) if t.kind in "cn" else None
        if run is not None:
            end, values = run
            out.extend(number_tok(v, glued=t.glued) for v in values)
            i = end
            continue
        out.append(t)
        i += 1
    return out
