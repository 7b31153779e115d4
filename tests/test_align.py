"""``whisper-subtitler align``: a transcript timed against generated speech whose sentence times are exact
(espeak-ng sentences laid end to end, ``tests.media_speech.conversation``), with tiny.en."""

from __future__ import annotations

import json
import statistics

import pytest
import srt

from tests import media
from tests.media_speech import TEST_SCRIPT, conversation, sentences
from whisper_subtitler.align.refine import snap_to_pauses
from whisper_subtitler.align.script import read_script
from whisper_subtitler.align.windows import WINDOW_S, next_window

EXTRA = "The purple elephant juggles seven oranges on the roof."
EXTRA_AFTER = 3  # the extra sentence follows the third turn of the script


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    """The two-voice clip (about 39 s), its sentences in order with their exact times, and a plain-text transcript
    of it (one line per turn) with one sentence that is not in the audio."""
    folder = tmp_path_factory.mktemp("align")
    conv = conversation(TEST_SCRIPT, folder / "talk.wav", gaps=(0.7, 0.5, 0.9))
    said = [s for _, text in TEST_SCRIPT for s in sentences(text)]
    lines = [text for _, text in TEST_SCRIPT]
    lines.insert(EXTRA_AFTER, EXTRA)
    script = folder / "script.txt"
    script.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return conv, said, script


def errors(segments, said, turns) -> tuple[list[float], list[float]]:
    """Start and end errors (seconds) of the output sentences against the spoken ones."""
    assert [media.normalize(s["text"]) for s in segments] == [media.normalize(s) for s in said]
    return ([s["start"] - t[0] for s, t in zip(segments, turns)], [s["end"] - t[1] for s, t in zip(segments, turns)])


def median_abs(values) -> float:
    return statistics.median(abs(v) for v in values)


@pytest.mark.slow
def test_align_places_every_word_near_its_time_and_reports_the_missing_sentence(clip, cli, tmp_path):
    conv, said, script = clip
    result = cli(
        "align",
        str(conv.wav),
        str(script),
        "--model",
        "tiny.en",
        "--format",
        "srt,json",
        "--json",
        "--output-dir",
        str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert [(u["line"], u["text"], u["reason"]) for u in summary["unplaced"]] == [
        (EXTRA_AFTER + 1, EXTRA, "not in the audio")
    ]
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("not placed:")]
    assert f"{script}:{EXTRA_AFTER + 1}" in line and EXTRA in line

    cues = list(srt.parse((tmp_path / "talk.srt").read_text(encoding="utf-8")))
    assert media.normalize(" ".join(c.content for c in cues)).split() == media.normalize(" ".join(said)).split()

    transcript = json.loads((tmp_path / "talk.json").read_text(encoding="utf-8"))
    starts, ends = errors(transcript["segments"], said, conv.turns)
    sentence_starts = {round(t[0], 3): t[0] for t in conv.turns}
    first_words = [media.normalize(s).split()[0] for s in said]
    cue_starts = []  # cues that open a sentence: their display start against the sentence's
    k = 0
    for cue in cues:
        words = media.normalize(cue.content).split()
        while k < len(said) and words[0] != first_words[k]:
            k += 1
        if k < len(said):
            cue_starts.append(cue.start.total_seconds() - conv.turns[k][0])
    print(
        f"align, tiny.en, {len(said)} sentences: median |start error| {median_abs(starts):.3f} s, "
        f"median |end error| {median_abs(ends):.3f} s, max {max(map(abs, starts + ends)):.3f} s; "
        f"{len(cue_starts)} cues open a sentence, median |start error| {median_abs(cue_starts):.3f} s"
    )
    assert median_abs(starts) <= 0.15 and median_abs(ends) <= 0.15
    assert median_abs(cue_starts) <= 0.15
    assert sentence_starts  # the reference is exact to the sample (media_speech.conversation)


@pytest.mark.slow
def test_srt_input_streamed_in_short_pieces_gives_the_same_quality(clip, tmp_path, monkeypatch):
    """A timed transcript (SRT, its times rough), and the audio decoded in pieces cut at pauses as an hour of audio
    is, scaled down: 10-second windows, 15-second pieces. Windows and the text carried between them cross pieces."""
    from whisper_subtitler import audio, platform
    from whisper_subtitler.align import windows
    from whisper_subtitler.align.run import AlignOptions, align_media

    conv, said, _ = clip
    rough = [
        srt.Subtitle(i + 1, srt.timedelta(seconds=round(a)), srt.timedelta(seconds=round(b) + 1), text)
        for i, ((a, b, _), text) in enumerate(zip(conv.turns, said))
    ]
    script = tmp_path / "rough.srt"
    script.write_text(srt.compose(rough), encoding="utf-8")
    monkeypatch.setattr(audio, "PIECE_SECONDS", 15.0)
    monkeypatch.setattr(windows, "WINDOW_S", 10.0)
    monkeypatch.setattr(windows, "MIN_WINDOW", 4.0)
    selection = platform.configure(gpu_backend="cpu", model="tiny.en", environ={})
    result = align_media(
        conv.wav, script, AlignOptions(model="tiny.en", formats=("json",), output_dir=tmp_path), selection
    )
    assert result.unplaced == () and result.placed == result.words
    transcript = json.loads((tmp_path / "talk.json").read_text(encoding="utf-8"))
    starts, ends = errors(transcript["segments"], said, conv.turns)
    print(
        f"align in 15 s pieces, 10 s windows: median |start error| {median_abs(starts):.3f} s, "
        f"median |end error| {median_abs(ends):.3f} s"
    )
    assert median_abs(starts) <= 0.15 and median_abs(ends) <= 0.15


def test_an_output_that_would_replace_the_transcript_is_refused(clip, cli, tmp_path):
    conv, _, _ = clip
    wav = tmp_path / "talk.wav"
    wav.write_bytes(conv.wav.read_bytes())
    transcript = tmp_path / "talk.srt"
    transcript.write_text("1\n00:00:00,500 --> 00:00:03,000\nGood morning.\n\n", encoding="utf-8")
    before = transcript.read_bytes()
    result = cli("align", str(wav), str(transcript), "--model", "tiny.en", "--overwrite")
    assert result.returncode == 2, result.stderr
    assert "would replace the transcript" in result.stderr and "Traceback" not in result.stderr
    assert transcript.read_bytes() == before


def test_transcripts_are_read_without_markup(tmp_path):
    (tmp_path / "a.srt").write_text(
        "1\n00:00:01,000 --> 00:00:02,500\n<i>Hello</i> {\\an8}there.\n\n"
        "2\n00:00:03,000 --> 00:00:04,000\n- Yes.\n- No &amp; maybe.\n\n",
        encoding="utf-8-sig",
    )
    (tmp_path / "a.vtt").write_text(
        "WEBVTT\n\n00:01:01.250 --> 00:01:02.500\n<v Alice>Hello <b>there</b>.\n", encoding="utf-8"
    )
    (tmp_path / "a.json").write_text(
        json.dumps(
            {"language": "de", "segments": [{"start": 0.5, "end": 1.5, "text": " Guten Tag.", "speaker": "SPEAKER_01"}]}
        ),
        encoding="utf-8",
    )
    (tmp_path / "a.txt").write_text("First line.\n\n  Second   line.\n", encoding="utf-8")
    srt_script = read_script(tmp_path / "a.srt")
    assert [(x.text, x.start, x.end) for x in srt_script.lines] == [
        ("Hello there.", 1.0, 2.5),
        ("Yes. No & maybe.", 3.0, 4.0),
    ]
    (vtt,) = read_script(tmp_path / "a.vtt").lines
    assert (vtt.text, vtt.start, vtt.end, vtt.speaker) == ("Hello there.", 61.25, 62.5, "Alice")
    js = read_script(tmp_path / "a.json")
    assert js.language == "de" and js.lines[0].speaker == "SPEAKER_01" and js.lines[0].text == "Guten Tag."
    txt = read_script(tmp_path / "a.txt")
    assert [x.text for x in txt.lines] == ["First line.", "Second line."] and not txt.timed
    from whisper_subtitler.errors import InputError

    (tmp_path / "a.doc").write_text("x")
    with pytest.raises(InputError, match="unknown transcript format"):
        read_script(tmp_path / "a.doc")
    (tmp_path / "empty.txt").write_text("\n \n")
    with pytest.raises(InputError, match="no words"):
        read_script(tmp_path / "empty.txt")


def test_word_boundaries_move_onto_nearby_pauses():
    # DTW let "meeting." run 0.5 s into the pause and "Thank" start 0.2 s after it; the first word starts in silence.
    words = [(0.31, 1.0), (1.0, 3.87), (4.21, 4.73)]
    gaps = [(0.0, 0.51), (3.39, 4.03), (4.67, 5.0)]
    assert snap_to_pauses(words, gaps) == [(0.51, 1.0), (1.0, 3.39), (4.03, 4.67)]
    assert snap_to_pauses(words, []) == words  # no pause heard: DTW's times stay


def test_windows_follow_speech_and_end_in_pauses():
    regions = [(1.0, 9.0), (9.5, 18.0), (18.4, 29.0), (29.3, 40.0), (45.0, 46.0)]
    first = next_window(regions, 0.0, 50.0)
    assert first[0] == pytest.approx(0.8) and first[1] - first[0] <= WINDOW_S and first[1] == pytest.approx(29.15)
    assert next_window(regions, 40.0, 50.0) == (pytest.approx(44.8), pytest.approx(46.2))
    assert next_window(regions, 46.5, 50.0) is None
    long_gap = next_window([(0.0, 5.0), (9.0, 12.0)], 0.0, 20.0)
    assert long_gap == (0.0, pytest.approx(5.2))  # a pause of 3 s or more ends the window
