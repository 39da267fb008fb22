"""The one JSONL line reader (omnivchat._files.read_json_lines): every bad line named, in order, and skipped."""

from __future__ import annotations

from omnivchat._files import read_json_lines


def test_each_bad_line_is_named_and_the_good_ones_come_through() -> None:
    data = b'\xef\xbb\xbf{"a": 1}\n\n  \n{oops\n[1, 2]\n\xff\xfe\n' + b"[" * 100_000 + b'\n{"b": 2}\n'
    problems: list[str] = []
    got = list(read_json_lines(data, "x.jsonl", problems))
    assert got == [(1, {"a": 1}), (8, {"b": 2})]  # the byte-order mark dropped, blank lines skipped
    assert problems[0].startswith("x.jsonl:4: not valid JSON (") and "at column 2" in problems[0]
    assert problems[1:3] == [
        "x.jsonl:5: must be a JSON object, got list",
        "x.jsonl:6: not UTF-8 text; save the file as UTF-8",
    ]
    assert problems[3] == "x.jsonl:7: not valid JSON (nested too deeply to read)"


def test_wording_and_any_json_value() -> None:
    problems: list[str] = []
    data = b"[1]\n{\n"
    got = list(read_json_lines(data, "m", problems, not_json="not JSON", not_object=None))
    assert got == [(1, [1])]
    assert problems == ["m:2: not JSON (Expecting property name enclosed in double quotes at column 2)"]


def test_a_problem_is_recorded_before_a_later_line_is_yielded() -> None:
    problems: list[str] = []
    for number, _ in read_json_lines(b'{\n{"ok": 1}\n', "f", problems):
        assert number == 2 and problems == [
            "f:1: not valid JSON (Expecting property name enclosed in double quotes at column 2)"
        ]
