"""parse_verdict: a table of judge outputs and the parse each must give."""

import pytest

from omnivchat.judges import parse_verdict

CASES = [
    ('{"hits": [1, 3], "reasoning": "ok"}', [1, 3]),
    ('{"hits": [3, 1, 3]}', [1, 3]),  # sorted, distinct
    ('{"hits": []}', []),  # nothing met is a verdict
    ('```json\n{"hits": [2], "reasoning": "x"}\n```', [2]),
    ('```\n{"hits": [2]}\n```', [2]),
    ('Looking at each criterion... Final answer:\n{"hits": [1, 2, 4], "reasoning": "4 ok"}', [1, 2, 4]),
    ('{"hits": [1, 2], "reasoning": "criterion {3} is not met"}', [1, 2]),  # braces inside strings
    ('{"hits": [1], "misses": [2, 3]}', [1]),
    ('Example: {"hits": [1]} then the real one {"hits": [1]}', [1]),  # agreeing repeats
    ('{"verdict": {"hits": [1]}}', None),  # hits must be at the top of an object we read
    ("", None),
    ("The reply meets criteria 1 and 2.", None),
    ('{"reasoning": "no hits key"}', None),
    ('{"hits": "1,2"}', None),
    ('{"hits": ["1", "2"]}', None),
    ('{"hits": [1.0, 2]}', None),
    ('{"hits": [true]}', None),
    ('{"hits": [0, 1]}', None),  # out of range
    ('{"hits": [1, 6]}', None),
    ('{"hits": [1, 2], "misses": [2]}', None),  # contradicts itself
    ('{"hits": [1], "not_met": "2"}', None),
    ('{"hits": [1]} ... on reflection {"hits": [1, 2]}', None),  # two verdicts that disagree
    ('{"hits": [1, 2', None),  # truncated
    ("hits: [1, 2]", None),  # not JSON
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_parse_verdict(text, expected):
    assert parse_verdict(text, 5) == expected
