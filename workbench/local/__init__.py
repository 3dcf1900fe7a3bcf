"""A real model, offline (the `local` extra): SmolLM2-135M-Instruct served by llama.cpp on
loopback as an OpenAI-compatible endpoint, so the same adapter that talks to a vendor talks
to it.

    if local_model_available():
        async with LocalModel() as local:            # a child process on a free port
            model = {"id": MODEL_ID, "vision": False}
            provider = openai_compatible_provider("local", local.base_url, None, [model])

`LocalModel(tools=True)` (`workbench local serve --tools`) answers requests that carry tools
with native OpenAI `tool_calls` (llama.cpp's chatml-function-calling, in function_calling.py);
the default leaves tools to the prompt.
"""

from workbench.local.server import MODEL_ID, LocalModel, local_model_available

__all__ = ["MODEL_ID", "LocalModel", "local_model_available"]
