"""The answer engine and the PNG reader, without HTTP."""

from __future__ import annotations

import zlib

import pytest

from workbench.sim.answers import capitalised_names, choose_tool, fill_args, prose
from workbench.sim.conversation import Tool
from workbench.sim.png import PngError, decode_png, dominant_colour, encode_png


def test_prose_obeys_simple_instructions() -> None:
    assert prose("Reply with exactly: banana", []) == "banana"
    assert prose('Reply with exactly: "two words"', []) == "two words"
    assert prose("What is the capital of Japan? Answer with one word.", []) == "Tokyo"
    assert prose("What is 12 * 3?", []).endswith("Answer: 36")
    assert prose("Is the sky blue? Answer yes or no.", []) == "Yes."
    assert prose("Tell me about Berlin", []).startswith('You asked: "Tell me about Berlin"')


def test_tool_choice_and_argument_filling() -> None:
    tools = [
        Tool("send_email", "Send an email", {"type": "object"}),
        Tool(
            "get_weather",
            "Current weather for a city",
            {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "unit": {"type": "string", "enum": ["c", "f"]},
                    "alerts": {"type": "boolean"},
                },
                "required": ["city", "days", "unit", "alerts"],
            },
        ),
    ]
    prompt = "What's the weather forecast in New York for 3 days?"
    tool = choose_tool(prompt, tools)
    assert tool.name == "get_weather"
    names = capitalised_names(prompt)
    assert names == ["New York"]
    args = fill_args(tool.parameters, names, ["3"])
    assert args == {"city": "New York", "days": 3, "unit": "c", "alerts": True}
    assert choose_tool("zzz", tools).name == "send_email"  # fallback: the first tool
    assert fill_args({"properties": {"q": {"type": "string"}}}, [], []) == {"q": "example"}


@pytest.mark.parametrize(
    ("rgb", "name"),
    [
        ((255, 0, 0), "red"),
        ((0, 200, 0), "green"),
        ((0, 0, 255), "blue"),
        ((255, 255, 0), "yellow"),
        ((0, 0, 0), "black"),
        ((255, 255, 255), "white"),
    ],
)
def test_dominant_colour_of_solid_png(rgb: tuple[int, int, int], name: str) -> None:
    assert dominant_colour(encode_png(5, 4, rgb)) == name


def test_decode_png_with_filters_and_alpha() -> None:
    # 2x2 RGBA, rows filtered with Sub (1) and Up (2): mostly opaque red, one blue pixel.
    rows = [bytes([255, 0, 0, 255, 255, 0, 0, 255]), bytes([255, 0, 0, 255, 0, 0, 255, 255])]
    raw = bytes([1]) + bytes([255, 0, 0, 255, 0, 0, 0, 0])  # Sub: second pixel = delta 0
    up = bytes((rows[1][i] - rows[0][i]) & 0xFF for i in range(8))
    raw += bytes([2]) + up
    import struct

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body))
            + kind
            + body
            + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
        )

    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 6, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )
    w, h, pixels = decode_png(png)
    assert (w, h) == (2, 2)
    assert pixels == [(255, 0, 0), (255, 0, 0), (255, 0, 0), (0, 0, 255)]
    assert dominant_colour(png) == "red"
    with pytest.raises(PngError):
        decode_png(b"GIF89a...")
