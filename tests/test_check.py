"""`whisper-subtitler check`: hand-made subtitle files, one per fault kind, each reporting exactly that fault, and
clean files reporting none, in SRT, WebVTT and ASS; unavoidable faults; the report, --json, exit codes, --against."""

from __future__ import annotations

import json
from pathlib import Path
from unittest.mock import ANY

import pytest
from typer.testing import CliRunner

from whisper_subtitler.cli import app
from whisper_subtitler.cues import CueOptions
from whisper_subtitler.errors import InputError
from whisper_subtitler.quality import KINDS, Severity, check_file, read_subtitles
from whisper_subtitler.quality.against import compare

Cue = tuple[float, float, list[str]]

# Readable, well-timed cues (17 CPS, 42 columns, 2 lines, 5/6 s to 7 s, 2 frames apart): no fault.
CLEAN: list[Cue] = [
    (1.0, 3.0, ["Hello there, how are you today?"]),
    (3.5, 6.0, ["I am fine, thank you.", "And how about you?"]),
    (6.5, 9.2, ["[SPEAKER_01]: We should leave soon,", "before the rain starts."]),
    (9.5, 11.0, ["- Are you ready?", "- Yes."]),  # a dialogue cue: one line per speaker
]
ASS_BREAK = "\\N"  # a line break in ASS event text
AFTER = 20.0  # the faulty cues come after the clean ones, far from them

# One file per fault kind: the clean cues, then cues with exactly that fault.
FAULTY: dict[str, list[Cue]] = {
    "bad_timestamp": [(AFTER + 1, AFTER, ["It ends before it starts."])],
    "empty": [(AFTER, AFTER + 1, [])],
    "overlap": [(AFTER, AFTER + 2, ["The first of two cues."]), (AFTER + 1.5, AFTER + 4, ["The second one."])],
    "gap": [(AFTER, AFTER + 2, ["The first of two cues."]), (AFTER + 2.04, AFTER + 4, ["The second one."])],
    "line_width": [(AFTER, AFTER + 5, ["This single line is far wider than forty-two columns."])],
    "line_count": [(AFTER, AFTER + 5, ["There are three lines", "in this one cue, which", "is one line too many."])],
    "cps": [(AFTER, AFTER + 1, ["Forty characters are far too many to read."])],
    "short": [(AFTER, AFTER + 0.5, ["Okay."])],
    "long": [(AFTER, AFTER + 9, ["Nine seconds is too long."])],
    "orphan": [(AFTER, AFTER + 3, ["[SPEAKER_00]: I'm in New Jersey now", "though."])],
    "unbalanced": [(AFTER, AFTER + 3, ["The road", "through the mountains is narrow and"])],
    "break_after_article": [(AFTER, AFTER + 4, ["Please read every word of the", "documentation before you start."])],
    "break_in_name": [(AFTER, AFTER + 4, ["Yesterday afternoon I finally met John", "Smith at the station."])],
}


def clock(seconds: float, sep: str) -> str:
    ms = round(seconds * 1000)
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d}{sep}{ms % 1000:03d}"


def ass_clock(seconds: float) -> str:
    cs = round(seconds * 100)
    return f"{cs // 360_000:d}:{cs // 6_000 % 60:02d}:{cs // 100 % 60:02d}.{cs % 100:02d}"


def write(path: Path, cues: list[Cue]) -> Path:
    """``cues`` as a hand-written subtitle file in the format of ``path``'s extension."""
    fmt = path.suffix[1:]
    if fmt == "srt":
        blocks = [
            f"{k}\n{clock(a, ',')} --> {clock(b, ',')}\n" + "".join(f"{x}\n" for x in lines)
            for k, (a, b, lines) in enumerate(cues, 1)
        ]
        text = "\n".join(blocks)
    elif fmt == "vtt":
        blocks = [f"{clock(a, '.')} --> {clock(b, '.')}\n" + "".join(f"{x}\n" for x in lines) for a, b, lines in cues]
        text = "WEBVTT\n\n" + "\n".join(blocks)
    else:
        text = (
            "[Script Info]\nScriptType: v4.00+\n\n[V4+ Styles]\n"
            "Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, "
            "Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, "
            "MarginL, MarginR, MarginV, Encoding\n"
            "Style: Default,Arial,56,&H00FFFFFF,&H00A0A0A0,&H00000000,&H80000000,0,0,0,0,100,100,0,0,1,3,1,2,60,60,50,1"
            "\n\n[Events]\nFormat: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text\n"
        )
        text += "".join(
            f"Dialogue: 0,{ass_clock(a)},{ass_clock(b)},Default,,0,0,0,,{ASS_BREAK.join(lines)}\n"
            for a, b, lines in cues
        )
    path.write_text(text, encoding="utf-8")
    return path


FORMATS = ("srt", "vtt", "ass")


@pytest.mark.parametrize("fmt", FORMATS)
def test_clean_file_reports_no_fault(tmp_path, fmt):
    report = check_file(write(tmp_path / f"clean.{fmt}", CLEAN))
    assert report.faults == () and not report.failed
    assert report.cues == len(CLEAN) and report.max_cpl == len("[SPEAKER_01]: We should leave soon,")
    assert 0 < report.mean_cps <= report.max_cps <= 17


def test_every_fault_kind_has_a_faulty_file():
    # missing_words needs the transcript beside the file: tests/test_no_word_lost.py; the shot-change kinds need a
    # video or a list of shot changes: tests/test_shot_changes.py
    elsewhere = {"missing_words", "shot_flash", "shot_in", "shot_out", "shot_crossing"}
    assert list(FAULTY) == [kind for kind in KINDS if kind not in elsewhere]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("kind", list(FAULTY))
def test_each_faulty_file_reports_exactly_its_fault(tmp_path, fmt, kind):
    report = check_file(write(tmp_path / f"{kind}.{fmt}", CLEAN + FAULTY[kind]))
    assert [f.kind for f in report.faults] == [kind], [f.message for f in report.faults]
    (fault,) = report.faults
    assert fault.index > len(CLEAN) and fault.avoidable and report.failed
    assert fault.severity is (Severity.error if kind in ("bad_timestamp", "empty") else Severity.warning)


def test_fast_speech_with_no_room_is_reported_as_unavoidable(tmp_path):
    # 42 characters in 1 s, and the next cue starts 2 frames later: the speech itself is faster than 17 CPS.
    cues = CLEAN + [
        (AFTER, AFTER + 1, ["Forty characters are far too many to read."]),
        (AFTER + 1.084, AFTER + 3, ["Next."]),
    ]
    report = check_file(write(tmp_path / "fast.srt", cues))
    (fault,) = report.faults
    assert (fault.kind, fault.severity, fault.avoidable) == ("cps", Severity.info, False)
    assert "speech is faster" in fault.message and not report.failed


def test_an_orphan_no_layout_avoids_is_unavoidable(tmp_path):
    cues = [(1.0, 5.0, ["Supercalifragilisticexpialidocious", "antidisestablishmentarianism"])]
    (fault,) = check_file(write(tmp_path / "long-words.srt", cues), CueOptions(max_line_width=40)).faults
    assert (fault.kind, fault.severity, fault.avoidable) == ("orphan", Severity.info, False)


def test_limits_come_from_the_options(tmp_path):
    path = write(tmp_path / "a.srt", CLEAN)
    kinds = {f.kind for f in check_file(path, CueOptions(max_line_width=30, max_cps=10)).faults}
    assert kinds == {"line_width", "cps"}


def test_markup_is_not_counted(tmp_path):
    path = tmp_path / "tags.vtt"
    path.write_text(
        "WEBVTT\n\n00:00:01.000 --> 00:00:03.000\n<v Alice><i>Fish &amp; chips</i> are what we had today.\n",
        encoding="utf-8",
    )
    assert read_subtitles(path).cues[0].lines == ("Fish & chips are what we had today.",)


@pytest.mark.parametrize(
    "name, text",
    [("bad.srt", "1\n00:00:01,000 --> 00:0x:02,000\nHello\n"), ("bad.vtt", "not webvtt\n"), ("a.txt", "x")],
)
def test_unreadable_files_raise_input_error_naming_the_file(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=name):
        read_subtitles(path)


def run(*args: str):
    return CliRunner().invoke(app, ["check", *args])


def test_cli_exit_codes_and_report(tmp_path):
    clean = write(tmp_path / "clean.srt", CLEAN)
    faulty = write(tmp_path / "orphan.vtt", CLEAN + FAULTY["orphan"])
    result = run(str(clean))
    assert result.exit_code == 0 and result.stderr == ""
    assert "4 cues; 0 errors, 0 warnings" in result.stdout
    result = run(str(clean), str(faulty))
    assert result.exit_code == 1
    assert f"{faulty}:5 00:00:20.000 warning orphan: line 2 holds one word: 'though.'" in result.stdout
    bad = tmp_path / "bad.srt"
    bad.write_text("1\nnot a timestamp\nHello\n", encoding="utf-8")
    result = run(str(bad), str(faulty))
    assert result.exit_code == 2  # unreadable input; the other file is still reported
    assert result.stderr.count("\n") == 1 and str(bad) in result.stderr and "Traceback" not in result.stderr
    assert "orphan" in result.stdout
    result = run(str(bad), "--json")
    assert json.loads(result.stdout) == {"files": [], "unreadable": [{"path": str(bad), "error": ANY}]}
    result = run(str(faulty), "--against", str(bad))
    assert result.exit_code == 2 and str(bad) in result.stderr and result.stdout == ""


def test_cli_json_on_a_folder(tmp_path):
    for kind in ("gap", "orphan"):
        write(tmp_path / f"{kind}.ass", CLEAN + FAULTY[kind])
    result = run(str(tmp_path), "--json")
    assert result.exit_code == 1
    files = json.loads(result.stdout)["files"]
    assert [Path(f["path"]).name for f in files] == ["gap.ass", "orphan.ass"]
    assert [f["faults_by_kind"] for f in files] == [{"gap": 1}, {"orphan": 1}]
    assert files[0]["faults"][0] | {"message": None} == {
        "kind": "gap",
        "severity": "warning",
        "index": 6,
        "start": 22.04,
        "message": None,
        "avoidable": True,
    }


def test_against_a_reference_gives_suber_and_timing_offsets(tmp_path):
    reference = read_subtitles(write(tmp_path / "ref.srt", CLEAN)).cues
    assert compare(reference, reference)["suber"] == 0.0
    shifted = [(a + 0.2, b + 0.1, lines) for a, b, lines in CLEAN]
    shifted[0] = (1.2, 3.1, ["Hello there, how are you?"])  # one word dropped
    hypothesis = read_subtitles(write(tmp_path / "hyp.srt", shifted)).cues
    scores = compare(hypothesis, reference)
    assert 0 < scores["suber"] < 20
    assert scores["paired_cues"] == scores["reference_cues"] == 4
    assert scores["start_offset_median"] == pytest.approx(0.2) and scores["end_offset_median"] == pytest.approx(0.1)
    result = run(str(tmp_path / "hyp.srt"), "--against", str(tmp_path / "ref.srt"), "--json")
    assert json.loads(result.stdout)["files"][0]["against"] == scores


@pytest.mark.parametrize("style", ["change", "label"])
def test_cues_of_the_sample_transcript_pass_check(style):
    """The words of pyannote's sample.stm (real speech, two speakers) at their utterances' times: the cues built
    from them have no orphan word or unbalanced lines with the labels counted (issue 29's "[SPEAKER_00]: I'm in New
    Jersey now" over "though.")."""
    from dataclasses import replace

    from tests.cue_helpers import assert_check_passes, transcript_of, words_of
    from tests.media_conversation import read_stm
    from whisper_subtitler.cues import build_cues

    word_lists = []
    for u in read_stm():
        words = words_of(u.text, u.start, speaker=u.speaker)
        scale = (u.end - u.start) / (words[-1].end - u.start)
        word_lists.append(
            [
                replace(w, start=u.start + (w.start - u.start) * scale, end=u.start + (w.end - u.start) * scale)
                for w in words
            ]
        )
    cues = build_cues(transcript_of(*word_lists, duration=30.0), CueOptions(speaker_style=style))
    assert any(line.startswith("[Diane]: ") for c in cues for line in c.shown_lines)
    assert_check_passes(cues, end=30.0)


def test_transcribe_logs_the_faults_it_could_not_avoid(caplog):
    import logging

    from tests.cue_helpers import transcript_of, words_of
    from whisper_subtitler.cues import build_cues
    from whisper_subtitler.quality.report import log_faults

    # A says 60 characters in about 1.5 s, and B answers at once: A's cue cannot stay longer.
    fast = words_of("I really cannot believe how quickly all of this happened.", 1.0, char_seconds=0.02, speaker="A")
    slow = words_of("Neither can I, to be honest with you.", fast[-1].end + 0.1, speaker="B")
    cues = build_cues(transcript_of(fast, slow))
    with caplog.at_level(logging.INFO, logger="whisper_subtitler.quality"):
        report = log_faults("talk.mp4", cues, CueOptions(), "en", 0.0)
    assert report.faults and all(not f.avoidable for f in report.faults)
    assert caplog.messages[0].startswith("talk.mp4: cue 1 at 1.000 s: info cps: ")
