"""Delivery on real speech: ``--forced`` on a file of two languages, the Japanese and Chinese clips of
pytest-audioeval (``tests/media_multilingual.py``) laid out on the guides' widths, and the LRC and WebVTT of the same
run read back by lrcparser and W3C's webvtt-parser.

One transcription with the default model (Whisper base, multilingual) of 16 s of audio: three Japanese clips and one
Chinese clip, so the file's main language is Japanese and the Chinese clip is the forced narrative. The one-language
case is English speech (espeak-ng) with tiny.en.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import media_multilingual as mm
from tests.conftest import run_cli
from tests.media_speech import VOICE_A, utterance, write_wav
from whisper_subtitler.cues import CueOptions
from whisper_subtitler.cues.guides import for_language
from whisper_subtitler.cues.width import display_width

pytestmark = pytest.mark.slow

CLIPS = ["ja/pangrama", "ja/kazoeru", "zh/pangrama", "ja/konnichiwa_sekai"]
FORMATS = "srt,vtt,json,lrc"


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """The Japanese file with a Chinese line, transcribed with --forced: (folder, placed clips, JSON transcript,
    --json summary, stderr)."""
    if mm.samples_dir() is None:
        pytest.skip("pytest-audioeval is not installed (make install-test installs it)")
    folder = tmp_path_factory.mktemp("forced")
    wav = folder / "film.wav"
    placed = mm.build(wav, CLIPS, seed=5)
    done = run_cli("transcribe", str(wav), "-o", str(folder), "-f", FORMATS, "--forced", "--no-diarize", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads((folder / "film.json").read_text(encoding="utf-8"))
    return folder, placed, data, json.loads(done.stdout), done.stderr


def srt_cues(path: Path) -> list[tuple[float, float, str]]:
    import srt

    return [
        (s.start.total_seconds(), s.end.total_seconds(), s.content) for s in srt.parse(path.read_text(encoding="utf-8"))
    ]


def test_the_forced_file_holds_exactly_the_lines_in_the_other_language(mixed):
    folder, placed, data, summary, _ = mixed
    assert data["language"] == "ja"
    others = [c for c in data["cues"] if c["language"] != "ja"]
    assert others and {c["language"] for c in others} == {"zh"}
    for fmt in ("srt", "vtt", "lrc"):
        assert (folder / f"film.ja.forced.{fmt}").is_file()
    assert not (folder / "film.ja.forced.json").exists()  # a transcript format has no forced file
    forced = srt_cues(folder / "film.ja.forced.srt")
    assert [(round(a, 3), round(b, 3), t) for a, b, t in forced] == [
        (c["start"], c["end"], "\n".join(c["lines"])) for c in others
    ]
    chinese = next(p for p in placed if p.clip.language == "zh")
    assert all(chinese.start - 0.5 <= a and b <= chinese.end + 1.5 for a, b, _ in forced)  # within its stretch
    inside = [c for c in data["cues"] if chinese.start <= (c["start"] + c["end"]) / 2 <= chinese.end]
    assert inside and all(c["language"] == "zh" for c in inside)  # and every cue of that stretch is in it
    (result,) = summary["files"]
    assert result["forced_cues"] == len(others)
    assert str(folder / "film.ja.forced.srt") in result["outputs"]


def test_japanese_and_chinese_lines_keep_their_guides_width_and_gain_no_space(mixed):
    _, _, data, _, _ = mixed
    removed = [r["text"].strip() for r in data["removed"]]
    for cue in data["cues"]:
        width = for_language(CueOptions(), cue["language"]).max_line_width
        assert width in (26, 32)
        for line in cue["lines"]:
            assert display_width(line) <= width, (cue["language"], line)
    words = "".join(w["text"] for s in data["segments"] for w in s["words"])
    for text in removed:  # words a guard took out are in no cue
        words = words.replace(text, "", 1)
    for cue in data["cues"]:
        for line in cue["lines"]:
            assert line in words, line  # spaces only where Whisper wrote them
    two_line = [c for c in data["cues"] if len(c["lines"]) == 2]
    assert two_line  # the 19-character Japanese pangram does not fit one 13-character line


def test_the_lrc_of_the_run_has_the_cues_times(mixed):
    lrcparser = pytest.importorskip("lrcparser")
    folder, _, data, _, _ = mixed
    parsed = lrcparser.LrcParser.parse((folder / "film.lrc").read_text(encoding="utf-8"))
    starts = [float(line.start_time) for line in parsed["lrc_lines"] if str(line.text)]
    assert starts == pytest.approx([((round(c["start"] * 1000) + 5) // 10) / 100 for c in data["cues"]])
    assert [str(line.text) for line in parsed["lrc_lines"] if str(line.text)] == [
        "".join(c["lines"]) for c in data["cues"]
    ]


def test_every_vtt_of_the_run_passes_the_w3c_parser(mixed):
    folder, _, data, _, _ = mixed
    node, parser = shutil.which("node"), Path(os.environ.get("WEBVTT_PARSER_DIR", ".venv/node/node_modules"))
    if node is None or not (parser / "webvtt-parser").is_dir():
        pytest.skip("node or npm's webvtt-parser is missing (make install-test installs the parser)")
    checker = Path(__file__).with_name("webvtt_check.js")
    env = {**os.environ, "NODE_PATH": str(parser.resolve())}
    for name, cues in (
        ("film.vtt", data["cues"]),
        ("film.ja.forced.vtt", [c for c in data["cues"] if c["language"] != "ja"]),
    ):
        done = subprocess.run(
            [node, str(checker), str(folder / name)], capture_output=True, text=True, check=True, env=env
        )
        report = json.loads(done.stdout)
        assert report["errors"] == [] and report["cues"] == len(cues), name
        assert report["langs"] == ["zh"] * sum(len(c["lines"]) for c in cues if c["language"] == "zh")  # one a line


def test_a_file_in_one_language_gets_no_forced_file_and_says_so(tmp_path):
    wav = tmp_path / "talk.wav"
    write_wav(wav, utterance("The meeting moved to Monday morning at ten.", VOICE_A, tmp_path / "voice"))
    args = ("transcribe", str(wav), "-o", str(tmp_path), "-f", "srt,vtt", "--forced", "--no-diarize", "--json")
    done = run_cli(*args, "--model", "tiny.en")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "talk.srt").is_file() and not list(tmp_path.glob("*.forced.*"))
    assert "no forced subtitles written: every cue is in en" in done.stderr
    (result,) = json.loads(done.stdout)["files"]
    assert result["forced_cues"] == 0
