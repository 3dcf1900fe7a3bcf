"""Detectors for the masker: e-mail and phone patterns, and a small local name detector.

The detector is deliberately modest (a first-name list and a capitalised surname): a
real NER must be a local one, injected (a remote one would send out what it masks), and the workbench must run offline. Users
plug their own (`ReversibleMasker(detect=...)`) where it matters.
"""

from __future__ import annotations

import re

from workbench.text.masker import Detection

EMAIL = r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
# International or French-style numbers: 8+ digits in groups; never a year or a price.
PHONE = r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?\(?\d{1,4}\)?(?:[ .-]\d{2,4}){2,5}(?![\w])"
PATTERNS = (("EMAIL", EMAIL), ("PHONE", PHONE))

FIRST_NAMES = frozenset(
    """olivia daniel nicolas emma julie thomas antoine sarah manon michael james mary john
    patricia robert jennifer david linda william elizabeth richard susan joseph jessica
    charles karen christopher lisa matthew nancy anthony betty mark sandra paul ashley
    steven kimberly andrew donna kevin emily brian michelle george laura edward amanda
    ronald melissa timothy stephanie jason rebecca jeffrey sharon ryan cynthia jacob kathleen
    gary amy jean pierre louis marie jeanne camille lucas hugo chloe lea ines jules gabriel
    sophie claire lucien theo margaux mathilde arthur raphael alice louise adam zoe""".split()
)
_WORD = re.compile(r"[A-ZÀ-Ý][a-zà-ÿ'-]+")


def detect_names(text: str) -> list[Detection]:
    """A known first name followed by a capitalised word is a person (0.9); a known first name
    alone is only a guess (0.5) — under the masker's 0.6 threshold, so it is ignored."""
    words = list(_WORD.finditer(text))
    found: list[Detection] = []
    for i, word in enumerate(words):
        if word.group().lower() not in FIRST_NAMES:
            continue
        after = words[i + 1] if i + 1 < len(words) else None
        if after is not None and text[word.end() : after.start()].isspace():
            found.append(Detection(word.start(), after.end(), "PERSON", 0.9))
        else:
            found.append(Detection(word.start(), word.end(), "PERSON", 0.5))
    return found
