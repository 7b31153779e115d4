"""Skipping what is subtitled (``library.skip``), media-server names (``{lang}``, ``{lang3}``), the settle rule
(``library.scan``): pure rules, and the real CLI on real files (a sidecar, an embedded subtitle stream made with
ffmpeg) where a file is skipped before any model is loaded."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests import media
from tests.conftest import run_cli
from whisper_subtitler.errors import UsageError
from whisper_subtitler.library.scan import Settling, media_files
from whisper_subtitler.library.skip import embedded_languages, existing_subtitles, parse_languages, sidecar_language
from whisper_subtitler.outputs import output_path, without_language

MOVIE = Path("/lib/Movie (2020).mkv")


@pytest.mark.parametrize(
    ("name", "language"),
    [
        ("Movie (2020).en.srt", "en"),
        ("Movie (2020).eng.srt", "en"),
        ("Movie (2020).en.forced.srt", "en"),
        ("Movie (2020).ger.sdh.ass", "de"),
        ("Movie (2020).English.vtt", "en"),
        ("Movie (2020).default.fr.sub", "fr"),
        ("Movie (2020).srt", "und"),  # no language named: unknown
        ("Movie (2020).forced.srt", "und"),
        ("Movie (2020).hi.srt", "hi"),  # Hindi
        ("Movie (2020).en.hi.srt", "en"),  # English for the hard of hearing
        ("MOVIE (2020).EN.SRT", "en"),
        ("Movie (2020).en.txt", None),  # not a subtitle extension
        ("Movie (2021).en.srt", None),  # another film
        ("Movie (2020).mkv", None),
    ],
)
def test_sidecar_names(name: str, language: str | None) -> None:
    assert sidecar_language(MOVIE, MOVIE.parent / name) == language


def test_skip_languages_are_parsed_as_languages() -> None:
    assert parse_languages("en, ger,English,und") == ("en", "de", "und")
    with pytest.raises(UsageError, match="xx"):
        parse_languages("en,xx")
    with pytest.raises(UsageError):
        parse_languages(" , ")


def test_lang_fields_of_the_name_template() -> None:
    movie = Path("/lib/Movie.mkv")
    assert output_path(movie, None, "srt", "{stem}.{lang}", "en") == Path("/lib/Movie.en.srt")
    assert output_path(movie, None, "srt", "{stem}.{lang3}", "de") == Path("/lib/Movie.ger.srt")
    assert output_path(movie, None, "srt", "{stem}.{lang}", "") == Path("/lib/Movie.und.srt")  # no speech
    assert output_path(movie, None, "srt", "{stem}.{lang}", "jw") == Path("/lib/Movie.jv.srt")  # Whisper's old code
    assert without_language("{stem}.{lang}") == "{stem}" and without_language("{lang3}") == "{stem}"


def test_settle_rule(tmp_path: Path) -> None:
    now = [1000.0]  # the wall clock and the monotonic clock of the test, seconds
    path = tmp_path / "a.mkv"
    path.write_bytes(b"x" * 10)
    os.utime(path, (1000.0, 1000.0))
    settling = Settling(5.0, clock=lambda: now[0], wall=lambda: now[0])
    assert settling.settled(path) is None  # just written
    now[0] += 3
    with path.open("ab") as f:  # still growing: the wait starts again
        f.write(b"y")
    os.utime(path, (now[0], now[0]))
    assert settling.settled(path) is None
    now[0] += 4
    assert settling.settled(path) is None  # 4 s unchanged
    now[0] += 1
    assert settling.settled(path) == (11, 1003.0)  # 5 s unchanged
    skewed = Settling(5.0, clock=lambda: now[0], wall=lambda: 0.0)  # a share whose mtimes are in our future
    assert skewed.settled(path) is None
    now[0] += 5
    assert skewed.settled(path) == (11, 1003.0)  # settled by our own clock
    old = tmp_path / "old.mkv"
    old.write_bytes(b"z")
    assert Settling(5.0).settled(old) is None  # written now: not settled
    os.utime(old, (1000.0, 1000.0))
    assert Settling(5.0).settled(old) is not None  # there long before: taken at once
    (tmp_path / ".hidden.mkv").write_bytes(b"z")
    (tmp_path / "notes.txt").write_bytes(b"z")
    assert [p.name for p in media_files([tmp_path])] == ["a.mkv", "old.mkv"]


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three tiny videos: one with a German sidecar, one with an English subtitle stream inside, one with neither."""
    folder = tmp_path_factory.mktemp("library")
    speech = media.espeak("Hello there.", folder / "speech.wav")
    plain = media.video_from_audio(speech, folder / "Plain.mp4")
    media.video_from_audio(speech, folder / "Sidecar.mp4")
    (folder / "Sidecar.de.srt").write_text("1\n00:00:00,000 --> 00:00:01,000\nHallo.\n", encoding="utf-8")
    (folder / "inside.srt").write_text("1\n00:00:00,000 --> 00:00:01,000\nHello.\n", encoding="utf-8")
    media.ffmpeg(
        "-i", str(plain), "-i", str(folder / "inside.srt"), "-map", "0", "-map", "1", "-c", "copy", "-c:s", "srt",
        "-metadata:s:s:0", "language=eng", str(folder / "Embedded.mkv"),
    )  # fmt: skip
    (folder / "inside.srt").unlink()
    speech.unlink()
    return folder


def test_existing_subtitles_in_real_files(library: Path) -> None:
    assert embedded_languages(library / "Embedded.mkv") == ["en"]
    assert existing_subtitles(library / "Embedded.mkv", ["en"]) == [library / "Embedded.mkv"]
    assert existing_subtitles(library / "Embedded.mkv", ["de"]) == []
    assert existing_subtitles(library / "Sidecar.mp4", ["de"]) == [library / "Sidecar.de.srt"]
    assert existing_subtitles(library / "Plain.mp4", ["en", "de", "und"]) == []


def test_transcribe_skip_existing_skips_before_loading_a_model(library: Path) -> None:
    result = run_cli(
        "transcribe", str(library / "Embedded.mkv"), str(library / "Sidecar.mp4"), "--skip-existing", "en,ger",
        "--model", "no-such-model", "--no-diarize", "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr  # the model is never resolved: nothing to do
    said = " ".join(result.stderr.split())
    assert f"skipped {library / 'Embedded.mkv'}: it has subtitles in en,de (an embedded stream)" in said
    assert f"skipped {library / 'Sidecar.mp4'}: it has subtitles in en,de (Sidecar.de.srt)" in said
    assert sorted(p.name for p in library.iterdir()) == ["Embedded.mkv", "Plain.mp4", "Sidecar.de.srt", "Sidecar.mp4"]
