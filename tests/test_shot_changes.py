"""Shot changes: found by ffmpeg on videos made with known cuts and a dissolve, the cues timed by them (Netflix's
timing to the shot change, cues.shots), and check's report of a hand-made SRT against them (quality.shots)."""

from __future__ import annotations

import json
import math
import subprocess
from dataclasses import replace
from fractions import Fraction

import pytest

from tests.media_shots import SOURCES, Reel, Shot, reel, speech_track
from whisper_subtitler.cues import CueOptions, build_cues
from whisper_subtitler.cues.shot_list import read_shot_changes
from whisper_subtitler.cues.shots import ShotRules, time_to_shots, window_frames
from whisper_subtitler.cues.timing import Span, needed_duration, time_cues
from whisper_subtitler.errors import UsageError
from whisper_subtitler.quality.read import SubtitleCue, shown_cues
from whisper_subtitler.quality.rules import check_cues
from whisper_subtitler.quality.shots import shot_faults
from whisper_subtitler.types import Segment, Transcript, Word
from whisper_subtitler.video.shots import ShotChanges, changes_from, detect_shot_changes, video_info
from whisper_subtitler.writers.base import format_timestamp, to_milliseconds

FPS = 25
F = 1 / FPS  # one frame, seconds
OPTIONS = CueOptions(fps=FPS)
SHOT_KINDS = {"shot_flash", "shot_in", "shot_out"}
# Speech placed near the cuts (reel: cuts at 4, 5, 11 and 14 s, a dissolve from 8 to 9 s); Whisper's end of a
# sentence's last word runs late (0.7 s or more with tiny.en), which puts the first line's end near a cut too.
LINES = (
    (3.4, "The river runs past the old mill.", "end"),
    (5.25, "Bring the lantern to the barn tonight.", "start"),  # 6 frames after the cut at 5 s
    (10.0, "She kept every letter in a box under the bed.", "start"),  # runs across the cut at 11 s
    (14.6, "Nobody saw the train leave.", "start"),
)


@pytest.fixture(scope="module")
def film(tmp_path_factory) -> Reel:
    """17 s at 25 fps: cuts at 4, 5, 11 and 14 s, a one-second dissolve from 8 to 9 s, speech near and across them."""
    folder = tmp_path_factory.mktemp("shots")
    speech_track(folder / "speech.wav", LINES, 17.0, folder / "work")
    shots = [
        Shot(SOURCES[0], 4.0),
        Shot(SOURCES[1], 1.0),
        Shot(SOURCES[2], 4.0, dissolve=1.0),
        Shot(SOURCES[3], 3.0),
        Shot(SOURCES[4], 3.0),
        Shot(SOURCES[6], 3.0),
    ]
    made = reel(folder / "film.mp4", shots, fps=FPS, audio=folder / "speech.wav")
    assert made.cuts == (4.0, 5.0, 11.0, 14.0) and made.dissolves == ((8.0, 9.0),)
    return made


def test_ffmpeg_finds_every_hard_cut_on_its_frame(film):
    info = video_info(film.path)
    assert info is not None and info.fps == FPS
    assert detect_shot_changes(film.path, info) == film.cuts  # the dissolve is no cut: nothing flashes there


def test_an_audio_input_goes_without_the_rule(tmp_path, caplog):
    wav = speech_track(tmp_path / "a.wav", LINES[:1], 4.0, tmp_path / "work") and tmp_path / "a.wav"
    caplog.set_level("INFO", logger="whisper_subtitler")
    with ShotChanges(wav, OPTIONS) as shots:
        assert shots.cue_options() == OPTIONS
    assert "no video stream" in caplog.text


def test_the_video_frame_rate_comes_with_its_shot_changes(tmp_path):
    from tests.media import video_without_audio

    still = video_without_audio(tmp_path / "pattern.mp4")  # testsrc2 at 10 fps: no cut
    with ShotChanges(still, OPTIONS) as shots:
        assert shots.cue_options() == OPTIONS  # no shot change: the cues keep --fps
    with ShotChanges(still, replace(OPTIONS, shot_changes=(1.0,))) as shots:
        assert shots.cue_options().fps == 10 and shots.cue_options().shot_changes == (1.0,)


# The rules, on cue times as the builder gives them (Span: speech start, end, characters, words).


def _timed(spans, shots, duration=30.0, options=OPTIONS):
    return time_to_shots(time_cues(spans, options, duration), spans, shots, options, duration)


def test_the_window_is_half_a_second_in_frames():
    assert (window_frames(24), window_frames(25), window_frames(30), window_frames(60)) == (12, 12, 15, 30)


def test_an_in_time_just_after_a_cut_moves_onto_it():
    spans = [Span(10.0 + 8 * F, 12.0, 20, 4)]
    assert _timed(spans, [10.0])[0][0] == 10.0
    assert _timed(spans, [10.0 - 12 * F])[0][0] == spans[0].start  # 20 frames away: outside the window


def test_an_in_time_just_before_a_cut_moves_onto_it_or_a_window_before_it():
    long, short = Span(10.0 - 5 * F, 13.0, 20, 4), Span(10.0 - 5 * F, 10.6, 20, 4)
    assert _timed([long], [10.0])[0][0] == 10.0
    # On the cut the short cue would have less than its text needs: it starts 12 frames before the cut instead.
    start, end = _timed([short], [10.0])[0]
    assert start == pytest.approx(10.0 - 12 * F) and end - 10.0 >= 12 * F - 1e-9


def test_an_out_time_near_a_cut_ends_two_frames_before_it():
    before, after = Span(8.0, 10.0 - 6 * F, 20, 4), Span(8.0, 10.0 + 6 * F, 20, 4)
    assert _timed([before], [10.0])[0][1] == pytest.approx(10.0 - 2 * F)
    assert _timed([after], [10.0])[0][1] == pytest.approx(10.0 - 2 * F)


def test_a_cue_that_cannot_end_before_the_cut_keeps_a_window_after_it():
    # 40 characters need 40/17 = 2.35 s: ending 2 frames before the cut would leave 2.0 s.
    start, end = _timed([Span(8.0 - 2 * F, 10.0 + 6 * F, 40, 8)], [10.0])[0]
    assert end == pytest.approx(10.0 + 12 * F)


def test_no_move_breaks_the_gap_or_the_reading_time():
    # The next cue starts 4 frames after the cut: the first cannot end later than 2 frames before that.
    spans = [Span(8.0, 10.0 - 8 * F, 20, 4), Span(10.0 + 4 * F, 12.0, 20, 4)]
    times = _timed(spans, [10.0])
    assert times[1][0] == 10.0 and times[0][1] == pytest.approx(10.0 - 2 * F)
    # A cue whose text needs all its time stays where it is rather than lose it to the cut.
    tight = [Span(10.0 + 6 * F, 10.0 + 6 * F + needed_duration(34, OPTIONS), 34, 6)]
    assert _timed(tight, [10.0 + needed_duration(34, OPTIONS)])[0][1] >= tight[0].end - 1e-9


def test_moves_keep_the_builder_rules_on_random_cues():
    import random

    rng = random.Random(7)
    for options in (OPTIONS, _frames_options(Fraction(30000, 1001))) * 100:
        t, spans = 0.5, []
        for _ in range(8):
            t += rng.uniform(0.1, 1.5)
            length = rng.uniform(0.3, 3.0)
            spans.append(Span(t, t + length, rng.randint(5, 60), rng.randint(2, 9)))
            t += length
        shots = sorted(rng.uniform(0, t) for _ in range(6))
        before = time_cues(spans, options, t + 2)
        after = time_to_shots(before, spans, shots, options, t + 2)
        window = ShotRules.of(options).window
        for k, ((s0, e0), (s1, e1)) in enumerate(zip(before, after)):
            need = min(max(needed_duration(spans[k].chars, options), spans[k].shortest), e0 - s0)
            assert e1 - s1 >= need - 1e-9
            assert e1 - s1 <= options.max_duration + 1e-9 or e1 - s1 <= e0 - s0
            if k:
                assert s1 >= after[k - 1][1] + options.min_gap - 1e-9
            # Away from every cut (and the next cue not moved back onto one), a cue keeps its times exactly.
            far = all(abs(x - shot) >= window for x in (s0, e0) for shot in shots)
            if far and (k + 1 == len(after) or after[k + 1][0] == before[k + 1][0]):
                assert (s1, e1) == (s0, e0)


def test_shot_change_files_as_subtitle_edit_saves_them(tmp_path):
    good = tmp_path / "film.shotchanges"
    good.write_text("4\n5.0\n\n# a comment\n00:00:11.000\n00:14,000\n", encoding="utf-8")
    assert read_shot_changes(good) == (4.0, 5.0, 11.0, 14.0)
    bad = tmp_path / "bad.txt"
    bad.write_text("4.0\nfive\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"bad\.txt:2: not a shot-change time: 'five'"):
        read_shot_changes(bad)
    assert CueOptions(shot_changes=good).shot_changes == (4.0, 5.0, 11.0, 14.0)


def test_a_malformed_shot_change_file_is_a_usage_error_naming_the_line(tmp_path, cli, film):
    bad = tmp_path / "cuts.txt"
    bad.write_text("4.0\n-1\n", encoding="utf-8")
    done = cli("transcribe", str(film.path), "--shot-changes", str(bad), "-o", str(tmp_path))
    assert done.returncode == 2 and f"{bad}:2: not a shot-change time" in done.stderr
    assert "Traceback" not in done.stderr and not list(tmp_path.glob("*.srt"))


def test_the_builder_times_cues_by_shot_changes():
    words = [Word(" Hello", 10.0 + 5 * F, 10.5), Word(" there", 10.5, 11.2)]
    transcript = Transcript((Segment(words[0].start, words[-1].end, " Hello there", words=tuple(words)),), "en", 20.0)
    plain = build_cues(transcript, OPTIONS)
    timed = build_cues(transcript, replace(OPTIONS, shot_changes=(10.0,)))
    assert plain[0].start == words[0].start and timed[0].start == 10.0


# check --video and --shot-changes on a hand-made SRT: exactly its faults.

HAND_MADE = """1
00:00:01,000 --> 00:00:03,920
Fine: it ends two frames before the cut.

2
00:00:05,200 --> 00:00:07,000
Five frames late.

3
00:00:08,000 --> 00:00:10,760
Six frames short of the cut.

4
00:00:10,920 --> 00:00:12,520
A flash at the cut.

5
00:00:13,000 --> 00:00:15,000
Right across the cut.
"""
EXPECTED = [
    (2, "shot_in", "starts 5 frames after the shot change at 5.000 s, not on it"),
    (3, "shot_out", "ends 6 frames before the shot change at 11.000 s, not 2 frames before it"),
    (4, "shot_flash", "crosses the shot change at 11.000 s with 2 frames before it and 38 after (at least 12"),
    (5, "shot_crossing", "crosses the shot change at 14.000 s (25/25 frames)"),
]


def _shot_report(done) -> list[tuple[int, str, str]]:
    faults = json.loads(done.stdout)["files"][0]["faults"]
    return [(f["index"], f["kind"], f["message"]) for f in faults]


def test_check_reports_a_hand_made_srt_against_the_video_exactly(tmp_path, cli, film):
    srt = tmp_path / "hand.srt"
    srt.write_text(HAND_MADE, encoding="utf-8")
    done = cli("check", str(srt), "--video", str(film.path), "--json")
    assert done.returncode == 1, done.stderr
    found = _shot_report(done)
    assert [(i, k) for i, k, _ in found] == [(i, k) for i, k, _ in EXPECTED]
    assert all(message.startswith(want) for (_, _, message), (_, _, want) in zip(found, EXPECTED))
    times = tmp_path / "cuts.txt"
    times.write_text("4.0\n5.0\n11.0\n14.0\n", encoding="utf-8")
    same = cli("check", str(srt), "--shot-changes", str(times), "--fps", "25", "--json")
    assert _shot_report(same) == found
    text = cli("check", str(srt), "--shot-changes", str(times), "--fps", "25")
    assert "hand.srt:4 00:00:10.920 warning shot_flash: crosses the shot change at 11.000 s" in text.stdout
    kept = tmp_path / "film.json"  # a transcript keeps the shot changes its cues were timed by, and their frame rate
    kept.write_text(json.dumps({"segments": [], "shot_changes": [4.0, 5.0, 11.0, 14.0], "fps": 25}), encoding="utf-8")
    assert _shot_report(cli("check", str(srt), "--transcript", str(kept), "--json")) == found


def test_shot_faults_of_cues_on_the_rules_are_none():
    cues = [SubtitleCue(1, 10.0, 12.0, ("a",)), SubtitleCue(2, 12.0 + 8 * F, 13.0 - 2 * F, ("b",))]
    assert shot_faults(cues, [10.0, 13.0], OPTIONS) == []
    rules = ShotRules.of(OPTIONS)
    assert rules.near([10.0], 10.0 + 11 * F) == 10.0 and rules.near([10.0], 10.0 + 12 * F) is None


# The whole run: transcribe a video, the cues keep the rules; off, they do not.


@pytest.mark.slow
def test_transcribed_cues_keep_the_shot_change_rules(film):
    from whisper_subtitler import Subtitler

    sub = Subtitler(model="tiny.en", diarize=False, device="cpu")
    timed = sub.run(film.path)
    plain = sub.replace(cues=replace(sub.cues, shot_changes="off")).run(film.path)
    assert timed.shot_changes == film.cuts and plain.shot_changes == ()
    rules = replace(OPTIONS, fps=FPS)

    def faults(result):
        cues = shown_cues(result.cues)
        return [(f.index, f.kind) for f in (*check_cues(cues, rules), *shot_faults(cues, film.cuts, rules))]

    assert not [f for f in faults(timed) if f[1] in SHOT_KINDS | {"gap", "overlap"}]
    assert {kind for _, kind in faults(plain)} & SHOT_KINDS  # the same speech, untimed, breaks them
    assert 5.0 in [c.start for c in timed.cues]  # the line spoken 6 frames after the cut starts on it
    two_before = {round(cut - 2 * F, 3) for cut in film.cuts}  # an out-time near a cut: 2 frames before it
    assert {round(c.end, 3) for c in timed.cues} & two_before and not {round(c.end, 3) for c in plain.cues} & two_before
    assert [c.lines for c in timed.cues] == [c.lines for c in plain.cues]


@pytest.mark.slow
def test_the_run_summary_keeps_the_shot_changes_and_check_agrees(tmp_path, cli, film):
    args = ("transcribe", str(film.path), "--model", "tiny.en", "--no-diarize", "-f", "srt,json", "--json", "-v")
    done = cli(*args, "-o", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["files"][0]["shot_changes"] == list(film.cuts)
    assert "4 shot changes at 25 fps" in " ".join(done.stderr.split())  # -v (Rich may wrap the line)
    checked = cli("check", str(tmp_path / "film.srt"), "--video", str(film.path), "--json")
    assert not [f for f in _shot_report(checked) if f[1] in SHOT_KINDS], checked.stdout
    # The JSON transcript keeps them: format times the cues the same way without the video, check reads them.
    kept = json.loads((tmp_path / "film.json").read_text(encoding="utf-8"))
    assert kept["shot_changes"] == list(film.cuts) and kept["fps"] == FPS
    again, untimed = tmp_path / "again", tmp_path / "untimed"
    assert cli("format", str(tmp_path / "film.json"), "-f", "srt", "-o", str(again)).returncode == 0
    assert (again / "film.srt").read_bytes() == (tmp_path / "film.srt").read_bytes()
    off = cli("format", str(tmp_path / "film.json"), "-f", "srt,json", "-o", str(untimed), "--shot-changes", "off")
    assert off.returncode == 0, off.stderr
    assert (untimed / "film.srt").read_bytes() != (tmp_path / "film.srt").read_bytes()
    assert "shot_changes" not in json.loads((untimed / "film.json").read_text(encoding="utf-8"))
    by_transcript = cli("check", str(untimed / "film.srt"), "--transcript", str(tmp_path / "film.json"), "--json")
    assert {k for _, k, _ in _shot_report(by_transcript)} & SHOT_KINDS  # the untimed cues break the kept rules


# On the cut's frame as a player shows it (issue 67): a frame is shown at its presentation time, which is a whole
# millisecond only at rates like 25 fps (at 30000/1001 fps frame 100 is at 3336.667 ms). libass, under ffmpeg's
# subtitles filter (our --burn-in), takes that time truncated to the millisecond and shows a cue from the first
# frame whose time has reached the cue's start, mpv rounds it: a start written as 3.337 s is first shown on frame
# 101, one frame after the cut. The start must be written at or before the frame's time (and after the frame
# before it), an end 2 frames before the cut at or before that frame's time (so that 2 frames stay blank).

NTSC = (Fraction(24000, 1001), Fraction(30000, 1001), Fraction(60000, 1001))
RATES = (*NTSC, Fraction(24), Fraction(25), Fraction(30), Fraction(50))
CUT_FRAMES = (2, 10, 11, 100, 2997, 24_000 + 7, 107_892)  # up to an hour in: 6 significant digits are not enough


def _shown_from(ms: int, fps: Fraction) -> tuple[int, int]:
    """The first frame at ``fps`` whose presentation time has reached ``ms``, the frame from which a cue starting at
    ``ms`` is shown (or one ending at ``ms`` no longer is): as libass under ffmpeg's subtitles filter counts
    (the frame's time in ms truncated) and as mpv does (rounded)."""
    found = []
    for to_ms in (math.floor, round):
        j = max(0, math.floor(ms * fps / 1000) - 2)
        while to_ms(j * 1000 / fps) < ms:
            j += 1
        found.append(j)
    return found[0], found[1]


def _frames_options(fps: Fraction) -> CueOptions:
    return CueOptions(fps=float(fps))


def test_a_cue_after_a_cut_is_shown_from_the_cut_frame_at_any_frame_rate():
    for fps in RATES:
        options, frame = _frames_options(fps), 1 / fps
        window = window_frames(float(fps))
        for k in CUT_FRAMES:
            exact = k * frame
            for cut in (float(exact), round(float(exact), 6)):  # a time computed, and one from ffmpeg (microseconds)
                for after in (Fraction(1, 5), Fraction(1), Fraction(2), Fraction(7, 2), Fraction(window - 1)):
                    start = float(exact + after * frame)
                    spans = [Span(start, start + 3.0, 20, 4)]
                    timed = _timed(spans, [cut], exact + 60, options)[0][0]
                    assert _shown_from(to_milliseconds(timed), fps) == (k, k), (fps, k, cut, after, timed)


def test_the_cue_before_leaves_two_frames_blank_and_a_short_cue_a_window_before():
    for fps in RATES:
        options, frame = _frames_options(fps), 1 / fps
        window = window_frames(float(fps))
        for k in CUT_FRAMES[3:]:  # room for a cue before the cut
            cut = round(float(k * frame), 6)
            before = Span(float((k - 80) * frame), float((k + 4) * frame), 20, 4)  # ends 4 frames after the cut
            after = Span(float((k + 5) * frame), float((k + 90) * frame), 20, 4)  # starts 5 frames after it
            (s0, e0), (s1, e1) = _timed([before, after], [cut], cut + 60, options)
            assert _shown_from(to_milliseconds(e0), fps) == (k - 2, k - 2)  # last shown on k-3: k-2, k-1 blank
            assert _shown_from(to_milliseconds(s1), fps) == (k, k)
            assert s1 - e0 >= options.min_gap - 1e-9  # the builder's gap, in seconds, kept
            # Too short from the cut: the cue starts a window before it, on that frame.
            short = Span(float((k - 3) * frame), float((k + 2) * frame), 20, 4)
            start, end = _timed([short], [cut], cut + 60, options)[0]
            assert _shown_from(to_milliseconds(start), fps) == (k - window, k - window), (fps, k, start)
            assert end - start >= needed_duration(20, options) - 1e-9


def test_cues_away_from_the_cuts_keep_their_times_exactly():
    for fps in RATES:
        options = _frames_options(fps)
        spans = [Span(1.013, 2.4, 20, 4), Span(4.0, 5.1, 12, 3), Span(8.2, 9.9, 30, 6), Span(12.345, 13.0, 8, 2)]
        before = time_cues(spans, options, 20.0)
        shots = [3.3, 6.7, 11.2, 16.0]
        rules = ShotRules.of(options)
        assert all(abs(t - shot) > rules.window for pair in before for t in pair for shot in shots)
        assert time_to_shots(before, spans, shots, options, 20.0) == before
        # A cue already on a cut (a whole millisecond at 25 fps) keeps its time too.
        on = [Span(4.0, 6.0, 20, 4)]
        assert time_to_shots(time_cues(on, OPTIONS, 20.0), on, [4.0], OPTIONS, 20.0)[0][0] == 4.0


def test_ffmpeg_times_are_read_to_the_microsecond():
    printed = b"frame:0    pts:1003336667 pts_time:1003.34\nlavfi.scene_score=0.66\n"  # %.6g: 3.3 ms late
    assert changes_from(printed, time_base=Fraction(1, 1_000_000)) == (1003.336667,)
    assert changes_from(printed) == (1003.34,)  # without a time base: ffmpeg's 6 significant digits


def _dark_reel(target, fps=Fraction(30000, 1001)) -> Reel:
    """Three plain grey shots at ``fps``: cuts at frames 100 (3.336667 s) and 115."""
    grey = ("color=c=0x202020:{s}", "color=c=0x505050:{s}", "color=c=0x202020:{s}")
    return reel(target, [Shot(grey[0], 3.3366), Shot(grey[1], 0.5), Shot(grey[2], 1.0)], size="160x90", fps=fps)


def _ffmpeg(*args) -> None:
    subprocess.run(["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", *map(str, args)], check=True)


def _lit_frames(video, srt) -> list[int]:
    """The frames of ``video`` (numbered from 0) on which ffmpeg's subtitles filter (libass) draws ``srt``."""
    vf = f"subtitles=filename={srt.name},signalstats,metadata=mode=print:key=lavfi.signalstats.YMAX:file=-"
    cmd = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-i", str(video), "-vf", vf, "-f", "null", "-"]
    out = subprocess.run(cmd, cwd=srt.parent, capture_output=True, text=True, check=True).stdout
    ymax = [int(line.split("=")[1]) for line in out.splitlines() if "signalstats.YMAX=" in line]
    return [j for j, y in enumerate(ymax) if y > 120]  # white text; the grey shots are at most 85


def test_a_burned_in_cue_after_a_cut_appears_on_the_cut_frame(tmp_path):
    filters = subprocess.run(["ffmpeg", "-hide_banner", "-filters"], capture_output=True, text=True).stdout.split()
    if "subtitles" not in filters:
        pytest.skip("ffmpeg without libass (no subtitles filter)")
    film = _dark_reel(tmp_path / "ntsc.mp4")
    fps, frame = Fraction(film.fps), 1 / Fraction(film.fps)
    cut = film.cuts[0]  # frame 100
    assert detect_shot_changes(film.path) == film.cuts  # to the microsecond: 3.336667, not ffmpeg's 3.33667
    options = _frames_options(fps)
    spans = [Span(0.5, float(104 * frame), 20, 4), Span(float(104.5 * frame), 4.5, 20, 4)]
    times = _timed(spans, film.cuts, film.duration, options)
    srt = tmp_path / "cues.srt"
    srt.write_text(
        "".join(
            f"{n}\n{format_timestamp(s, True, ',')} --> {format_timestamp(e, True, ',')}\nWWWWWWWW\n\n"
            for n, (s, e) in enumerate(times, 1)
        ),
        encoding="utf-8",
    )
    lit = set(_lit_frames(film.path, srt))
    assert {97, 100, 101} <= lit and not {98, 99} & lit, (times, sorted(lit))  # 2 blank frames, then the cut frame
    assert times[1][0] <= cut


def test_shot_changes_keep_their_time_when_the_file_does_not_start_at_zero(tmp_path):
    film = _dark_reel(tmp_path / "ntsc.mp4")
    ts = tmp_path / "ntsc.ts"  # MPEG-TS starts at 1.4 s: ffmpeg already counts from there
    _ffmpeg("-i", film.path, "-c", "copy", ts)
    info = video_info(ts)
    assert info is not None and info.start > 1 and detect_shot_changes(ts, info) == film.cuts
    # The picture starting 1000 s into the file (the audio from 0): the cut at 1003.336667 s, 6 digits being 1003.34.
    silence, late = tmp_path / "silence.m4a", tmp_path / "late.mp4"
    _ffmpeg("-f", "lavfi", "-i", "anullsrc=r=8000:cl=mono", "-t", "1006", "-c:a", "aac", "-b:a", "8k", silence)
    _ffmpeg("-itsoffset", "1000", "-i", film.path, "-i", silence, "-map", "0:v", "-map", "1:a", "-c", "copy", late)
    cuts = detect_shot_changes(late)
    assert cuts == tuple(round(1000 + c, 6) for c in film.cuts)
    start = _timed([Span(cuts[0] + 0.1, cuts[0] + 3, 20, 4)], cuts, 1010.0, _frames_options(Fraction(film.fps)))[0][0]
    assert to_milliseconds(start) == 1003336  # frame 100's time, 1003336.667 ms, as libass counts it
