from dataclasses import dataclass, field

import pytest

from workbench.capability import vision
from workbench.capability.vision import (
    NoVisionLinkError,
    link_id,
    messages_carry_images,
    model_sees_images,
    require_seeing_links,
    seeing_links,
)
from workbench.types import messages_carry_images as types_messages_carry_images
from workbench.types import user


@dataclass
class Provider:
    """Not a test double of a provider's calls (no `ScriptedProvider`): the shape the vision
    rules read from any object, so any object with these attributes must do."""

    name: str = "groq"
    models: list = field(default_factory=list)
    vision_models: list | None = None


@dataclass
class Model:
    id: str
    vision: bool | None = None


def test_without_vision_models_or_flags_everything_is_unknown():
    p = Provider(models=["a", "b"])
    assert model_sees_images(p, "a") == "unknown"
    assert model_sees_images(object(), "a") == "unknown"


def test_vision_models_rule_of_ai_kit():
    p = Provider(models=["llava", "llama"], vision_models=["llava"])
    assert model_sees_images(p, "llava") == "yes"
    assert model_sees_images(p, "  llava ") == "yes"  # trimmed
    assert model_sees_images(p, "llama") == "no"
    assert model_sees_images(p, "env-override-model") == "unknown"


def test_a_models_own_flag_answers_first():
    p = Provider(models=[Model("a", True), Model("b", False), Model("c")], vision_models=["b"])
    assert model_sees_images(p, "a") == "yes"
    assert model_sees_images(p, "b") == "no"  # own False beats the provider list
    assert model_sees_images(p, "c") == "no"  # None: declared, not in vision_models
    assert model_sees_images(p, Model("c", True)) == "yes"  # the passed object's flag
    assert model_sees_images(p, Model("z")) == "unknown"


def test_dict_providers_and_models_work_too():
    p = {"models": [{"id": "a", "vision": True}, {"id": "b"}], "vision_models": []}
    assert model_sees_images(p, "a") == "yes"
    assert model_sees_images(p, "b") == "no"
    assert model_sees_images(p, {"id": "q", "vision": False}) == "no"


@pytest.mark.parametrize("model", ["", "  ", None, 3])
def test_no_model_id_is_unknown(model):
    assert model_sees_images(Provider(models=[""], vision_models=[""]), model) == "unknown"


def test_seeing_links_keeps_yes_and_unknown_in_order():
    p = Provider(models=["blind", "eyes"], vision_models=["eyes"])
    links = [(p, "blind"), (p, "new"), (p, "eyes")]
    assert seeing_links(links) == [(p, "new"), (p, "eyes")]


def test_messages_carry_images_is_the_shared_one():
    assert messages_carry_images is types_messages_carry_images
    assert vision.messages_carry_images([user("hi", b"\x89PNG")])
    assert not vision.messages_carry_images([user("hi")])


def test_require_seeing_links_without_images_passes_everything():
    p = Provider(models=["blind"], vision_models=[])
    assert require_seeing_links([(p, "blind")], [user("hi")]) == [(p, "blind")]


def test_require_seeing_links_raises_naming_the_blind():
    p = Provider(name="groq", models=["a", "b"], vision_models=[])
    with pytest.raises(NoVisionLinkError) as info:
        g = Provider(name="gemini", models=[Model("b", False)])
        require_seeing_links([(p, "a"), (g, "b")], [user("what is this?", b"img")])
    assert info.value.blind == ["groq:a", "gemini:b"]
    assert info.value.code == "AI_NO_VISION_LINK"
    assert "groq:a, gemini:b" in str(info.value)


def test_require_seeing_links_with_an_empty_chain():
    with pytest.raises(NoVisionLinkError) as info:
        require_seeing_links([], [user("x", "https://example.com/a.png")])
    assert info.value.blind == []
    assert "chain is empty" in str(info.value)


def test_require_seeing_links_returns_only_those_that_may_see():
    p = Provider(models=["a", "b"], vision_models=["b"])
    assert require_seeing_links([(p, "a"), (p, "b")], [user("x", b"i")]) == [(p, "b")]


def test_link_id_reads_names():
    assert link_id(("groq", "m")) == "groq:m"
    assert link_id((Provider(name="or"), Model("x"))) == "or:x"
    assert link_id((object(), "x")) == "?:x"
