"""Validate chat bodies with vLLM's own request code (run by vLLM's Python, not omnivchat's): its request model,
then every content part through its own part parser (with a recorder where it would fetch the media), which refuses a
part type it does not take. Reads a JSON list of {name, body}; prints a JSON list of {name, ok, error}."""

import json
import sys
from pathlib import Path
from types import SimpleNamespace

from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.renderers.chat_utils.chat_message import parse_chat_message_content_part


class Recorder:
    """Stands where vLLM's multimodal parser would fetch and decode each media item: records the call."""

    model_config = SimpleNamespace(enable_prompt_embeds=False)

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        if name.startswith("parse_"):
            return lambda *args, **kwargs: self.calls.append(name)
        raise AttributeError(name)


def check(body):
    request = ChatCompletionRequest.model_validate(body)
    media = Recorder()
    for message in request.messages:
        content = message.get("content") if isinstance(message, dict) else None
        for part in content if isinstance(content, list) else []:
            parse_chat_message_content_part(part, media, mm_tracker=None, wrap_dicts=True, interleave_strings=False)
    return media.calls


results = []
for case in json.loads(Path(sys.argv[1]).read_text(encoding="utf-8")):
    try:
        parsed = check(case["body"])
        results.append({"name": case["name"], "ok": True, "media": parsed})
    except Exception as err:  # what the server would answer 400 with
        results.append({"name": case["name"], "ok": False, "error": f"{type(err).__name__}: {err}"[:500]})
print(json.dumps(results))
