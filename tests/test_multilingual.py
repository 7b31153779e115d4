"""Multilingual audio with the default (multilingual) model: every clip in its own language, none translated or
dropped; the main language from speech only; ``--language`` lists and single languages; languages in the outputs.

The files are real recordings (pytest-audioeval's language clips, ``tests/media_multilingual.py``) in orders and
pauses that the language smoothing was not tuned on (bench/multilingual.py keeps seeds 1-3 for tuning), and
espeak-ng speech for the long stretches.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests import media_multilingual as mm
from tests.conftest import run_cli
from tests.media_speech import Voice, utterance

pytestmark = pytest.mark.slow

FIVE = ("en", "es", "fr", "it", "pt")
SPANISH = Voice("S", "es", pitch=45, speed=140)
ENGLISH = Voice("E", "en-us", pitch=40, speed=160)


def ten_clips(seed: int) -> list[str]:
    """Two clips of each of the five languages, chosen and ordered by ``seed``."""
    rng = np.random.default_rng(seed)
    names: list[str] = []
    for language in FIVE:
        pool = sorted(mm.clips((language,)))
        names += [pool[i] for i in rng.choice(len(pool), size=2, replace=False)]
    return [names[i] for i in rng.permutation(len(names))]


def transcribe(wav: Path, out: Path, *extra: str) -> dict:
    result = run_cli("transcribe", str(wav), "-o", str(out), "-f", "json,vtt", "--no-diarize", "--overwrite", *extra)
    assert result.returncode == 0, result.stderr
    return json.loads((out / f"{wav.stem}.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def clips_file(tmp_path_factory):
    """Ten clips in five languages, 0.3-0.6 s pauses, transcribed with the defaults."""
    folder = tmp_path_factory.mktemp("multilingual")
    wav = folder / "mixed.wav"
    placed = mm.build(wav, ten_clips(31), gaps=(0.3, 0.6), seed=31)
    return wav, placed, transcribe(wav, folder)


def test_every_clip_in_its_own_language_in_another_order_with_longer_pauses(tmp_path):
    wav = tmp_path / "mixed.wav"
    placed = mm.build(wav, ten_clips(32), gaps=(1.0, 2.5), seed=32)
    scores = mm.score(placed, transcribe(wav, tmp_path)["segments"])
    print(*scores, sep="\n")
    verdicts = [s.verdict for s in scores]
    assert verdicts.count("right") >= 9
    assert "dropped" not in verdicts and "translated" not in verdicts


def test_a_window_whose_decoding_ends_after_its_first_clip_is_decoded_again_clip_by_clip(tmp_path):
    """Three clips 0.6-1.2 s apart in one VAD region: Whisper base writes "Ciao, monde !" for the whole window and
    ends there, and without a second pass the French counting and "bonjour le monde" got no words at all
    (``quality.stopped_early``)."""
    wav = tmp_path / "three.wav"
    placed = mm.build(wav, ["it/ciao_mondo", "fr/comptage", "fr/bonjour_monde"], gaps=(0.6, 1.2), seed=2)
    scores = mm.score(placed, transcribe(wav, tmp_path)["segments"])
    print(*scores, sep="\n")
    assert [s.verdict for s in scores[1:]] == ["right", "right"]


def test_speech_after_the_last_word_of_a_window_is_decoded_on(tmp_path):
    """A French pangram, a Polish greeting and the French counting in one VAD region: Whisper base writes the pangram
    and ends the window there, although it holds 1.5 tokens a second (not an early end by count); the units after
    the last word are decoded as a window of their own (``ChunkTranscriber._with_gaps``), so that nothing is
    dropped (the Polish clip, which base does not hear as Polish, comes out in French)."""
    wav = tmp_path / "three.wav"
    placed = mm.build(wav, ["fr/pangrama", "pl/witaj_swiecie", "fr/comptage"], gaps=(0.6, 1.2), seed=40)
    scores = mm.score(placed, transcribe(wav, tmp_path)["segments"])
    print(*scores, sep="\n")
    assert [s.verdict for s in scores][::2] == ["right", "right"]
    assert "dropped" not in [s.verdict for s in scores]


def test_a_clip_the_window_passes_over_inside_a_conversation_is_decoded(tmp_path):
    """Hindi counting laid into a real English conversation (``mm.in_conversation``, a seed the bench does not use):
    the window around it is decoded in English and its decoder passes over the clip, writing no word there (3.6 s of
    speech dropped). The units without words are decoded again on their own (``ChunkTranscriber._with_gaps``): the
    clip gets its words back (in English digits: Whisper base hears this Hindi as English, so it is translated, not
    dropped)."""
    wav = tmp_path / "quote.wav"
    placed, _ = mm.in_conversation(wav, "hi/ginti", seed=42)
    data = transcribe(wav, tmp_path)
    (score,) = mm.score([placed], data["segments"])
    print(score)
    assert score.verdict != "dropped"
    assert "4, 5, 6" in score.text


def test_every_clip_in_its_own_language(clips_file):
    _, placed, data = clips_file
    scores = mm.score(placed, data["segments"])
    print(*scores, sep="\n")
    verdicts = [s.verdict for s in scores]
    assert verdicts.count("right") >= 9
    assert "dropped" not in verdicts and "translated" not in verdicts
    assert {s["language"] for s in data["segments"]} == set(FIVE)


def test_json_has_the_language_of_every_segment_and_cue(clips_file):
    _, _, data = clips_file
    assert data["language"] in FIVE
    assert all(s["language"] in FIVE for s in data["segments"])
    assert data["cues"] and all(c["language"] in FIVE for c in data["cues"])
    assert {c["language"] for c in data["cues"]} == {s["language"] for s in data["segments"]}


def test_vtt_marks_cues_in_other_languages_and_the_w3c_parser_accepts_it(clips_file):
    wav, _, data = clips_file
    vtt = wav.with_suffix(".vtt")
    text = vtt.read_text(encoding="utf-8")
    others = {c["language"] for c in data["cues"]} - {data["language"]}
    assert others and all(f"<lang {code}>" in text for code in others)
    assert f"<lang {data['language']}>" not in text  # the main language is the track's, not marked per cue
    node, parser = shutil.which("node"), Path(os.environ.get("WEBVTT_PARSER_DIR", ".venv/node/node_modules"))
    if node is None or not (parser / "webvtt-parser").is_dir():
        pytest.skip("node or npm's webvtt-parser is missing (make install-test installs the parser)")
    checker = Path(__file__).with_name("webvtt_check.js")
    done = subprocess.run(
        [node, str(checker), str(vtt)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "NODE_PATH": str(parser.resolve())},
    )
    report = json.loads(done.stdout)
    assert report["errors"] == []
    assert report["cues"] == len(data["cues"])
    assert set(report["langs"]) == others


def test_a_language_list_restricts_detection(clips_file, tmp_path):
    wav, placed, _ = clips_file
    data = transcribe(wav, tmp_path, "--language", "en,es")
    assert {s["language"] for s in data["segments"]} <= {"en", "es"}
    assert {c["language"] for c in data["cues"]} <= {"en", "es"}
    scores = {s.name: s for s in mm.score(placed, data["segments"])}
    assert all(s.verdict == "right" for name, s in scores.items() if name.split("/")[0] in ("en", "es"))


def test_a_single_language_is_forced_for_the_whole_file(clips_file, tmp_path):
    wav, _, _ = clips_file
    data = transcribe(wav, tmp_path, "--language", "fr")
    assert data["language"] == "fr"
    assert {s["language"] for s in data["segments"]} == {"fr"}
    assert "<lang" not in (tmp_path / "mixed.vtt").read_text(encoding="utf-8")


def test_noise_and_music_before_english_speech_give_english(tmp_path):
    rng = np.random.default_rng(5)
    t = np.arange(20 * mm.SAMPLE_RATE) / mm.SAMPLE_RATE
    chords = sum(np.sin(2 * np.pi * f * t) for f in (220.0, 277.2, 329.6)) * 0.05 * (1 + np.sin(2 * np.pi * 0.5 * t))
    noise = np.cumsum(rng.normal(0, 0.02, t.size)) * 0.01  # brown-ish noise under the chords
    noise -= np.convolve(noise, np.ones(1600) / 1600, mode="same")
    clips = mm.clips(("en",))
    speech = [clips[name].samples for name in ("en/quick_brown_fox", "en/counting", "en/hello_world")]
    pause = np.zeros(mm.SAMPLE_RATE // 2, np.float32)
    parts = [(chords + noise).astype(np.float32), pause] + [x for s in speech for x in (s, pause)]
    wav = tmp_path / "music_first.wav"
    mm.write_wav(wav, np.concatenate(parts))
    data = transcribe(wav, tmp_path)
    assert data["language"] == "en"
    assert all(s["start"] >= 19.0 for s in data["segments"])  # nothing subtitled over the music


def test_ten_seconds_of_english_then_forty_of_spanish_is_spanish(tmp_path):
    english = [
        "The meeting starts at nine in the morning.",
        "Please bring the report with you.",
        "We will talk about the budget for next year.",
        "After that, our new director will say a few words.",
    ]
    spanish = [
        "Buenos días a todos y bienvenidos a la reunión de hoy.",
        "Vamos a hablar del presupuesto del próximo año.",
        "El equipo de ventas ha trabajado mucho este trimestre.",
        "Los resultados son mejores de lo que esperábamos.",
        "Ahora quiero presentar a nuestra nueva directora.",
        "Ella viene de una empresa muy conocida de Madrid.",
        "Tenemos muchas preguntas sobre el nuevo proyecto.",
        "Por favor, escriban sus ideas antes del viernes.",
        "La próxima reunión será el martes a las diez.",
        "Gracias por venir y que tengan un buen día.",
        "Mañana enviaremos el informe a todos los equipos.",
        "Si tienen dudas, pueden escribirme cuando quieran.",
        "El café y el almuerzo están en la sala de al lado.",
        "Nos vemos la semana que viene en la oficina nueva.",
    ]
    pause = np.zeros(mm.SAMPLE_RATE // 2, np.float32)
    parts = [x for text in english for x in (utterance(text, ENGLISH, tmp_path / "en"), pause)]
    english_s = sum(len(p) for p in parts) / mm.SAMPLE_RATE
    parts += [x for text in spanish for x in (utterance(text, SPANISH, tmp_path / "es"), pause)]
    spanish_s = sum(len(p) for p in parts) / mm.SAMPLE_RATE - english_s
    wav = tmp_path / "en_then_es.wav"
    mm.write_wav(wav, np.concatenate(parts))
    assert 8.0 < english_s < 14.0 and spanish_s > 35.0, (english_s, spanish_s)
    data = transcribe(wav, tmp_path)
    assert data["language"] == "es"
    assert {c["language"] for c in data["cues"]} == {"en", "es"}
    assert all(c["language"] == "en" for c in data["cues"] if c["end"] <= english_s - 0.5)
    assert all(c["language"] == "es" for c in data["cues"] if c["start"] >= english_s + 0.5)


@pytest.mark.parametrize(
    "arrangement",
    [
        {"seed": 6, "gaps": (0.1, 0.5)},  # a one-word answer was detected as Chinese, 0.75 sure
        {"seed": 5, "gaps": (0.2, 0.8), "noise_snr_db": 10.0, "lead": 6.0, "tail": 6.0},  # Korean, 0.71 sure
    ],
    ids=["telephone", "under-noise"],
)
def test_a_real_english_conversation_stays_english(tmp_path, arrangement):
    # Real telephone speech (pyannote's sample re-arranged, bench/conversations.py's tuning files t-clean-s6-quick
    # and t-noise-s5): short answers that Whisper heard as another language were decoded in it, and lost words.
    from tests.media_conversation import rearranged_conversation

    made = rearranged_conversation(tmp_path / "conversation.wav", **arrangement)
    data = transcribe(made.wav, tmp_path)
    assert data["language"] == "en"
    assert {s["language"] for s in data["segments"]} == {"en"}
    assert "<lang" not in (tmp_path / "conversation.vtt").read_text(encoding="utf-8")
