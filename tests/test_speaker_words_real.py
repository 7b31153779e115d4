"""Which speaker says each word, on real speech: pyannote's sample re-arranged into a conversation with quick
turns (0.1-0.5 s pauses, seed 6, the tuning split's ``t-clean-s6-quick`` of ``bench/conversations.py``), where
Whisper runs two speakers' sentences into one ("So what's the name of New Jersey now, though?": Sheila's "so what can
I say" and Diane's "I'm in New Jersey now though").

The word-to-speaker costs that cross-validation chose (``speakers.INSIDE_COST`` 0.5 s, ``CLAUSE_COST`` 0.2 s) gave 2
words to the wrong speaker here, the costs chosen by hand before (1.0 and 0.4 s) 10 (docs/speaker-attribution.md,
"The cross-validated costs adopted"); since words whose timestamp holds a whole pause start after it
(``transcription.pauses``: Diane's "didn't" no longer reaches back over the pause into Sheila's "Neither did I"),
none.
"""

from __future__ import annotations

import pytest

from tests.media_conversation import rearranged_conversation, word_errors
from tests.media_speech import read_wav

pytestmark = pytest.mark.slow


def test_words_keep_their_speaker_where_whisper_runs_two_turns_together(tmp_path):
    from whisper_subtitler import Subtitler
    from whisper_subtitler.vad import pauses, tight_regions

    made = rearranged_conversation(tmp_path / "quick.wav", seed=6, gaps=(0.1, 0.5))
    samples = read_wav(made.wav)
    words = Subtitler("base", diarize=True).run(samples).transcript.words
    errors = word_errors([(w.speaker, w.start, w.end, w.text) for w in words], made.utterances)
    print(errors)
    assert len({w.speaker for w in words}) == 2
    assert errors["cp_errors"] - errors["errors"] <= 1
    gaps = pauses(tight_regions(samples), 0.0, made.duration)
    assert not [w for w in words if any(w.start <= a and b < w.end for a, b in gaps)]  # no word holds a pause
