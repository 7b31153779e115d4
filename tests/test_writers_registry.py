"""The format registry, format lists, TXT and TSV, and that no writer needs torch."""

import subprocess
import sys

import pytest

from tests.writer_cases import case
from whisper_subtitler.errors import UsageError
from whisper_subtitler.writers import FORMATS, WriterOptions, encode, render, resolve_formats


def test_registry_declares_extension_and_kind():
    assert {"srt", "vtt", "txt", "tsv", "json", "ass"} <= set(FORMATS)
    for name, writer in FORMATS.items():
        assert writer.name == name and writer.extension and not writer.extension.startswith(".")
    assert FORMATS["srt"].cue_based and not FORMATS["json"].cue_based and not FORMATS["txt"].cue_based


def test_resolve_formats():
    assert resolve_formats("srt, VTT,srt") == ("srt", "vtt")
    assert set(resolve_formats("all")) == set(FORMATS)
    with pytest.raises(UsageError, match="unknown output format 'docx'"):
        resolve_formats("srt,docx")
    with pytest.raises(UsageError):
        resolve_formats(" , ")


def test_txt_has_one_labelled_line_per_speaker_run():
    transcript, cues = case("tricky")
    lines = render("txt", transcript, cues).splitlines()
    assert lines[0].startswith("[SPEAKER_00]: Rock & roll <live> is back --> and")
    assert lines[1].startswith("[SPEAKER_01]: but only until midnight.")
    assert lines[2] == "[SPEAKER_00]: Okay."


def test_tsv_has_four_fields_per_row_in_milliseconds():
    transcript, cues = case("tricky")
    rows = [r.split("\t") for r in render("tsv", transcript, cues).splitlines()]
    assert rows[0] == ["start", "end", "speaker", "text"]
    assert len(rows) == len(cues) + 1 and all(len(r) == 4 for r in rows)
    assert int(rows[1][0]) == round(cues[0].start * 1000) and rows[1][2] == "SPEAKER_00"


def test_tsv_joins_japanese_lines_without_spaces():
    transcript, cues = case("japanese")
    rows = render("tsv", transcript, cues).splitlines()[1:]
    assert all(" " not in r.split("\t")[3] for r in rows)


@pytest.mark.parametrize("fmt", ["srt", "vtt", "txt", "tsv", "ass"])
def test_crlf_applies_to_every_text_format(fmt):
    transcript, cues = case("plain")
    data = encode(render(fmt, transcript, cues), fmt, WriterOptions(crlf=True))
    assert b"\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")


def test_writers_and_cues_import_without_torch_or_numpy():
    code = (
        "import sys, whisper_subtitler.writers, whisper_subtitler.cues, whisper_subtitler.reformat; "
        "bad = {'torch', 'numpy', 'whisper'} & set(sys.modules); print(sorted(bad)); sys.exit(bool(bad))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
