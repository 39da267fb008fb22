"""Validate chat bodies with SGLang's own request model (run by SGLang's Python, not omnivchat's). Its package
__init__ imports torch and triton, which its OpenAI protocol module does not need: the package is registered empty
first, then the protocol module imported. Reads a JSON list of {name, body}; prints a JSON list of {name, ok, error}.
SGLang ignores a field it does not know: the fields it dropped are reported too."""

import importlib.util
import json
import sys
import types
from pathlib import Path

spec = importlib.util.find_spec("sglang")
package = types.ModuleType("sglang")
package.__path__ = list(spec.submodule_search_locations)
sys.modules["sglang"] = package

from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest  # noqa: E402

results = []
for case in json.loads(Path(sys.argv[1]).read_text(encoding="utf-8")):
    try:
        request = ChatCompletionRequest.model_validate(case["body"])
        dropped = sorted(set(case["body"]) - set(type(request).model_fields))
        results.append({"name": case["name"], "ok": True, "dropped": dropped})
    except Exception as err:
        results.append({"name": case["name"], "ok": False, "error": f"{type(err).__name__}: {err}"[:500]})
print(json.dumps(results))
