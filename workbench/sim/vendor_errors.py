"""Error answers in each vendor's own words and shapes.

A `SimError` is surface-neutral; `render()` turns it into the OpenAI shape
(`{"error": {"message", "type", "param", "code"}}`) or the Google shape
(`{"error": {"code", "message", "status"}}`), unless it carries a vendor body of its own
(the rate-limit bodies of Groq, OpenRouter and Gemini do).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}

# Surfaces: "openai" (/v1), "gemini-openai" (/v1beta/openai), "gemini" (native).
GOOGLE_SURFACES = ("gemini", "gemini-openai")


@dataclass(slots=True)
class SimError(Exception):
    status: int
    message: str
    type: str = "invalid_request_error"
    code: str | None = None
    param: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None  # a vendor body that wins over the surface's shape

    def render(self, surface: str) -> tuple[int, Any, dict[str, str]]:
        if self.body is not None:
            return self.status, self.body, dict(self.headers)
        if surface in GOOGLE_SURFACES:
            body = {
                "error": {
                    "code": self.status,
                    "message": self.message,
                    "status": GOOGLE_STATUS.get(self.status, "UNKNOWN"),
                }
            }
        else:
            body = {
                "error": {
                    "message": self.message,
                    "type": self.type,
                    "param": self.param,
                    "code": self.code,
                }
            }
        return self.status, body, dict(self.headers)


def unknown_model(model: str, surface: str) -> SimError:
    if surface in GOOGLE_SURFACES:
        return SimError(
            404,
            f"models/{model} is not found for API version v1beta, or is not "
            "supported for generateContent. Call ListModels to see the list of "
            "available models and their supported methods.",
        )
    return SimError(404, f"The model `{model}` does not exist", code="model_not_found")


def missing_key(surface: str) -> SimError:
    if surface in GOOGLE_SURFACES:
        return SimError(
            403,
            "Method doesn't allow unregistered callers (callers without "
            "established identity). Please use API Key or other form of API "
            "consumer identity to call this API.",
        )
    return SimError(
        401,
        "You didn't provide an API key. You need to provide your API key in "
        "an Authorization header using Bearer auth (i.e. Authorization: Bearer "
        "YOUR_KEY).",
        code="invalid_api_key",
    )


def bad_request(message: str, param: str | None = None) -> SimError:
    return SimError(400, message, param=param)


def tools_rejected(model: str) -> SimError:
    return SimError(
        400,
        f"tools are not supported for this model ({model})",
        param="tools",
        code="tools_unsupported",
    )


def blind(model: str) -> SimError:
    return SimError(
        400,
        f"image input is not supported by this model ({model})",
        param="messages",
        code="image_input_unsupported",
    )


def system_refused(model: str) -> SimError:
    return SimError(
        400, f"Developer instruction is not enabled for models/{model}", param="messages"
    )


def context_length(limit: int, used: int, surface: str) -> SimError:
    if surface == "gemini":
        return SimError(
            400,
            f"The input token count ({used}) exceeds the maximum number of "
            f"tokens allowed ({limit}).",
        )
    return SimError(
        400,
        f"This model's maximum context length is {limit} tokens. However, your "
        f"messages resulted in {used} tokens. Please reduce the length of the "
        "messages.",
        param="messages",
        code="context_length_exceeded",
    )


def server_error(status: int) -> SimError:
    if status == 500:
        return SimError(
            500,
            "Internal server error: the simulated model crashed.",
            type="server_error",
            code="internal_error",
        )
    if status == 502:
        return SimError(
            502,
            "Provider returned error: bad gateway (simulated).",
            type="server_error",
            code="bad_gateway",
        )
    if status == 503:
        return SimError(
            503,
            "The model is overloaded. Please try again later.",
            type="server_error",
            code="service_unavailable",
        )
    return SimError(status, "Request timed out.", type="timeout", code="timeout")


MALFORMED_BODY = (
    "<!DOCTYPE html><html><head><title>502 upstream hiccup</title></head>"
    "<body><h1>Something went wrong</h1><p>The simulated gateway answered 200 with "
    "a page instead of JSON.</p></body></html>"
)
