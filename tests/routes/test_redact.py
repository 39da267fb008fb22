"""The redactor: the key in every form a server may echo it, redacted before any cut."""

from __future__ import annotations

import base64
import html
import json
import secrets
import time
from urllib.parse import quote, quote_plus

import pytest
from hypothesis import given
from hypothesis import strategies as st

from omnivchat.routes import ChatResponse, Redactor, RouteError, Secret, redact
from omnivchat.routes._redact import MIN_FRAGMENT


def new_key() -> str:
    return "sk-test-" + secrets.token_urlsafe(24)


@pytest.fixture
def key() -> str:
    return new_key()


def test_the_key_and_bearer_key_anywhere_any_case(key):
    r = Redactor(Secret(key))
    assert r.text(f"Incorrect API key: {key}.") == "Incorrect API key: ***."
    assert r.text(f"Authorization: Bearer {key}") == "Authorization: Bearer ***"
    assert r.text(f"{key.upper()} and {key.lower()}") == "*** and ***"
    assert r.text(f"{key}{key}") == "******"


def test_no_key_changes_nothing():
    assert Redactor(None).text("anything sk-test-x") == "anything sk-test-x"
    assert Redactor(Secret("")).text("anything") == "anything"
    assert redact("same", None) == "same"


def test_encoded_forms():
    key = 'sk+test/K3y=with&odd"chars<>' + secrets.token_hex(8)
    r = Redactor(Secret(key))
    for form in (quote(key, safe=""), quote(key), quote_plus(key), quote(key, safe="").lower()):
        assert r.text(f"url {form} end") == "url *** end", form
    assert key not in r.text(json.dumps({"m": key}))
    assert json.loads(r.text(json.dumps({"m": key}))) == {"m": "***"}
    assert r.text(html.escape(key)) == "***"
    assert r.text(json.dumps(key).replace("/", "\\/")) == '"***"'


@pytest.mark.parametrize("prefix", ["", "x", "xy", "Bearer ", "user:", '{"authorization": "Bearer '])
@pytest.mark.parametrize("encode", [base64.b64encode, base64.urlsafe_b64encode])
def test_base64_at_every_alignment(key, prefix, encode):
    r = Redactor(Secret(key))
    encoded = encode((prefix + key + " trailing").encode()).decode()
    out = r.text(f"echo: {encoded}")
    assert "***" in out
    # At most two bytes of the key stay encoded at each end, mixed with their neighbours.
    for core in (base64.b64encode(key.encode()[s : s + 6]).decode() for s in range(0, len(key) - 6, 3)):
        assert core not in out


def test_runs_of_the_key_cut_by_someone_else(key):
    r = Redactor(Secret(key))
    half = key[: len(key) // 2]
    tail = key[-MIN_FRAGMENT:]
    assert r.text(f"invalid key '{half}...'") == "invalid key '***...'"
    assert r.text(f"ends with {tail}") == "ends with ***"
    assert r.text(f"pydantic: input_value='{key[:14]}...{key[-13:]}'") == "pydantic: input_value='***...***'"
    short = key[3 : 3 + MIN_FRAGMENT - 1]  # shorter pieces are left: "sk-proj-" is shared by every OpenAI key
    assert r.text(f"short {short}") == f"short {short}"
    assert r.text("keys look like sk-test-...") == "keys look like sk-test-..."


def test_cut_redacts_first_so_a_key_across_the_cut_leaves_nothing(key):
    r = Redactor(Secret(key))
    for before in range(1, len(key)):  # characters of the key that fall before the cut
        text = "x" * 50 + key + " and more"
        cut = r.cut(text, 50 + before)
        assert cut.startswith("x" * 50) and "*** and more".startswith(cut[50:]), before
    # Cutting first would keep a piece too short to be recognised as the key afterwards.
    text = "x" * 50 + key
    assert redact(text[:60], Secret(key)).endswith(key[:10])


def test_data_redacts_every_string_and_dict_key(key):
    r = Redactor(Secret(key))
    usage = {"prompt_tokens": 3, key: {"details": [f"Bearer {key}", 4, None, True]}, "echo": (key, 1.5)}
    assert r.data(usage) == {
        "prompt_tokens": 3,
        "***": {"details": ["Bearer ***", 4, None, True]},
        "echo": ["***", 1.5],
    }


def test_error_and_response(key):
    r = Redactor(Secret(key))
    err = r.error(RouteError("length", f"cut {key}", http_status=200, retry_after=1.5, partial_text=f"so {key}"))
    assert (err.kind, err.message, str(err), err.http_status, err.retry_after, err.partial_text) == (
        "length",
        "cut ***",
        "cut ***",
        200,
        1.5,
        "so ***",
    )
    response = ChatResponse(
        text=f"your key is {key}", reasoning=key, model=key, usage={"echo": key, "total_tokens": 4}, http_status=200
    )
    clean = r.response(response)
    assert (clean.text, clean.reasoning, clean.model, clean.usage) == (
        "your key is ***",
        "***",
        "***",
        {"echo": "***", "total_tokens": 4},
    )
    assert key not in repr(r) and key not in clean.model_dump_json()


def test_fast_on_a_large_body(key):
    r = Redactor(Secret(key))
    body = ("lorem ipsum sk-test- dolor " * 40_000) + key
    started = time.perf_counter()
    out = r.text(body)
    assert out.endswith("***") and time.perf_counter() - started < 2.0


def test_a_key_spelled_out_reversed_or_split_over_lines_is_masked_whole(key):
    r = Redactor(Secret(key))
    assert r.text(f"key: {' '.join(key)}!") == "key: ***!"
    assert r.text(f"key: {key[::-1]}") == "key: ***"
    assert r.text("key:\n" + "\n".join(key[i : i + 5] for i in range(0, len(key), 5))) == "key:\n***"
    assert r.text(" . ".join(key.upper())) == "***"


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=300), st.integers(0, 60))
def test_text_without_the_key_is_never_altered(text, drop):
    # The key's own characters all but one, spaced, reversed, shuffled into the text: not the key, kept as it is.
    key = "sk-test-Zq8xW3vR7pL2mN5bK9cH4jT6"
    partial = key[: drop % len(key)] + key[drop % len(key) + 1 :]
    r = Redactor(Secret(key))
    runs = [key[i : i + MIN_FRAGMENT].lower() for i in range(len(key) - MIN_FRAGMENT + 1)]
    for sample in (text, " ".join(partial), partial[::-1], text + partial + text):
        # a run of 12 characters of the key is masked by design (a key someone else cut); nothing else is touched
        assert r.text(sample) == sample or any(run in sample.lower() for run in runs)
