"""Tool calls written in prose, in every format open models are trained on, and native calls
read off the wire.

Open-weight models served without a tool-call parser (llama.cpp without a chat template, vLLM
or SGLang without their parser flags, many free hosted endpoints) return their calls as text
in the format they were trained on. A native-only read hands that text back as a finished
answer, and the turn reports a lookup that never happened — so every family below is read,
through the one entry point `read_text_tool_calls(text, valid_names)`, which the adapters call
after `strip_reasoning`.

The other half of the rule matters as much: only these *shapes* count, and only under an
offered name. A mention of a tool ("use the get_weather tool", `get_weather(city)` in an
explanation, a ```python example, a JSON object of data, a tool definition echoed back) is not
a call, because a false positive records a capability the model does not have. Unreadable
arguments keep the call, marked (`not_json`, `not_object`, or `truncated` for a call cut off
at the end of the reply); the family's markup, and only its markup, leaves the text.

One module per family (two share a module where only the delimiters differ), listed in
`registry.FAMILIES` in the order that settles overlaps:

- `deepseek` (V3, R1, V3.1; `deepseek_dsml` for V3.2), `kimi` (K2), `step3`, `minimax_m2`;
- `seed_oss`, `qwen3_xml` (Qwen3-Coder `<function=…><parameter=…>`), `glm` (4.5–4.7) and
  `hunyuan` (v3) with `<arg_key>/<arg_value>` pairs;
- `jamba` (and Hunyuan-A13B), `minimax` (M1), `hermes` (Hermes/Qwen `<tool_call>{json}`),
  `longcat`, `internlm`, `granite`, `granite_20b`, `gigachat`, `apertus`, `cohere`, `phi4_mini`;
- `function_gemma`, `gemma4`; `llama4_pythonic`, `lfm2`, `olmo`, `gemma_tool_code`;
- `mistral` (`[TOOL_CALLS]` lists, `name{…}`, `name[ARGS]{…}`), `llama3_json` (incl.
  `<|python_tag|>`), `xlam` (JSON lists), `pythonic` (`[f(a=1)]`), `tool_lines` (the
  `TOOL:`/`ARGS:` lines we ask for), `harmony` (gpt-oss).
"""

from __future__ import annotations

from workbench.providers.protocols.families import (
    FAMILIES,
    family_example,
    family_names,
    family_takes_one_list,
    read_text_tool_calls,
)
from workbench.providers.protocols.jsonish import compact_json, match_object, safe_json_object
from workbench.providers.protocols.native_calls import (
    merge_tool_calls,
    native_tool_call,
    tool_names_from,
    tool_schemas_from,
)
from workbench.providers.protocols.tool_lines import (
    LINE_RE,
    TEXT_TOOL_PROTOCOL_HINT,
    parse_text_tool_calls,
    strip_tool_call_lines,
)

__all__ = [
    "FAMILIES",
    "LINE_RE",
    "TEXT_TOOL_PROTOCOL_HINT",
    "compact_json",
    "family_example",
    "family_names",
    "family_takes_one_list",
    "match_object",
    "merge_tool_calls",
    "native_tool_call",
    "parse_text_tool_calls",
    "read_text_tool_calls",
    "safe_json_object",
    "strip_tool_call_lines",
    "tool_names_from",
    "tool_schemas_from",
]
