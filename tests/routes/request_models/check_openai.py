"""Validate chat bodies with the openai SDK's own request types (run by a Python with the SDK, not omnivchat's):
the streaming create params, with extra keys refused (the TypedDicts would drop them silently), every message and
content part checked (the SDK's iterables are lazy: they are walked here). Reads a JSON list of {name, body}; prints
a JSON list of {name, ok, error}."""

import json
import sys
from pathlib import Path

from openai.types.chat import completion_create_params
from pydantic import ConfigDict, TypeAdapter

Streaming = completion_create_params.CompletionCreateParamsStreaming
ADAPTER = TypeAdapter(tuple[Streaming], config=ConfigDict(extra="forbid"))


def check(body):
    params = ADAPTER.validate_python((body,))[0]
    for message in params["messages"]:
        content = dict(message).get("content")
        if content is not None and not isinstance(content, str):
            [dict(part) for part in content]


results = []
for case in json.loads(Path(sys.argv[1]).read_text(encoding="utf-8")):
    try:
        check(case["body"])
        results.append({"name": case["name"], "ok": True})
    except Exception as err:
        results.append({"name": case["name"], "ok": False, "error": f"{type(err).__name__}: {err}"[:500]})
print(json.dumps(results))
