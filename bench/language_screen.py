"""What the language screen's quiet slices would spare, and whether that is safe, on the tuning files only.

Runs the language plan on each file with the screen as it was before the quiet slices (every region whose slice
names another language than its window's is encoded alone), records both slices of every region and the detection
of each region encoded alone, and counts, among the regions sent alone: those the quiet-slice rule would spare
(``code_switching.screened`` with ``quiet``: the window gives the slice's language under ``CANDIDATE_P`` and the
quiet slice names the window's language), how many of those detection alone got wrong; and, among the regions in
another language than their window's (``foreign``), those whose quiet slice names the window's language and those
the rule would spare. The files:

- the three multilingual tuning files (``bench/multilingual.py``, seeds 1-3);
- every clip not in English inside a real English conversation, seeds 7000 on (``bench/multilingual.py
  --quotes`` uses 5000 on, held out);
- ``--long-clip``: the English espeak-ng 10-minute clip (``bench/long_clip.py``) and ``--conversation``: 10 minutes
  of real English speech (``tests/media_conversation.long_conversation``, seed 3000), when given.

    python bench/language_screen.py --long-clip /tmp/lc/long_clip.wav --conversation /tmp/conv.wav --out /tmp/s.json
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import multilingual as ml  # noqa: E402
from common import write_json  # noqa: E402

from tests import media_multilingual as mm  # noqa: E402

QUOTE_TUNING_SEEDS_FROM = 7000


def files(folder: Path, long_clip: Path | None, conversation: Path | None) -> list[tuple[Path, str, list]]:
    """``(wav, language outside the clips or "", [(start, end, language), ...])`` for every file of the set."""
    out = []
    for spec in ml.specs():
        if spec.split == "tuning":
            wav, placed = ml.build(spec, folder)
            out.append((wav, "", [(p.start, p.end, p.clip.language) for p in placed]))
    names = sorted(n for n in mm.clips() if not n.startswith("en/"))
    for k, name in enumerate(names):
        wav = folder / f"quote-{name.replace('/', '-')}.wav"
        placed, _ = mm.in_conversation(wav, name, QUOTE_TUNING_SEEDS_FROM + k)
        out.append((wav, "en", [(placed.start, placed.end, placed.clip.language)]))
    if conversation is not None:
        from tests.media_conversation import long_conversation

        long_conversation(conversation, 600.0, first_seed=3000)
    out += [(path, "en", []) for path in (long_clip, conversation) if path is not None]
    return out


def truth(a: float, b: float, outside: str, clips: list) -> str:
    """The language of the clip that overlaps ``(a, b)`` most, else ``outside``."""
    best, overlap = outside, 0.0
    for start, end, language in clips:
        if min(b, end) - max(a, start) > overlap:
            best, overlap = language, min(b, end) - max(a, start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--long-clip", type=Path, help="the English espeak-ng clip (bench/long_clip.py)")
    parser.add_argument("--conversation", type=Path, help="build 10 minutes of real English speech here")
    parser.add_argument("--out", type=Path, help="write the counts as JSON here")
    args = parser.parse_args()

    from whisper_subtitler.api import Subtitler
    from whisper_subtitler.decoding import code_switching, language_plan

    seen: list[tuple[list, code_switching.Screens]] = []
    alone: dict[tuple[float, float], dict[str, float]] = {}
    regions_in, detect_alone = language_plan.regions_in, language_plan._detect_alone
    chunk_regions: list[list] = []

    def recorded_regions(chunk, speech):
        chunk_regions.append(regions := regions_in(chunk, speech))
        return regions

    def old_screen(windows):  # the screen before the quiet slices, recording what the rule would see
        seen.extend(zip(chunk_regions[-len(windows) :], windows))
        return [code_switching.screened(w.window, w.sliced) for w in windows]

    def recorded_alone(model, regions, source, allowed):
        found = detect_alone(model, regions, source, allowed)
        alone.update(found)
        return found

    language_plan.regions_in, language_plan.screened_windows = recorded_regions, old_screen
    language_plan._detect_alone = recorded_alone
    names = ("sent_alone", "spared", "spared_s", "spared_alone_wrong", "foreign", "foreign_quiet_agrees")
    counts = dict.fromkeys((*names, "foreign_spared"), 0)
    counts["sent_alone_s"] = 0.0
    subtitler = Subtitler("base", diarize=False, device="cpu")
    with tempfile.TemporaryDirectory() as tmp:
        for wav, outside, clips in files(Path(tmp), args.long_clip, args.conversation):
            seen.clear()
            chunk_regions.clear()
            alone.clear()
            subtitler.run(wav)
            for regions, w in seen:
                language = max(w.window, key=w.window.__getitem__)
                old = code_switching.screened(w.window, w.sliced)
                new = code_switching.screened(w.window, w.sliced, w.quiet)
                for (a, b), before, after, quiet in zip(regions, old, new, w.quiet):
                    heard = truth(a, b, outside, clips)
                    if heard != language:
                        counts["foreign"] += 1
                        if max(quiet, key=quiet.__getitem__) == language:
                            counts["foreign_quiet_agrees"] += 1
                            print(f"{wav.name} {a:.2f}-{b:.2f} s: {heard} heard as {language} ({quiet[language]:.2f})")
                        counts["foreign_spared"] += before is None and after is not None
                    if before is not None:
                        continue
                    counts["sent_alone"] += 1
                    counts["sent_alone_s"] += b - a
                    if after is not None:
                        found = alone[(a, b)]
                        counts["spared"] += 1
                        counts["spared_s"] += b - a
                        counts["spared_alone_wrong"] += max(found, key=found.__getitem__) != heard
            print(wav.name, counts, file=sys.stderr)
    counts = {k: round(v, 1) if isinstance(v, float) else v for k, v in counts.items()}
    write_json({"command": "python bench/language_screen.py", "counts": counts}, args.out, indent=1, echo=True)


if __name__ == "__main__":
    main()
