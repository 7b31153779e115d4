"""The readability figures (``cues.stats``) and ``bench/cue_stats.py`` on a saved transcript."""

import json
import subprocess
import sys
from pathlib import Path

from tests.cue_helpers import MONOLOGUE, transcript_of, words_of
from whisper_subtitler.cues import CueOptions
from whisper_subtitler.cues.stats import cue_stats
from whisper_subtitler.types import Cue
from whisper_subtitler.writers import render

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "cue_stats.py"


def test_figures_count_every_kind_of_violation():
    cues = [
        Cue(0.0, 2.0, ("x" * 43,)),  # too wide
        Cue(1.9, 3.0, ("a", "b", "c")),  # overlaps the previous one, three lines
        Cue(3.0, 3.0, ("flash",)),  # ends at its start; gap below 2 frames
        Cue(5.0, 5.5, ("short but not boxed",)),  # too short, too fast, with room to extend
        Cue(10.0, 13.0, ("fine here",)),
    ]
    s = cue_stats(cues, CueOptions(), duration=20.0)
    assert s.cues == 5
    assert s.within_line_width_pct == 80.0 and s.within_line_count_pct == 80.0
    assert s.end_after_start_pct == 80.0 and s.overlaps == 1 and s.gaps_below_min == 2
    assert s.within_duration_pct == 60.0  # cues 3 (0 s) and 4 (0.5 s) too short
    assert s.within_cps_pct == 40.0 and s.max_line_width_seen == 43  # cues 1 (21.5 cps), 3 and 4 too fast


def test_short_cue_boxed_in_by_the_next_is_excused_where_speech_does_not_allow():
    cues = [Cue(0.0, 0.5 - 2 / 24, ("Hi.",)), Cue(0.5, 2.0, ("There we go.",))]
    s = cue_stats(cues, CueOptions(), duration=10.0)
    assert s.within_duration_pct == 50.0 and s.within_duration_where_possible_pct == 100.0


def test_script_prints_the_figures_of_a_saved_transcript(tmp_path):
    transcript = transcript_of(words_of(MONOLOGUE, speaker="SPEAKER_00"), words_of("Right.", 20.0))
    path = tmp_path / "t.json"
    path.write_text(render("json", transcript, ()))
    result = subprocess.run([sys.executable, str(SCRIPT), str(path), "--json"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert figures["cues"] >= 4 and figures["words"] == len(transcript.words)
    assert figures["within_line_width_pct"] == figures["within_line_count_pct"] == 100.0
    assert figures["overlaps"] == 0 and figures["within_cps_where_possible_pct"] >= 95.0
    narrow = subprocess.run(
        [sys.executable, str(SCRIPT), str(path), "--max-line-width", "20"], capture_output=True, text=True
    )
    assert narrow.returncode == 0 and "max_line_width_seen" in narrow.stdout


def test_script_rejects_a_bad_transcript(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    result = subprocess.run([sys.executable, str(SCRIPT), str(bad)], capture_output=True, text=True)
    assert result.returncode == 2 and "not a transcript" in result.stderr
