"""The deterministic validation of a Director's answer for a recording (:func:`answer_problems`): the reply's
language and form, the rubric's tiers, brand names and words that point at what only the annotation had."""

from __future__ import annotations

import re
from collections.abc import Sequence

from omnivchat.bench import Criterion
from omnivchat.studio.engine import ReplyAnswer

MIN_CRITERIA, MAX_CRITERIA = 3, 5
PLACEHOLDER = "<brand>"


DEFAULT_BRANDS: tuple[str, ...] = (
    # assistants and model vendors (the reason placeholders exist: no vendor is favoured)
    "OpenAI",
    "ChatGPT",
    "GPT",
    "Gemini",
    "Google",
    "Qwen",
    "Tongyi",
    "通义",
    "千问",
    "Alibaba",
    "阿里巴巴",
    "Anthropic",
    "Claude",
    "DeepSeek",
    "Doubao",
    "ByteDance",
    "字节跳动",
    "Baidu",
    "百度",
    "ERNIE",
    "文心一言",
    "Tencent",
    "腾讯",
    "Microsoft",
    "微软",
    "Copilot",
    "Siri",
    "小爱同学",
    "天猫精灵",
    # everyday brands a recording may show
    "iPhone",
    "iPad",
    "MacBook",
    "AirPods",
    "Samsung",
    "三星",
    "Huawei",
    "华为",
    "Xiaomi",
    "Starbucks",
    "星巴克",
    "Coca-Cola",
    "可口可乐",
    "Pepsi",
    "百事",
    "McDonald's",
    "麦当劳",
    "KFC",
    "肯德基",
    "Nike",
    "耐克",
    "Adidas",
    "阿迪达斯",
    "IKEA",
    "宜家",
    "Tesla",
    "特斯拉",
    "LEGO",
    "乐高",
)
"""Brand names a reference reply or rubric must not write (PLACEHOLDER instead). Words that are also ordinary
words are left out on purpose: Apple (the fruit), Amazon, Meta, 小米 (millet), 豆包 (a bun), 苹果."""

TRADEMARK_SIGNS = ("™", "®", "℠")
"""Marks that only follow a brand name, whatever the name: their presence is a brand however unlisted."""

HIDDEN_SOURCE_PATTERNS: tuple[str, ...] = (
    r"\bcaptions?\b",
    r"\bcaptioned\b",
    r"\btranscripts?\b",
    r"\btranscription\b",
    r"\bscripts?\b",
    r"\bas described\b",
    r"\bdescribed (?:above|below|earlier|in the)\b",
    r"\b(?:given|provided|hidden|clip|video|scene) descriptions?\b",
    r"\bannotat(?:ion|ions|or|ors|ed)\b",
    r"\bmetadata\b",
    "标注",
    "字幕",
    "转录",
    "转写",
    "文字稿",
    "脚本",
    "剧本",
    "视频描述",
    "画面描述",
    "场景描述",
    "根据描述",
    "如描述",
    "描述中",
    "描述所",
)
"""Words that point at the material only the annotation had (the caption, transcript, script or description):
the grader sees the reply and the rubric alone, so a criterion must state the fact, not where it was written.
Case-insensitive; English entries are whole words, Chinese ones substrings. Bare "description" / 描述 is allowed:
"describes the cup" is a fair criterion."""

LANGUAGE_NAMES: dict[str, tuple[str, ...]] = {
    "en": ("english", "英语", "英文"),
    "zh": ("chinese", "mandarin", "中文", "汉语", "普通话", "华语", "国语"),
}
"""How a tier-0 criterion names the reply's language, which makes it the language criterion."""

_LANGUAGE_LABEL = {"en": "English", "zh": "Chinese"}
_SILENCE = frozenset({"silence", "no reply", "no response", "nothing", "沉默", "无回复", "无应答", "不回复", "无"})
_BRACKETED = re.compile(r"\[[^\]]*\]|\([^)]*\)|（[^）]*）|【[^】]*】|<[^>]*>")


_HIDDEN = [re.compile(p, re.IGNORECASE) for p in HIDDEN_SOURCE_PATTERNS]


# ------------------------------------------------------------------------------------------- validation


def answer_problems(answer: ReplyAnswer, language: str, *, brands: Sequence[str] = DEFAULT_BRANDS) -> list[str]:
    """Every way ``answer`` breaks the form of a recorded record (Appendix D.2); empty when it is fit to deliver.

    - The reference reply holds spoken words (not a silence marker) in the recording's language.
    - 3 to 5 criteria, in tier order, tiers contiguous from 0.
    - Exactly one tier-0 criterion, and it is the language criterion: its text names the recording's language
      (LANGUAGE_NAMES) and its check, if it has one, asks for that language.
    - At least one tier-1 criterion.
    - No criterion refers to the hidden caption, transcript, script or description (HIDDEN_SOURCE_PATTERNS).
    - No brand name (``brands``) and no trademark sign in the reply or any criterion (PLACEHOLDER instead).
    - The reference meets each criterion of its own rubric that carries a machine check.
    """
    from omnivchat.judges import check_holds
    from omnivchat.scoring.spoken import detect_language

    problems: list[str] = []
    label = _LANGUAGE_LABEL.get(language, language)
    reply = answer.reply.strip()
    spoken = _BRACKETED.sub(" ", reply).strip()
    if not reply:
        problems.append("the reference reply is empty")
    elif detect_language(spoken) is None or spoken.strip(" .。!！?？,，…-").lower() in _SILENCE:
        problems.append("the reference reply holds no spoken words (a silence marker?); write what is said aloud")
    elif (said := detect_language(spoken)) != language:
        problems.append(f"the reference reply is in {_LANGUAGE_LABEL.get(said or '', said)}, not {label}")
    rubric = answer.rubric
    if not MIN_CRITERIA <= len(rubric) <= MAX_CRITERIA:
        problems.append(f"the rubric has {len(rubric)} criteria; it needs {MIN_CRITERIA} to {MAX_CRITERIA}")
    for number in range(2, len(rubric) + 1):
        before, after = rubric[number - 2].tier, rubric[number - 1].tier
        if after < before:
            problems.append(f"criteria are not in tier order: criterion {number} is tier {after} after tier {before}")
    tiers = sorted({c.tier for c in rubric})
    gaps = [t for t in range(1, tiers[-1] + 1) if t not in tiers] if tiers else []
    if gaps:  # a missing tier 0 is the gate's problem, reported below
        problems.append(f"tiers are not contiguous from 0: tier {gaps[0]} is missing below tier {tiers[-1]}")
    gates = [n for n, c in enumerate(rubric, start=1) if c.tier == 0]
    if len(gates) != 1:
        problems.append(
            f"the rubric has {len(gates)} tier-0 criteria; it needs exactly one, saying the reply is in {label}"
        )
    for number in gates[:1]:
        gate = rubric[number - 1]
        if not names_language(gate.text, language):
            problems.append(
                f"criterion {number} (tier 0) is not the language criterion: its text must say the reply is in {label}"
            )
        asked = gate.check.language if gate.check is not None else language
        if asked != language:
            problems.append(f"criterion {number} (tier 0): its check asks for language {asked!r}, not {language!r}")
    if 1 not in tiers:
        problems.append("the rubric has no tier-1 criterion")
    for number, criterion in enumerate(rubric, start=1):
        word = hidden_source(criterion.text)
        if word is not None:
            problems.append(
                f"criterion {number} refers to the hidden caption ({word!r}); the grader sees only the reply and "
                "the rubric, so state the fact itself"
            )
    texts = [("the reference reply", answer.reply)]
    texts += [(f"criterion {n}", _criterion_words(c)) for n, c in enumerate(rubric, start=1)]
    for where, text in texts:
        name = brand_in(text, brands)
        if name is not None:
            problems.append(f"{where} names the brand {name!r}; write {PLACEHOLDER} instead")
    missed = [
        n for n, c in enumerate(rubric, start=1) if c.check is not None and reply and not check_holds(c.check, reply)
    ]
    if missed:
        problems.append(f"the reference misses criteria {missed} of its own rubric (their machine checks)")
    return problems


def names_language(text: str, language: str) -> bool:
    """Whether ``text`` names ``language`` (LANGUAGE_NAMES: English words whole, Chinese ones anywhere)."""
    lowered = text.lower()
    for name in LANGUAGE_NAMES.get(language, (language,)):
        if name.isascii():
            if re.search(rf"\b{re.escape(name)}\b", lowered):
                return True
        elif name in text:
            return True
    return False


def hidden_source(text: str) -> str | None:
    """The first word of ``text`` that points at the hidden caption (HIDDEN_SOURCE_PATTERNS), or None."""
    for pattern in _HIDDEN:
        found = pattern.search(text)
        if found is not None:
            return found.group(0)
    return None


def brand_in(text: str, brands: Sequence[str] = DEFAULT_BRANDS) -> str | None:
    """The first brand name (or trademark sign) in ``text``, or None. Case-insensitive; a Latin-script name counts
    only as a whole word (GPT in "GPT-4o", not in "GPTQ"), a Chinese one anywhere."""
    for sign in TRADEMARK_SIGNS:
        if sign in text:
            return sign
    for name in brands:
        if _brand_pattern(name).search(text):
            return name
    return None


def scrub_brands(text: str, brands: Sequence[str] = DEFAULT_BRANDS) -> str:
    """``text`` with every brand name replaced by PLACEHOLDER and trademark signs dropped: what the Director reads,
    so that it is never handed a name to repeat (the paper replaces brands before generation)."""
    for sign in TRADEMARK_SIGNS:
        text = text.replace(sign, "")
    for name in sorted(brands, key=len, reverse=True):  # "Coca-Cola" before a shorter name inside it
        text = _brand_pattern(name).sub(PLACEHOLDER, text)
    return text


def _brand_pattern(name: str) -> re.Pattern[str]:
    if name.isascii():
        return re.compile(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])", re.IGNORECASE)
    return re.compile(re.escape(name))


def _criterion_words(criterion: Criterion) -> str:
    words = [criterion.text]
    if criterion.check is not None:
        for entry in [*criterion.check.any_of, *criterion.check.all_of, *criterion.check.none_of]:
            words.extend([entry] if isinstance(entry, str) else entry)
    return "\n".join(words)
