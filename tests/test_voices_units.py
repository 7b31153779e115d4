"""The voice library's pure parts: the file (round trip, model identity, corruption) and the naming rule on embeddings.

The rule's inputs are synthetic unit vectors at chosen cosine similarities, so every branch (threshold, margin, one
name per voice, the batch's unnamed voices) is checked exactly; real voices are in ``tests/test_voices_real.py``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from whisper_subtitler.errors import ExitCode, UsageError
from whisper_subtitler.types import Diarization, SpeakerTurn
from whisper_subtitler.voices import embed
from whisper_subtitler.voices.library import (
    Clip,
    Voice,
    VoiceLibrary,
    VoiceLibraryError,
    check_name,
    library_path,
    read_library,
    to_json,
    write_library,
)
from whisper_subtitler.voices.matching import (
    Cluster,
    SessionVoices,
    assign,
    cosine,
    name_clusters,
    relabel,
    session_label,
)

MODEL = {"name": "test model", "sha256": "ab" * 32, "dimension": 4, "method": "m1"}


def vec(*values: float) -> np.ndarray:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def at(similarity: float, base: int = 0, other: int = 1) -> np.ndarray:
    """A unit vector with cosine ``similarity`` to the ``base`` axis, the rest along the ``other`` axis."""
    v = np.zeros(4, dtype=np.float32)
    v[base] = similarity
    v[other] = np.sqrt(1 - similarity**2)
    return v


def library(**voices: np.ndarray) -> VoiceLibrary:
    return VoiceLibrary(MODEL, tuple(Voice(n, (Clip(f"{n}.wav", None, None, 3.0, v),)) for n, v in voices.items()))


def test_library_round_trip_same_bytes(tmp_path):
    lib = library(Bob=vec(0, 1, 0, 0), Alice=vec(1, 0.5, 0, 0))
    path = tmp_path / "voices.json"
    write_library(path, lib)
    again = read_library(path, MODEL)
    assert again.names == ("Alice", "Bob")
    assert np.array_equal(again.get("Alice").clips[0].embedding, lib.get("Alice").clips[0].embedding)
    assert to_json(again) == path.read_bytes()


def test_missing_library_is_empty_and_xdg_place(tmp_path):
    assert read_library(tmp_path / "none.json", MODEL).voices == ()
    assert library_path(None, {"XDG_DATA_HOME": str(tmp_path)}) == tmp_path / "whisper-subtitler/voices/voices.json"
    assert library_path(None, {"XDG_DATA_HOME": "relative"}).parts[-5:-2] == (".local", "share", "whisper-subtitler")


def test_another_model_is_refused(tmp_path):
    path = tmp_path / "voices.json"
    write_library(path, library(Alice=vec(1, 0, 0, 0)))
    with pytest.raises(VoiceLibraryError, match="another speaker-embedding model") as caught:
        read_library(path, {**MODEL, "sha256": "cd" * 32})
    assert caught.value.exit_code == ExitCode.MISSING_REQUIREMENT


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: b"{not json",
        lambda d: d.replace(b"whisper-subtitler/voices", b"other"),
        lambda d: d.replace(b'"version": 1', b'"version": 9'),
        lambda d: json.dumps({**json.loads(d), "voices": [{"name": "A", "clips": [{"embedding": "!!"}]}]}).encode(),
    ],
)
def test_corrupt_library_is_refused(tmp_path, damage):
    path = tmp_path / "voices.json"
    write_library(path, library(Alice=vec(1, 0, 0, 0)))
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(VoiceLibraryError):
        read_library(path, MODEL)


def test_names(tmp_path):
    assert check_name("  Alice ") == "Alice"
    for bad in ("", "A,B", "SPEAKER_00", "x" * 101, "a\nb"):
        with pytest.raises(UsageError):
            check_name(bad)
    lib = library(Alice=vec(1, 0, 0, 0))
    with pytest.raises(UsageError, match="already has 'Alice'"):
        lib.with_voices([Voice("Alice", ())])
    assert lib.with_voices([Voice("Alice", ())], replace_existing=True).get("Alice").clips == ()
    with pytest.raises(UsageError, match="no voice 'Bob'"):
        lib.without("Bob")


def test_voice_reference_weighs_clips_by_speech():
    voice = Voice("A", (Clip("a", None, None, 3.0, vec(1, 0, 0, 0)), Clip("b", None, None, 1.0, vec(0, 1, 0, 0))))
    assert np.allclose(voice.embedding, vec(3, 1, 0, 0), atol=1e-6)


def test_threshold_and_margin():
    # one cluster, two voices: named only when above the threshold and clear of the runner-up by the margin
    assert assign(np.array([[0.8, 0.3]]), 0.5, 0.1) == {0: 0}
    assert assign(np.array([[0.45, 0.1]]), 0.5, 0.1) == {}  # below the threshold
    assert assign(np.array([[0.8, 0.75]]), 0.5, 0.1) == {}  # two voices fit: no name
    assert assign(np.array([[0.6]]), 0.5, 0.1) == {0: 0}  # one voice: the threshold alone
    assert assign(np.zeros((0, 2)), 0.5, 0.1) == {} and assign(np.zeros((2, 0)), 0.5, 0.1) == {}


def test_two_clusters_never_one_name():
    # both clusters are clearly nearest to voice 0: the closer one takes it, the other stays unnamed
    scores = np.array([[0.7, 0.1], [0.9, 0.2]])
    assert assign(scores, 0.5, 0.1) == {1: 0}


def test_name_clusters_records_scores_and_keeps_labels():
    lib = library(Alice=at(1.0, 0, 1), Bob=at(1.0, 2, 3))
    clusters = [Cluster("SPEAKER_00", at(0.9, 2, 3), 5.0), Cluster("SPEAKER_01", at(0.2, 0, 1), 4.0)]
    matches = name_clusters(clusters, lib.names, lib.matrix(), threshold=0.5, margin=0.1)
    assert [(m.cluster, m.speaker, m.source) for m in matches] == [
        ("SPEAKER_00", "Bob", "library"),
        ("SPEAKER_01", "SPEAKER_01", None),
    ]
    assert matches[0].scores[0] == ("Bob", pytest.approx(0.9, abs=1e-4))
    assert [name for name, _ in matches[1].scores] == ["Alice", "Bob"]
    turns = (SpeakerTurn(0, 1, "SPEAKER_00"), SpeakerTurn(1, 2, "SPEAKER_01"))
    renamed = relabel(Diarization(turns, turns), matches)
    assert [t.speaker for t in renamed.turns] == ["Bob", "SPEAKER_01"]


def test_session_labels_the_same_voice_alike_across_files():
    session = SessionVoices(threshold=0.5, margin=0.1)
    x, y = at(1.0, 0, 1), at(1.0, 2, 3)
    first = name_clusters([Cluster("SPEAKER_00", x, 3), Cluster("SPEAKER_01", y, 3)], (), np.zeros((0, 4)), session)
    # the second file: the other voice speaks first, a little off its reference
    second = name_clusters(
        [Cluster("SPEAKER_00", at(0.9, 2, 1), 3), Cluster("SPEAKER_01", at(0.9, 0, 3), 3)],
        (),
        np.zeros((0, 4)),
        session,
    )
    third = name_clusters([Cluster("SPEAKER_00", at(1.0, 1, 0), 3)], (), np.zeros((0, 4)), session)  # a new voice
    assert [m.speaker for m in first] == ["SPEAKER_A", "SPEAKER_B"]
    assert [m.speaker for m in second] == ["SPEAKER_B", "SPEAKER_A"]
    assert [(m.speaker, m.source) for m in third] == [("SPEAKER_C", "session")]
    assert [session_label(k) for k in (0, 25, 26, 27)] == ["SPEAKER_A", "SPEAKER_Z", "SPEAKER_AA", "SPEAKER_AB"]


def test_library_names_first_then_session():
    lib = library(Alice=at(1.0, 0, 1))
    session = SessionVoices(threshold=0.5, margin=0.1)
    matches = name_clusters(
        [Cluster("SPEAKER_00", at(1.0, 2, 3), 3), Cluster("SPEAKER_01", at(0.95, 0, 1), 3)],
        lib.names,
        lib.matrix(),
        session,
    )
    assert [m.speaker for m in matches] == ["SPEAKER_A", "Alice"]


def test_cosine_shapes():
    assert cosine(np.eye(2), np.eye(2)).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    with pytest.raises(ValueError):
        cosine(np.eye(2), np.eye(3))


def test_embedded_spans():
    assert embed.speech_spans([(0, 0.1), (1, 50), (60, 80), (90, 91)]) == [(1, 50), (60, 71)]


def test_transcript_json_records_the_matches_and_reads_them_back():
    from whisper_subtitler.types import Transcript, VoiceMatch
    from whisper_subtitler.writers.json import transcript_from_dict, transcript_to_dict

    matches = (
        VoiceMatch("SPEAKER_00", "Alice", "library", (("Alice", 0.71), ("Bob", 0.2)), 4.5),
        VoiceMatch("SPEAKER_01", "SPEAKER_A", "session", (("Alice", 0.1), ("Bob", 0.05)), 3.0),
    )
    transcript = Transcript(segments=(), language="en", duration=1.0, voices=matches)
    document = json.loads(json.dumps(transcript_to_dict(transcript)))
    assert document["voices"][0] == {
        "cluster": "SPEAKER_00",
        "speaker": "Alice",
        "source": "library",
        "scores": [["Alice", 0.71], ["Bob", 0.2]],
        "seconds": 4.5,
    }
    assert transcript_from_dict(document).voices == matches
    assert "voices" not in transcript_to_dict(Transcript(segments=(), language="en", duration=1.0))  # as before


def test_serve_requests_use_the_servers_library_each_on_its_own(tmp_path):
    """A request to a server started with --voices-dir names from that library, without the batch's labels (one
    client's voices are not carried into another's reply); a request with diarize=false asks for no naming."""
    from types import SimpleNamespace

    from whisper_subtitler.options import DecodingOptions, SpeakerOptions
    from whisper_subtitler.serve.app import request_changes

    template = SimpleNamespace(
        decoding=DecodingOptions(),
        speakers=SpeakerOptions(voices_dir=tmp_path, voices_session=False),
        replace=lambda **changes: None,
    )
    common = dict(output="srt", task="transcribe", language=None, initial_prompt=None, word_timestamps=False)
    common |= dict(num_speakers=None, min_speakers=None, max_speakers=None, speaker_names=None, speaker_style="change")
    common |= dict(max_line_width=42, max_lines=2, max_cps=17.0, fps=24.0)
    voices = request_changes(template, diarize=None, **common)["speakers"].voices_options()
    assert voices is not None and voices.directory == tmp_path and voices.session is False
    assert request_changes(template, diarize=False, **common)["speakers"].voices_options() is None
