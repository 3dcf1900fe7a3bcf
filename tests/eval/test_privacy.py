"""The workbench's masker: registry, patterns, and a local detector whose guesses are weighed."""

from workbench.eval.dataset.masking import masker_for
from workbench.eval.dataset.prompt_set import load_dataset
from workbench.text.detectors import detect_names


def test_a_first_name_with_a_surname_is_a_person_and_a_lone_first_name_is_only_a_guess():
    hits = detect_names("Remind Olivia Brooks, then Olivia.")
    assert [(h.score, "Remind Olivia Brooks, then Olivia."[h.start : h.end]) for h in hits] == [
        (0.9, "Olivia Brooks"),
        (0.5, "Olivia"),
    ]


def test_every_item_of_the_masking_set_is_masked_by_its_masker(tmp_path):
    dataset = load_dataset("datasets/masking.jsonl")
    for item in dataset.items:
        masked = masker_for(item).mask(item.prompt)
        assert not [v for v in item.sensitive if v in masked], (item.id, masked)


def test_a_guess_under_the_threshold_is_not_masked():
    item = load_dataset("datasets/masking.jsonl").items[0]
    masker = masker_for(item)
    assert masker.mask("Thanks, Olivia.") == "Thanks, Olivia."  # 0.5 < 0.6: ignored
    assert "Olivia Brooks" not in masker.mask("Thanks, Olivia Brooks.")
