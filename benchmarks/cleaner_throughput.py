"""How fast `ResponseCleaner.clean` reads a reply, in MB/s of input, on 1 MB inputs.

Inputs (each about 1 MB of UTF-8, built deterministically):

  prose        paragraphs in English with line labels at line starts ("Answer: …",
               "**Introduction** :"), the same words mid-sentence, a `<think>` block every
               20 paragraphs, bullets, a fenced code block every 50, a reasoning draft
               ("Wait, …") at the start (so the draft rule scans every line but keeps
               nearly all) and three stacked closing phrases at the end
  prose_fr     the same shape in French
  json         one JSON reply: {"title", "introduction", "sections": [{"name",
               "description", "items": [...]}, ...]} (pretty-printed)
  json_fenced  the same JSON inside a ```json fence, after a <think> block

Each input is cleaned by the cleaner built from `datasets/cleaning_vocabulary.json`, and by
`ResponseCleaner()` (no vocabulary: structural cleaning only). One warm-up, then `--repeat`
timed runs; the table reports the median and best throughput.

    .venv/bin/python benchmarks/cleaner_throughput.py [--repeat 5] [--size 1000000]

Writes benchmarks/results/cleaner.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workbench.text.cleaner import ResponseCleaner, load_vocabulary

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results"

EN_PARAGRAPHS = [
    "Answer: The museum opens at nine and closes at six on weekdays.",
    "**Introduction** :\nSolar panels turn light into electricity without moving parts.",
    "The answer: it depends on the weather, and the forecast changes quickly in spring.",
    "- **Key features:** fast, small, free\n- **Price:** free for students\n- Works offline",
    "Summary: Sleep seven to nine hours. In summary: adults need less than teenagers do.",
    "Trains leave every twenty minutes; the last one is at 23:40 from platform 4.",
]
FR_PARAGRAPHS = [
    "Réponse : Le musée ouvre à neuf heures et ferme à dix-huit heures en semaine.",
    "**Introduction** :\nLe vélo est bon pour la santé et pour la ville.",
    "La réponse : tout dépend de la météo, qui change vite au printemps.",
    "- **Titre :** Cuisine facile\n- Ingrédients : farine, œufs, lait\n- Cuisson : dix minutes",
    "Résumé : Dormez sept à neuf heures. En résumé : les adultes dorment moins.",
    "Les trains partent toutes les vingt minutes ; le dernier part à 23 h 40.",
]


def _prose(paragraphs: list[str], size: int, draft: str, closing: str) -> str:
    parts: list[str] = []
    n = 0
    total = 0
    while total < size:
        p = paragraphs[n % len(paragraphs)]
        if n % 20 == 0:
            p = f"<think>Plan paragraph {n}: keep it short.</think>\n{p}"
        if n % 50 == 0:
            p += "\n\n```python\nanswer = {'value': 42}\n```"
        parts.append(p)
        total += len(p.encode()) + 2
        n += 1
    parts.append(closing)
    return draft + "\n\n" + "\n\n".join(parts)


def _json(size: int) -> str:
    sections = []
    doc: dict[str, Any] = {
        "title": "A long guide",
        "introduction": "Everything about the city, section by section.",
        "sections": sections,
    }
    i = 0
    while len(json.dumps(doc, indent=2).encode()) < size:
        for _ in range(200):
            sections.append(
                {
                    "name": f"Section {i}",
                    "description": "A short description of what this part covers in detail.",
                    "items": [f"Point {i}.{k} with a few words" for k in range(5)],
                }
            )
            i += 1
    return json.dumps(doc, indent=2, ensure_ascii=False)


def inputs(size: int) -> dict[str, tuple[str, str]]:
    en_draft = "Hmm, the user asks about opening hours.\nWait, let me check them again."
    en_close = (
        "Hope this helps! Feel free to ask if anything is unclear. "
        "Let me know if you have any questions."
    )
    fr_draft = "Voyons voir, la question porte sur les horaires.\nAttends, je vérifie."
    fr_close = "J'espère que cela vous aide ! Besoin d'autre chose ? Bonne journée !"
    js = _json(size)
    return {
        "prose": (_prose(EN_PARAGRAPHS, size, en_draft, en_close), "en"),
        "prose_fr": (_prose(FR_PARAGRAPHS, size, fr_draft, fr_close), "fr"),
        "json": (js, "en"),
        "json_fenced": ("<think>Return JSON.</think>\n```json\n" + js + "\n```", "en"),
    }


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    fn()  # warm-up
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--size", type=int, default=1_000_000)
    args = ap.parse_args()
    cleaners = {
        "vocabulary": ResponseCleaner(
            **load_vocabulary(REPO / "datasets" / "cleaning_vocabulary.json")
        ),
        "structural": ResponseCleaner(),
    }
    rows: list[dict[str, Any]] = []
    for name, (text, lang) in inputs(args.size).items():
        mb = len(text.encode()) / 1e6
        for cname, cleaner in cleaners.items():
            out = cleaner.clean(text, lang)
            times = timed(lambda c=cleaner, t=text, lg=lang: c.clean(t, lg), args.repeat)
            med = statistics.median(times)
            rows.append(
                {
                    "input": name,
                    "cleaner": cname,
                    "input_mb": round(mb, 3),
                    "output_mb": round(len(out.encode()) / 1e6, 3),
                    "median_s": round(med, 4),
                    "best_s": round(min(times), 4),
                    "median_mb_s": round(mb / med, 2),
                    "best_mb_s": round(mb / min(times), 2),
                    "keys_left": '"title"' in out or '"sections"' in out,
                }
            )
    result = {
        "benchmark": "cleaner_throughput",
        "command": "benchmarks/cleaner_throughput.py "
        + f"--repeat {args.repeat} --size {args.size}",
        "machine": {
            "python": platform.python_version(),
            "implementation": platform.python_implementation(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "rows": rows,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / "cleaner.json"
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print("| input | cleaner | input MB | output MB | median s | median MB/s | best MB/s |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['input']} | {r['cleaner']} | {r['input_mb']} | {r['output_mb']} | "
            f"{r['median_s']} | {r['median_mb_s']} | {r['best_mb_s']} |"
        )
    print(f"\nwritten: {path.relative_to(REPO)}")


if __name__ == "__main__":
    main()
