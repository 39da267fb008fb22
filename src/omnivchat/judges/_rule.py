"""The offline rule judge: decides criteria that carry a machine `check`, with the spoken-answer normaliser.

It is honest about its limits: an instance with any criterion lacking a check gets no rule verdict at all
(None, "unscored"), never a guess.
"""

from __future__ import annotations

import re

from omnivchat.bench import Check, Instance


def check_holds(check: Check, reply: str) -> bool:
    """Whether ``reply`` meets the machine check ``check`` (negation-aware, spoken forms normalised)."""
    from omnivchat.scoring.spoken import contains_phrase, detect_language, numbers_in

    def present(entry: str | list[str], *, negation_aware: bool = True) -> bool:
        options = [entry] if isinstance(entry, str) else entry
        return any(contains_phrase(reply, option, negation_aware=negation_aware) for option in options)

    if check.language is not None and detect_language(reply) != check.language:
        return False
    if check.any_of and not any(present(e) for e in check.any_of):
        return False
    if check.all_of and not all(present(e) for e in check.all_of):
        return False
    # a forbidden word counts wherever it stands, negated or not ("I did not move it" still names the act)
    if check.none_of and any(present(e, negation_aware=False) for e in check.none_of):
        return False
    if check.numbers:
        said = numbers_in(reply)
        if not all(any(abs(n - s) < 1e-9 for s in said) for n in check.numbers):
            return False
    return True


# Style requirement 4 (prompts/style_judge.txt: nothing that does not read well aloud), where a machine can see it.
_WRITTEN_FORMS = (
    (
        re.compile(r"^[ \t]*(?:[-*•·+][ \t]+|\d{1,2}[.)][ \t]+|\d{1,2}、|[一二三四五六七八九十]{1,3}、)\S", re.M),
        "a list",
    ),
    (re.compile(r"^[ \t]*\|.*\|[ \t]*$", re.MULTILINE), "a table"),
    (re.compile(r"```|`[^`\n]+`"), "code"),
    (re.compile(r"^[ \t]*#{1,6}[ \t]", re.MULTILINE), "a heading"),
    (re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__"), "bold markup"),
    (re.compile("[\U0001f300-\U0001faff\u2600-\u27bf]"), "an emoji"),
)


def written_form(reply: str) -> str | None:
    """What in ``reply`` cannot be read aloud (a list, a table, code, a heading, bold markup, an emoji), or None.

    Such a reply fails style requirement 4, so its style s(y) (Eq. 4: all seven requirements) is 0 for sure."""
    return next((name for pattern, name in _WRITTEN_FORMS if pattern.search(reply)), None)


def rule_style_verdict(reply: str) -> tuple[bool | None, str]:
    """(passes, reason): the rule judge's style check. It can only prove a failure (:func:`written_form`); the
    other requirements (a natural voice, brevity, fluent speech) need a reader, so otherwise it decides nothing
    (None), never a guessed pass."""
    form = written_form(reply)
    if form is not None:
        return False, f"requirement 4: the reply holds {form}"
    return None, "undecided: the rule judge proves style failures only (lists, tables, code, emoji), never a pass"


def rule_verdict(instance: Instance, reply: str) -> tuple[list[int] | None, str]:
    """(hits, reason): the criteria met by ``reply``, or None with the reason when a criterion has no check."""
    unchecked = [n for n, c in enumerate(instance.rubric, start=1) if c.check is None]
    if unchecked:
        return None, f"criteria {unchecked} carry no machine check: the rule judge cannot decide them"
    hits = [n for n, c in enumerate(instance.rubric, start=1) if c.check is not None and check_holds(c.check, reply)]
    return hits, "decided by machine checks"
