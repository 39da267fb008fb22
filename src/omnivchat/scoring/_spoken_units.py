"""Dates and money for ``omnivchat.scoring.spoken``: a day of the month and an amount of money, one way each.

Private helper of the spoken-answer matcher, run on its token stream after numbers are read and articles dropped,
so it sees number tokens ("n" cardinal, "o" ordinal), words, single CJK characters, clause boundaries and currency
symbols ("m"). Both steps rewrite only what sits next to a number, so a month, "pound" or 元 alone stays a word.
"Next to" looks through punctuation ("May, 23rd", "5, bucks"): ``normalize`` drops punctuation, so a rule that a
comma blocked would apply on a second pass, and normalisation must be idempotent. Token matching ignores
punctuation too, so this costs nothing there.

- Dates: an ordinal next to a month is a day of the month, said the same way as the cardinal, month first:
  "May 23rd", "May the twenty-third", "the 23rd of May" and "23 June" read "may 23" / "june 23". Without a month an
  ordinal stays a rank ("the third one" is not 3).
- Money: a currency symbol before or after a number, a currency word after it, and the Chinese units become the
  number followed by one unit word: "$5", "5$", "five bucks", "5 US dollars" and 五美元 read "5 dollars"; 五元,
  五块钱 and ¥5 read "5 yuan"; "five dollars and fifty cents" and 五块五 / 五块五毛 read "5.5 dollars" / "5.5 yuan".
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from omnivchat.scoring._spoken_numbers import MONTHS, Tok, number_tok


def _skip(toks: Sequence[Tok], k: int) -> int:
    """The index of the first token at or after ``k`` that is not a clause boundary (``len(toks)`` if none)."""
    while k < len(toks) and toks[k].kind in "sh":
        k += 1
    return k


# ---------------------------------------------------------------------------------------------------------------
# Dates.

_MONTHS = frozenset(MONTHS)
_MONTH_ABBREVIATIONS = {
    "jan": "january",
    "feb": "february",
    "mar": "march",
    "apr": "april",
    "jun": "june",
    "jul": "july",
    "aug": "august",
    "sep": "september",
    "sept": "september",
    "oct": "october",
    "nov": "november",
    "dec": "december",
}
# "may" is a modal and "march" a verb: "the fifth may be right", "we march 3 miles". A number before them is a day
# only when it is an ordinal and "of" joins them ("the fifth of May") or nothing but a boundary or a year follows.
_VERB_MONTHS = frozenset({"may", "march"})


def _day(toks: Sequence[Tok], k: int) -> int | None:
    """The day of the month (1..31) that ``toks[k]`` can be: a whole cardinal or ordinal number; else None."""
    if not 0 <= k < len(toks) or toks[k].kind not in "no":
        return None
    value = toks[k].value
    if value is None or value != value.to_integral_value() or not 1 <= value <= 31:
        return None
    return int(value)


def _month(toks: Sequence[Tok], k: int, *, abbreviations: bool) -> str | None:
    """The full month name ``toks[k]`` says, or None; abbreviations ("Aug", "Sept") count only when asked."""
    if not 0 <= k < len(toks) or toks[k].kind != "w":
        return None
    word = toks[k].text
    if word in _MONTHS:
        return word
    return _MONTH_ABBREVIATIONS.get(word) if abbreviations else None


def _day_before_month(toks: Sequence[Tok], i: int) -> tuple[int, str] | None:
    """(end index, month) when ``toks[i]`` is a day said before its month ("23rd of May", "23 June"), else None."""
    k = _skip(toks, i + 1)
    has_of = k < len(toks) and toks[k].kind == "w" and toks[k].text == "of"
    if has_of:
        k = _skip(toks, k + 1)
    month = _month(toks, k, abbreviations=False)
    # A day right after the month belongs to it ("3 June 4" is June 4): pairing it here would let a second
    # normalisation pair the 3 instead, and normalisation must be idempotent.
    if month is None or _day(toks, _skip(toks, k + 1)) is not None:
        return None
    ordinal = toks[i].kind == "o"
    if month in _VERB_MONTHS:
        after = toks[k + 1] if k + 1 < len(toks) else None
        if not (ordinal and (has_of or after is None or after.kind in "shn")):
            return None
    elif has_of and not ordinal:
        return None  # "one of June's friends" is no date
    return k + 1, month


def read_dates(toks: Sequence[Tok]) -> list[Tok]:
    """Write every day of a month as month then cardinal day: "May 23rd", "23rd of May", "23 June" -> may 23.

    Month first: a full or abbreviated month followed by a day 1..31 ("May 23rd", "Aug 5"). Day first: an ordinal
    day, "of" optional, before a full month ("23rd of May", "23rd June"), or a cardinal day right before a month
    other than May and March ("23 June"). A year after the day stays where it is ("June 23rd, 2024" -> june 23 2024).
    """
    out: list[Tok] = []
    i = 0
    n = len(toks)
    while i < n:
        t = toks[i]
        month = _month(toks, i, abbreviations=True)
        j = _skip(toks, i + 1)
        day = _day(toks, j) if month is not None else None
        if month is not None and day is not None:
            out.append(Tok("w", month, None, t.glued))
            out.extend(toks[i + 1 : j])
            out.append(number_tok(Decimal(day), glued=toks[j].glued))
            i = j + 1
            continue
        day = _day(toks, i)
        found = _day_before_month(toks, i) if day is not None else None
        if day is not None and found is not None:
            end, month = found
            out.append(Tok("w", month, None, t.glued))
            out.extend(b for b in toks[i + 1 : end] if b.kind in "sh")
            out.append(number_tok(Decimal(day)))
            i = end
            continue
        out.append(t)
        i += 1
    return out


# ---------------------------------------------------------------------------------------------------------------
# Money.

# ¥ is read as yuan: the bench's languages are English and Chinese, and the same sign writes the yen ("5 yen" is
# how to say yen here).
SYMBOLS = {"$": "dollars", "€": "euros", "£": "pounds", "¥": "yuan", "¢": "cents"}
_UNIT_WORDS = {
    **dict.fromkeys(("dollar", "dollars", "buck", "bucks", "usd"), "dollars"),
    **dict.fromkeys(("euro", "euros", "eur"), "euros"),
    **dict.fromkeys(("pound", "pounds", "quid", "gbp"), "pounds"),
    **dict.fromkeys(("yuan", "rmb", "cny", "renminbi"), "yuan"),
    **dict.fromkeys(("yen", "jpy"), "yen"),
    **dict.fromkeys(("cent", "cents"), "cents"),
}
# Chinese units after a number, longest first. 块 alone is also the measure word for pieces (三块蛋糕, three pieces
# of cake), so it becomes yuan only as 块钱 or with a tenth after it (五块五); ``spoken`` lets a bare 块 match yuan.
_ZH_UNITS: tuple[tuple[str, str], ...] = (
    ("人民币", "yuan"),
    ("块钱", "yuan"),
    ("美元", "dollars"),
    ("美金", "dollars"),
    ("欧元", "euros"),
    ("英镑", "pounds"),
    ("日元", "yen"),
    ("元", "yuan"),
)
_SUBUNITS = {"dollars": ("cent", "cents"), "euros": ("cent", "cents"), "pounds": ("penny", "pence")}
_ZH_TENTHS = frozenset("毛角")
# What may follow the tenth in 五块五 for it to be money: nothing Chinese but these (五块五毛, 五块五的).
_ZH_AFTER_TENTH = frozenset("毛角钱的")


def _chars(toks: Sequence[Tok], k: int, text: str) -> bool:
    """True when the CJK characters of ``text`` are ``toks[k:k + len(text)]``."""
    return k + len(text) <= len(toks) and all(
        toks[k + m].kind == "c" and toks[k + m].text == ch for m, ch in enumerate(text)
    )


def _unit_at(toks: Sequence[Tok], k: int) -> tuple[int, str] | None:
    """(end index, unit word) of a currency named at ``toks[k]``, right after a number; else None.

    A currency word ("dollars", "bucks", "US dollars"), a Chinese unit (美元, 元, 块钱, 元人民币), or a symbol that no
    number follows ("5$", "5 €"; in "5$5" the sign is the second amount's). "sterling" is taken by ``_amount``.
    """
    if not 0 <= k < len(toks):
        return None
    t = toks[k]
    if t.kind == "m":
        nxt = _skip(toks, k + 1)
        return None if nxt < len(toks) and toks[nxt].kind == "n" else (k + 1, SYMBOLS[t.text])
    if t.kind == "w":
        word = t.text
        nxt = _skip(toks, k + 1)
        if word == "us" and nxt < len(toks) and _UNIT_WORDS.get(toks[nxt].text) == "dollars":
            return nxt + 1, "dollars"
        unit = _UNIT_WORDS.get(word)
        return None if unit is None else (k + 1, unit)
    for text, unit in _ZH_UNITS:
        if _chars(toks, k, text):
            end = k + len(text)
            if unit == "yuan" and text != "人民币" and _chars(toks, end, "人民币"):
                end += 3  # 五元人民币: one amount
            return end, unit
    return None


def _whole(t: Tok, below: int) -> int | None:
    """The value of ``t`` when it is a whole cardinal 0 <= value < ``below``; else None."""
    if t.kind != "n" or t.value is None or t.value != t.value.to_integral_value() or not 0 <= t.value < below:
        return None
    return int(t.value)


def _fraction(toks: Sequence[Tok], k: int, unit: str, *, tenth_alone: bool) -> tuple[int, Decimal] | None:
    """(end index, amount) of the smaller unit after an amount: "and fifty cents", 五毛 / 五角 (or a bare tenth)."""
    n = len(toks)
    k = _skip(toks, k)
    if unit in _SUBUNITS:
        j = _skip(toks, k + 1) if k < n and toks[k].kind == "w" and toks[k].text == "and" else k
        cents = _whole(toks[j], 100) if j < n else None
        s = _skip(toks, j + 1)
        sub = toks[s] if cents is not None and s < n else None
        if (sub is not None and cents is not None) and (
            (sub.kind == "w" and sub.text in _SUBUNITS[unit]) or (sub.kind == "m" and SYMBOLS[sub.text] == "cents")
        ):
            return s + 1, Decimal(cents) / 100  # "$5 50¢" too, or a second pass would add in what the first did not
        return None
    if unit == "yuan" and k < n:
        tenth = _whole(toks[k], 10)
        if tenth is None or tenth == 0:
            return None
        s = _skip(toks, k + 1)
        if s < n and toks[s].kind == "c" and toks[s].text in _ZH_TENTHS:
            return s + 1, Decimal(tenth) / 10
        after = toks[s] if s < n else None
        if (
            tenth_alone
            and (after is None or after.kind != "c" or after.text in _ZH_AFTER_TENTH)
            and _unit_at(toks, s) is None  # 5块5元 is two amounts, not 5.5 yuan and a stray 元
        ):
            return k + 1, Decimal(tenth) / 10
    return None


def _amount(
    out: list[Tok], toks: Sequence[Tok], number: Tok, between: Sequence[Tok], k: int, unit: str, *, tenth_alone: bool
) -> int:
    """Append ``number``, the boundaries in ``between``, and ``unit`` to ``out``, with the smaller unit at
    ``toks[k]`` added in (the punctuation inside it goes: it is one amount); the index after it all."""
    value = number.value if number.value is not None else Decimal(0)
    sterling = _skip(toks, k)
    if unit == "pounds" and sterling < len(toks) and toks[sterling].kind == "w" and toks[sterling].text == "sterling":
        k = sterling + 1  # "£5 sterling", "5 pounds sterling": one unit
    fraction = _fraction(toks, k, unit, tenth_alone=tenth_alone) if value == value.to_integral_value() else None
    if fraction is not None:
        k, part = fraction
        value += part if value >= 0 else -part
    out.append(number_tok(value, glued=number.glued))
    out.extend(b for b in between if b.kind in "sh")
    out.append(Tok("w", unit))
    return k


def read_money(toks: Sequence[Tok]) -> list[Tok]:
    """Write every amount of money as a number and one unit word: "$5", "five bucks", 五元 -> 5 dollars / 5 yuan.

    The units: dollars, euros, pounds, yuan, yen, cents. A symbol with no number next to it says nothing and goes.
    A smaller unit after a whole amount is added in ("5 dollars and 50 cents", 五元五角, 五块五 -> 5.5).
    """
    out: list[Tok] = []
    i = 0
    n = len(toks)
    while i < n:
        t = toks[i]
        if t.kind == "m":
            j = _skip(toks, i + 1)
            if j < n and toks[j].kind == "n" and _unit_at(toks, _skip(toks, j + 1)) is None:
                number = Tok("n", toks[j].text, toks[j].value, t.glued)
                out.extend(toks[i + 1 : j])
                i = _amount(out, toks, number, (), j + 1, SYMBOLS[t.text], tenth_alone=False)
            else:
                i += 1  # "$5 dollars": the word names the unit; a lone "$" is no word
            continue
        if t.kind == "n":
            j = _skip(toks, i + 1)
            found = _unit_at(toks, j)
            if found is not None:
                end, unit = found
                i = _amount(out, toks, t, toks[i + 1 : j], end, unit, tenth_alone=False)
                continue
            if _chars(toks, j, "块") and _fraction(toks, j + 1, "yuan", tenth_alone=True) is not None:
                i = _amount(out, toks, t, toks[i + 1 : j], j + 1, "yuan", tenth_alone=True)
                continue
        out.append(t)
        i += 1
    return out
