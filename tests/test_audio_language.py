"""``--audio-language``: the audio stream is chosen by its language tag (a two-language file made with espeak-ng),
and language codes map between ISO 639-1 and 639-2."""

from __future__ import annotations

import shutil

import pytest

from tests import media
from whisper_subtitler.errors import UsageError
from whisper_subtitler.languages import iso639_2b, language_name, normalize, same_language

ENGLISH = "The weather is lovely today and the garden is full of flowers."
GERMAN = "Guten Morgen, ich heiße Anna und ich wohne in Berlin."


def test_iso_639_codes_map_both_ways():
    assert [iso639_2b(c) for c in ("en", "de", "fr", "zh", "ja", "jw", "xx", "")] == [
        "eng",
        "ger",
        "fre",
        "chi",
        "jpn",
        "jav",
        "und",
        "und",
    ]
    assert normalize("deu") == normalize("ger") == normalize("DE") == "de"
    assert same_language("eng", "en") and same_language("deu", "ger") and not same_language("en", "de")
    assert not same_language("und", "und")
    assert language_name("de") == "German" and language_name("ger") == "German"


@pytest.fixture(scope="module")
def two_languages(tmp_path_factory):
    """film.mkv: a test picture with German speech as audio stream 0 (tagged ger) and English as 1 (eng)."""
    if shutil.which("ffmpeg") is None:
        pytest.skip("ffmpeg not installed")
    folder = tmp_path_factory.mktemp("languages")
    german = media.espeak(GERMAN, folder / "de.wav", voice="de")
    english = media.espeak(ENGLISH, folder / "en.wav", voice="en-us")
    target = folder / "film.mkv"
    media.ffmpeg(
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=160x120:rate=10:duration=6",
        "-i",
        str(german),
        "-i",
        str(english),
        "-map",
        "0:v",
        "-map",
        "1:a",
        "-map",
        "2:a",
        "-c:v",
        "libx264",
        "-pix_fmt",
        "yuv420p",
        "-c:a",
        "flac",
        "-metadata:s:a:0",
        "language=ger",
        "-metadata:s:a:1",
        "language=eng",
        "-shortest",
        str(target),
    )
    return target


def test_pick_audio_track_by_iso_639_1_or_2(two_languages):
    from whisper_subtitler.streams import pick_audio_track

    assert pick_audio_track(two_languages, "en") == 1
    assert pick_audio_track(two_languages, "eng") == 1
    assert pick_audio_track(two_languages, "deu") == 0
    with pytest.raises(UsageError, match=r"no audio stream in language 'fr'.*0: ger, 1: eng"):
        pick_audio_track(two_languages, "fr")


@pytest.mark.slow
def test_transcribe_uses_the_stream_in_the_asked_language(two_languages, cli, tmp_path):
    result = cli(
        "transcribe",
        str(two_languages),
        "--model",
        "tiny.en",
        "--no-diarize",
        "--audio-language",
        "eng",
        "--format",
        "txt",
        "--output-dir",
        str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    heard = set(media.normalize((tmp_path / "film.txt").read_text()).split())
    expected = set(media.normalize(ENGLISH).split())
    assert len(heard & expected) >= 0.7 * len(expected), heard


def test_no_stream_in_that_language_is_a_usage_error_naming_the_file(two_languages, cli, tmp_path):
    result = cli(
        "transcribe",
        str(two_languages),
        "--model",
        "tiny.en",
        "--no-diarize",
        "--audio-language",
        "fr",
        "--output-dir",
        str(tmp_path),
    )
    assert result.returncode == 2, result.stderr
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("failed:")]
    assert str(two_languages) in line and "0: ger, 1: eng" in line
    assert not list(tmp_path.iterdir())


def test_invalid_code_or_both_options_are_refused_before_any_work(two_languages, cli, tmp_path):
    bad = cli("transcribe", str(two_languages), "--audio-language", "klingon", "--output-dir", str(tmp_path))
    assert bad.returncode == 2 and "not an ISO 639-1 or 639-2 language code" in bad.stderr
    both = cli("transcribe", str(two_languages), "--audio-language", "en", "--audio-track", "1")
    assert both.returncode == 2 and "give one" in both.stderr
