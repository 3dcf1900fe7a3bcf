"""BFCL's prompting mode: the system prompt its prompt-mode handlers send, word for word.

A model without native tools is scored on BFCL by being told, in the system prompt, to
answer with a Python list of calls and shown the function docs as JSON. A prompt-mode score
is only comparable when the model read the same instructions, so this is BFCL's default
prompt (classic style, plain text, JSON docs, no tags), including its missing space after
the first sentence.
"""

from __future__ import annotations

import json
from typing import Any

_PERSONA = "You are an expert in composing functions."
_TASK = (
    "You are given a question and a set of possible functions. Based on the question, you "
    "will need to make one or more function/tool calls to achieve the purpose. If none of the "
    "functions can be used, point it out. If the given question lacks the parameters required "
    "by the function, also point it out."
)
_FORMAT = (
    "You should only return the function calls in your response.\n\nIf you decide to invoke "
    "any of the function(s), you MUST put it in the format of [func_name1(params_name1="
    "params_value1, params_name2=params_value2...), func_name2(params)].  You SHOULD NOT "
    "include any other text in the response."
)
_TURNS = (
    "At each turn, you should try your best to complete the tasks requested by the user within "
    "the current turn. Continue to output functions to call until you have fulfilled the "
    "user's request to the best of your ability. Once you have no more functions to call, the "
    "system will consider the current turn complete and proceed to the next turn or task."
)


def prompt_mode_system(docs: list[dict[str, Any]]) -> str:
    """BFCL's default prompting-mode system prompt over `docs` (its language-hinted docs).
    A question's own system message follows it, after a blank line, as BFCL places it."""
    listing = json.dumps(docs, indent=4)
    tools = f"Here is a list of functions in json format that you can invoke.\n{listing}\n"
    return f"{_PERSONA}{_TASK}\n\n{_FORMAT}\n\n{_TURNS}\n\n{tools}"
