"""Forced narratives (pure logic): which cues, which file names; the files themselves on real speech in
``test_delivery_media.py``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tests.cue_helpers import transcript_of, words_of
from whisper_subtitler.api import Result
from whisper_subtitler.cues import build_cues
from whisper_subtitler.narratives import forced_targets, foreign_cues, plan
from whisper_subtitler.types import Cue


def mixed():
    english = [replace(w, language="en") for w in words_of("We met him at the station in the morning.", 0.5)]
    spanish = [replace(w, language="es") for w in words_of("¿Dónde está la estación?", english[-1].end + 1.5)]
    tail = [replace(w, language="en") for w in words_of("He did not know the way.", spanish[-1].end + 1.5)]
    transcript = transcript_of(english, spanish, tail, language="en")
    return transcript, build_cues(transcript)


def test_the_forced_cues_are_those_in_another_language_than_the_main_one():
    transcript, cues = mixed()
    forced = foreign_cues(cues, "en")
    assert forced and all(c.language == "es" for c in forced)
    assert [c for c in cues if c.language == "es"] == list(forced)
    assert foreign_cues(cues, "") == () and foreign_cues(cues, None) == ()
    assert foreign_cues([Cue(0.0, 1.0, ("?",))], "en") == ()  # unknown language: not another one


def test_the_files_are_named_with_the_main_language_and_the_forced_flag():
    source = Path("/films/Film (1946).mkv")
    targets = forced_targets(source, ["srt", "vtt", "json", "txt", "ass", "lrc"], "en")
    assert [p.name for _, p in targets] == [
        "Film (1946).en.forced.srt",
        "Film (1946).en.forced.vtt",
        "Film (1946).en.forced.ass",
        "Film (1946).en.forced.lrc",
    ]
    assert forced_targets(source, ["srt"], "de", Path("/out"), "{stem}.{lang}") == [
        ("srt", Path("/out/Film (1946).de.forced.srt"))
    ]
    assert forced_targets(source, ["srt"], "de", None, "{stem}.{lang3}")[0][1].name == "Film (1946).ger.forced.srt"


def test_a_plan_without_other_languages_has_no_targets_and_says_why():
    transcript, cues = mixed()
    found = plan(Path("a.wav"), transcript, cues, ["srt"])
    assert found.targets == (("srt", Path("a.en.forced.srt")),) and "in es" in found.message(Path("a.wav"))
    english_only = [c for c in cues if c.language == "en"]
    none = plan(Path("a.wav"), transcript, english_only, ["srt"])
    assert none.targets == () and none.message(Path("a.wav")).endswith("every cue is in en")


def test_the_api_renders_the_forced_cues_only(tmp_path):
    transcript, cues = mixed()
    result = Result(transcript, cues)
    assert result.forced_cues == foreign_cues(cues, "en")
    text = result.render("srt", forced=True)
    assert "estación" in text and "station" not in text
    path = result.write(tmp_path / "a.en.forced.srt", forced=True)
    assert path.read_text(encoding="utf-8") == text
