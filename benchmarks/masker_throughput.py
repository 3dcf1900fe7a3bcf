"""Throughput of the reversible masker (`workbench.text.masker.ReversibleMasker`).

Input: synthetic English prose (seeded), sentences of common words, each opening on a capital,
with capitalised words that are not names (places, months, "However"), registered names
sprinkled into ~40 % of the sentences, and e-mail addresses into ~5 %. A masker has the
registry of N names (synthetic, e.g. "Belorandu") and one EMAIL pattern
(`[\\w.+-]+@[\\w-]+\\.[\\w.]+`); no detector (a detector's cost is the NER's own).
"MB" here is 10^6 characters of `str` (the prose is ASCII apart from the odd accented name).

Part 1, for N = 10, 1,000, 10,000 registered names, on 1 MB (`--size-mb`):
  build        constructing the masker and compiling its names regex (once per masker)
  first mask   the masker's first `mask(text)`: it learns every e-mail in the text and
               compiles its learned-values regex
  mask         later `mask(text)` calls (nothing new to learn), median of `--repeats`
  unmask       `unmask(masked)`, median of `--repeats`
  stream       a `StreamingUnmasker` fed `masked` in `--chunk`-character chunks, then
               `finish()`, median of 3
Every round trip is checked (`unmask(mask(t)) == t`, and the stream's output too).

Part 2, linearity with 10,000 names: mask and unmask of 0.25, 0.5, 1 and 2 MB (a fresh
masker per size, warmed by one mask of the same text), median of `--repeats`; the ms per MB
column should stay about constant.

    .venv/bin/python benchmarks/masker_throughput.py [--size-mb 1] [--repeats 5] [--chunk 16]

Prints Markdown tables; writes the figures to benchmarks/results/masker.json.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from typing import Any

from _sim_process import machine, write_json

from workbench.text.masker import ReversibleMasker

EMAIL = ("EMAIL", r"[\w.+-]+@[\w-]+\.[\w.]+")
SYLLABLES = (
    "ma ri lo ven ta ké so ber an el ine dor zu pha gré lu ka mon tis ra ol "
    "bel ran du ni sa vo fen gal"
).split()
WORDS = (
    "the a of and to in is was for on that with as by at from it this be are have not or "
    "his her they we said would there their what about which when one all were out up into "
    "time people year way day thing man world life hand part child eye woman place work week "
    "case point number group problem fact good new first last long great little own other old "
    "right big high different small large next early young important few public bad same able "
    "asked told gave found took came went made knew thought looked wanted seemed felt"
).split()
CAPITALISED = (
    "The It When This They After However Monday Tuesday March Paris London Berlin Europe "
    "Because Meanwhile Later Nobody Everyone"
).split()


def make_names(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    names: set[str] = set()
    while len(names) < count:
        names.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(3, 5))).capitalize())
    return sorted(names)


def make_prose(size: int, names: list[str], seed: int) -> str:
    rng = random.Random(seed)
    out: list[str] = []
    total = 0
    while total < size:
        words = [rng.choice(CAPITALISED)] + [rng.choice(WORDS) for _ in range(rng.randint(8, 22))]
        if rng.random() < 0.4:
            words.insert(rng.randint(1, len(words)), rng.choice(names))
        if rng.random() < 0.05:
            local = rng.choice(names).lower()
            words.insert(rng.randint(1, len(words)), f"{local}.{rng.randint(1, 99)}@example.org")
        sentence = " ".join(words) + (". " if rng.random() < 0.9 else ".\n\n")
        out.append(sentence)
        total += len(sentence)
    text = "".join(out)[:size]
    return text.rsplit(" ", 1)[0] + "."  # end on a whole word


def timed(fn: Any, *args: Any) -> tuple[float, Any]:
    t = time.perf_counter()
    value = fn(*args)
    return time.perf_counter() - t, value


def stream_unmask(masker: ReversibleMasker, masked: str, chunk: int) -> str:
    u = masker.unmasker()
    parts = [u.feed(masked[i : i + chunk]) for i in range(0, len(masked), chunk)]
    parts.append(u.finish())
    return "".join(parts)


def part_throughput(
    counts: list[int], size: int, repeats: int, chunk: int, seed: int
) -> list[dict[str, Any]]:
    rows = []
    for count in counts:
        names = make_names(count, seed)
        text = make_prose(size, names, seed + 1)
        t0 = time.perf_counter()
        masker = ReversibleMasker(names=names, patterns=[EMAIL])
        masker._names_regex()  # compile now, so "build" says what it costs
        build = time.perf_counter() - t0
        first, masked = timed(masker.mask, text)
        masks = []
        for _ in range(repeats):
            dt, again = timed(masker.mask, text)
            assert again == masked
            masks.append(dt)
        unmasks = []
        for _ in range(repeats):
            dt, back = timed(masker.unmask, masked)
            assert back == text, "round trip failed"
            unmasks.append(dt)
        streams = []
        for _ in range(3):
            dt, back = timed(stream_unmask, masker, masked, chunk)
            assert back == text, "streamed round trip failed"
            streams.append(dt)
        tokens = masker.tokens
        rows.append(
            {
                "names": count,
                "chars": len(text),
                "build_s": build,
                "first_mask_s": first,
                "mask_s": statistics.median(masks),
                "unmask_s": statistics.median(unmasks),
                "stream_unmask_s": statistics.median(streams),
                "mask_runs_s": masks,
                "unmask_runs_s": unmasks,
                "stream_runs_s": streams,
                "tokens": len(tokens),
                "person_tokens": sum(1 for t in tokens if t.startswith("#PERSON_")),
                "email_tokens": sum(1 for t in tokens if t.startswith("#EMAIL_")),
                "masked_spans": masked.count("#"),
            }
        )
    return rows


def part_linearity(sizes_mb: list[float], repeats: int, seed: int) -> list[dict[str, Any]]:
    names = make_names(10_000, seed)
    rows = []
    for mb in sizes_mb:
        text = make_prose(int(mb * 1_000_000), names, seed + 2)
        masker = ReversibleMasker(names=names, patterns=[EMAIL])
        masked = masker.mask(text)  # warm: compile and learn
        masks = [timed(masker.mask, text)[0] for _ in range(repeats)]
        unmasks = []
        for _ in range(repeats):
            dt, back = timed(masker.unmask, masked)
            assert back == text
            unmasks.append(dt)
        m, u = statistics.median(masks), statistics.median(unmasks)
        real_mb = len(text) / 1e6
        rows.append(
            {
                "mb": mb,
                "chars": len(text),
                "mask_s": m,
                "unmask_s": u,
                "mask_ms_per_mb": m * 1000 / real_mb,
                "unmask_ms_per_mb": u * 1000 / real_mb,
                "mask_runs_s": masks,
                "unmask_runs_s": unmasks,
                "masked_spans": masked.count("#"),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--size-mb", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--chunk", type=int, default=16, help="characters per streamed chunk")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    size = int(args.size_mb * 1_000_000)

    started = time.perf_counter()
    through = part_throughput([10, 1_000, 10_000], size, args.repeats, args.chunk, args.seed)
    linear = part_linearity([0.25, 0.5, 1.0, 2.0], args.repeats, args.seed)

    def mbs(row: dict[str, Any], key: str) -> str:
        return f"{row['chars'] / 1e6 / row[key]:.1f}"

    print(
        f"Masker throughput, {args.size_mb:g} MB of prose (MB = 10^6 characters), median of {args.repeats}\n"
    )
    print(
        "| names | build ms | first mask ms | mask MB/s | unmask MB/s | stream unmask MB/s "
        f"({args.chunk}-char chunks) | tokens (person / email) | masked spans |"
    )
    print("|--:|--:|--:|--:|--:|--:|--:|--:|")
    for r in through:
        print(
            f"| {r['names']:,} | {r['build_s'] * 1000:.0f} | {r['first_mask_s'] * 1000:.0f} "
            f"| {mbs(r, 'mask_s')} | {mbs(r, 'unmask_s')} | {mbs(r, 'stream_unmask_s')} "
            f"| {r['tokens']:,} ({r['person_tokens']:,} / {r['email_tokens']:,}) | {r['masked_spans']:,} |"
        )
    print("\nLinearity, 10,000 names\n")
    print("| size MB | mask ms | mask ms per MB | unmask ms | unmask ms per MB | masked spans |")
    print("|--:|--:|--:|--:|--:|--:|")
    for r in linear:
        print(
            f"| {r['mb']:g} | {r['mask_s'] * 1000:.1f} | {r['mask_ms_per_mb']:.1f} "
            f"| {r['unmask_s'] * 1000:.1f} | {r['unmask_ms_per_mb']:.1f} | {r['masked_spans']:,} |"
        )
    per_mb = [r["mask_ms_per_mb"] for r in linear]
    spread = max(per_mb) / min(per_mb)
    print(f"\nmask ms per MB, largest / smallest: {spread:.2f}")

    path = write_json(
        "masker.json",
        {
            "settings": vars(args),
            "machine": machine(),
            "throughput": through,
            "linearity": linear,
            "mask_ms_per_mb_spread": spread,
            "wall_s": time.perf_counter() - started,
        },
    )
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
