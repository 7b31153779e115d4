#!/usr/bin/env python3
"""The speaker evaluation set: real conversations re-arranged from pyannote's ``sample.wav``, clean, with
overlaps, under music beds and noise, and long; built reproducibly (same arguments, same bytes).

    python bench/conversations.py --out /tmp/speaker-set            # the conversations (about 2 minutes, 60 MB)
    python bench/conversations.py --out /tmp/speaker-set --long     # + the 30-minute and 3-hour files (400 MB)

Every file is the 13 real utterances of ``sample.wav`` (two people on a phone line, ``sample.stm``) cut out and laid
out again by ``tests/media_conversation.py`` with a seed: another order, other pauses, other speaker changes, the
exact reference (STM and RTTM). Groups (:func:`specs`), after pyannote's own ``sample.wav`` (group ``sample``):

- ``clean``: eight orders per split; pauses of three styles (quick 0.1-0.5 s, normal 0.2-0.8 s, slow 0.6-1.6 s),
  and every other file with overlapped speech (an utterance starts 0.2-0.6 s before the other speaker's ends, with
  probability 0.4);
- ``music5``, ``music10``, ``music15``: three orders per split over a music bed synthesised with sox (chord pads
  and a plucked bass; progression, key and tempo from the seed) 5, 10 and 15 dB under the speech, pink noise 25 dB
  under it, and 6 s of music (and noise) alone at each end;
- ``noise``: three orders per split with pink noise 10 dB under the speech, 6 s of noise alone at each end;
- ``long`` (``--long``): a 30-minute and a 3-hour two-speaker file, consecutive orders of seeds from
  :data:`LONG_SEED` on (0.2-0.8 s pauses), one STM and RTTM each.

**Held out**: seeds from :data:`HELD_OUT_FROM` on make the ``held-out`` split; no tuning step may read them
(:func:`check_tuning_seeds`, which ``bench/speakers.py`` calls before every tuning step). The ``tuning`` split uses
seeds 0-7; earlier sessions tuned on seeds 0-24 (``docs/diarization.md``), so the held-out seeds start well above.
``held-out-2`` (``--held-out-2``, seeds 200-207, the same groups): made in session 23 after the short-region rule's
errors on ``held-out`` had been looked at (``bench/notes/diarization.md``, "Short regions: only the split ones"), for
the questions ``held-out`` has already answered once; not in the default set. ``tuning-wide`` (``--splits
tuning-wide``, seeds 8-19, every seed in every group: 12 clean, 12 per music level, 12 noise): a larger tuning split
for rules whose effect is a few words per file (issue 46: every file holds the same 13 utterances, so three files per
group answer by chance); ``held-out-wide`` (seeds 300-311, the same layout) is its held-out counterpart, made in
session 31 before any rule was tried on it; neither is in the default set.

``--music-levels 12,5,0`` builds only music groups, at those levels (dB under the speech; ``music12``, ``music5``,
``music0``), three orders per split as above (the same seeds, pink noise 25 dB under the speech, 6 s of music alone
at each end), for ``--splits`` (default ``tuning,held-out``): the score from a film's mix in the dialogue's own
channel (issue 47; ``docs/diarization.md``, "Dialogue under music in the same channel"). ``music5`` is byte for byte
the default set's.

    python bench/conversations.py --out bench/results/music-levels --music-levels 12,5,0

``manifest.json`` lists each file with its split, group, seed, settings and the stretches where no one speaks
because music or noise plays alone (``background_only``, seconds).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

HELD_OUT_FROM = 100  # seeds >= this: the held-out split, never read by a tuning step
LONG_SEED = 1000  # the long files' first order (held out too)
TUNING_SEEDS = tuple(range(8))
HELD_OUT_SEEDS = tuple(range(HELD_OUT_FROM, HELD_OUT_FROM + 8))
HELD_OUT_2_SEEDS = tuple(range(200, 208))
WIDE_TUNING_SEEDS = tuple(range(8, 20))  # tuning seeds too (< HELD_OUT_FROM), every one in every group
WIDE_HELD_OUT_SEEDS = tuple(range(300, 312))  # held out, every one in every group
SPLITS = {
    "tuning": ("t", TUNING_SEEDS),
    "held-out": ("h", HELD_OUT_SEEDS),
    "held-out-2": ("h2", HELD_OUT_2_SEEDS),
    "tuning-wide": ("tw", WIDE_TUNING_SEEDS),
    "held-out-wide": ("hw", WIDE_HELD_OUT_SEEDS),
}
WIDE_SPLITS = ("tuning-wide", "held-out-wide")
GAPS = {"quick": (0.1, 0.5), "normal": (0.2, 0.8), "slow": (0.6, 1.6)}  # s between utterances
OVERLAP = 0.4  # probability that an utterance overlaps the previous one, in the overlapped files
MUSIC_SNR_DB = (5.0, 10.0, 15.0)
MUSIC_NOISE_SNR_DB = 25.0  # the pink noise under the music mixes
NOISE_SNR_DB = 10.0  # the noise group
BACKGROUND_ONLY_S = 6.0  # music or noise alone at each end
LONG_SECONDS = {"long30m": 1800.0, "long3h": 10800.0}


class TuningOnHeldOut(ValueError):
    """A tuning step was asked to read a held-out file."""


@dataclass(frozen=True)
class Spec:
    """One file of the set: ``name`` (file stem), ``split`` (``tuning``, ``held-out`` or ``held-out-2``), ``group``, the
    ``seed`` of its order, pauses ``gaps`` (s), ``overlap`` probability, music and noise levels (dB under the
    speech, or None) and the seconds of ``lead`` and ``tail`` (music or noise alone when there is some)."""

    name: str
    split: str
    group: str
    seed: int
    gaps: tuple[float, float]
    overlap: float = 0.0
    music_snr_db: float | None = None
    noise_snr_db: float | None = None
    lead: float = 0.5
    tail: float = 0.5


def split_of(seed: int) -> str:
    """``held-out`` for seeds from :data:`HELD_OUT_FROM` on, else ``tuning`` (``tuning-wide``'s seeds included)."""
    return "held-out" if seed >= HELD_OUT_FROM else "tuning"


def check_tuning_seeds(seeds) -> None:
    """Raise :class:`TuningOnHeldOut` when any of ``seeds`` is held out."""
    held = sorted(seed for seed in seeds if split_of(seed) != "tuning")
    if held:
        raise TuningOnHeldOut(f"seeds {held} are held out (>= {HELD_OUT_FROM}); tune on seeds below it")


def specs(splits=("tuning", "held-out"), music_levels=None) -> list[Spec]:
    """The conversations of the set (module docstring), in a fixed order; with ``music_levels`` (dB under the
    speech), only the music groups, at those levels."""
    out = []
    for split in splits:
        tag, seeds = SPLITS[split]
        music_seeds, noise_seeds = (seeds, seeds) if split in WIDE_SPLITS else (seeds[:3], seeds[3:6])
        for j, seed in enumerate(seeds if music_levels is None else ()):
            style = tuple(GAPS)[j % 3]
            overlap = OVERLAP if j % 2 else 0.0
            name = f"{tag}-clean-s{seed}-{style}{'-overlap' if overlap else ''}"
            out.append(Spec(name, split, "clean", seed, GAPS[style], overlap))
        for snr in MUSIC_SNR_DB if music_levels is None else music_levels:
            for seed in music_seeds:
                out.append(
                    Spec(
                        f"{tag}-music{snr:g}-s{seed}",
                        split,
                        f"music{snr:g}",
                        seed,
                        GAPS["normal"],
                        music_snr_db=snr,
                        noise_snr_db=MUSIC_NOISE_SNR_DB,
                        lead=BACKGROUND_ONLY_S,
                        tail=BACKGROUND_ONLY_S,
                    )
                )
        for seed in noise_seeds if music_levels is None else ():
            out.append(
                Spec(
                    f"{tag}-noise-s{seed}",
                    split,
                    "noise",
                    seed,
                    GAPS["normal"],
                    noise_snr_db=NOISE_SNR_DB,
                    lead=BACKGROUND_ONLY_S,
                    tail=BACKGROUND_ONLY_S,
                )
            )
    return out


def build(spec: Spec, out: Path) -> dict:
    """Write ``spec``'s WAV, STM and RTTM into ``out``; its manifest entry."""
    from tests.media_conversation import rearranged_conversation

    made = rearranged_conversation(
        out / f"{spec.name}.wav",
        seed=spec.seed,
        gaps=spec.gaps,
        lead=spec.lead,
        tail=spec.tail,
        overlap=spec.overlap,
        music_snr_db=spec.music_snr_db,
        noise_snr_db=spec.noise_snr_db,
    )
    background = []
    if spec.music_snr_db is not None or spec.noise_snr_db is not None:
        background = [(0.0, made.utterances[0].start), (max(u.end for u in made.utterances), made.duration)]
    return {
        **asdict(spec),
        "wav": made.wav.name,
        "stm": made.stm.name,
        "rttm": made.rttm.name,
        "duration": made.duration,
        "speakers": len({u.speaker for u in made.utterances}),
        "background_only": background,
    }


def build_long(name: str, seconds: float, out: Path) -> dict:
    """A two-speaker file of at least ``seconds``: consecutive re-arranged orders (seeds from :data:`LONG_SEED`,
    0.2-0.8 s pauses, 0.5 s lead and tail each), with one STM and RTTM (``long_conversation``); its manifest
    entry."""
    from tests.media_conversation import long_conversation

    made = long_conversation(out / f"{name}.wav", seconds, LONG_SEED)
    spec = Spec(name, "held-out", "long", LONG_SEED, GAPS["normal"])
    return {
        **asdict(spec),
        "wav": made.wav.name,
        "stm": made.stm.name,
        "rttm": made.rttm.name,
        "duration": made.duration,
        "speakers": 2,
        "background_only": [],
    }


def copy_sample(out: Path) -> dict:
    """pyannote's own ``sample.wav`` with its STM and RTTM, copied into ``out`` (group ``sample``, split ``tuning``:
    earlier constants were checked on it); its manifest entry."""
    import shutil

    from tests import media
    from tests.media_conversation import read_stm
    from tests.media_speech import SAMPLE_RATE, read_wav

    for source in (media.SAMPLE_WAV, media.SAMPLE_STM, media.SAMPLE_RTTM):
        shutil.copyfile(source, out / source.name)
    spec = Spec("sample", "tuning", "sample", -1, (0.0, 0.0), lead=0.0, tail=0.0)
    return {
        **asdict(spec),
        "wav": media.SAMPLE_WAV.name,
        "stm": media.SAMPLE_STM.name,
        "rttm": media.SAMPLE_RTTM.name,
        "duration": len(read_wav(media.SAMPLE_WAV)) / SAMPLE_RATE,
        "speakers": len({u.speaker for u in read_stm(media.SAMPLE_STM)}),
        "background_only": [],
    }


def build_set(out: Path, long: bool = False, splits=("tuning", "held-out"), music_levels=None) -> list[dict]:
    """Build the whole set into ``out`` (module docstring) and write ``out/manifest.json``; its entries. With
    ``music_levels`` (dB), only the music groups at those levels (no ``sample``)."""
    out.mkdir(parents=True, exist_ok=True)
    entries = [] if music_levels is not None else [copy_sample(out)]
    entries += [build(spec, out) for spec in specs(splits, music_levels)]
    if long:
        entries += [build_long(name, seconds, out) for name, seconds in LONG_SECONDS.items()]
    (out / "manifest.json").write_text(json.dumps(entries, indent=1) + "\n")
    return entries


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the WAV, STM, RTTM and manifest files")
    parser.add_argument("--long", action="store_true", help="add the 30-minute and 3-hour files")
    parser.add_argument(
        "--held-out-2", action="store_true", help="only the second held-out split (seeds 200-207; module docstring)"
    )
    parser.add_argument(
        "--music-levels",
        metavar="DB[,DB...]",
        help="only music groups, the bed at these levels under the speech (e.g. 12,5,0; module docstring)",
    )
    parser.add_argument("--splits", default="tuning,held-out", help="comma-separated splits (default: %(default)s)")
    args = parser.parse_args()
    splits = ("held-out-2",) if args.held_out_2 else tuple(s for s in args.splits.split(",") if s)
    unknown = [s for s in splits if s not in SPLITS]
    if unknown:
        parser.error(f"unknown split {unknown[0]!r}; choose from {', '.join(SPLITS)}")
    if args.music_levels:
        try:
            levels = tuple(float(x) for x in args.music_levels.split(","))
        except ValueError:
            parser.error("--music-levels takes numbers separated by commas, e.g. 12,5,0")
        entries = build_set(args.out, splits=splits, music_levels=levels)
    else:
        entries = build_set(args.out, long=args.long, splits=splits)
    print(f"{len(entries)} files in {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
