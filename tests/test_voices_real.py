"""The voice library on real voices: Diane and Sheila of pyannote's ``sample.wav`` enrolled from some of their
utterances (``tests/media_voices.py``, split ``enrol``), then named in conversations laid out from their other
utterances, in several orders; voices that are not enrolled (pytest-audioeval's read clips, espeak-ng) never named;
a batch's unnamed voices labelled alike; bad input refused with one line and the library unchanged.

One diarizer, one library and one diarization per conversation serve the whole module; the naming rule itself is
unit-tested on embeddings in ``tests/test_voices_units.py``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.media import SAMPLE_WAV
from tests.media_speech import VOICE_A, VOICE_B, VOICE_C, VOICE_D, write_wav
from tests.media_voices import audioeval_lines, enrol_ranges, espeak_lines, lay_out, sample_lines, truth
from whisper_subtitler.voices.library import library_path

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def diarizer():
    from whisper_subtitler.diarize import DiarizationOptions, load_diarizer

    with load_diarizer(DiarizationOptions()) as loaded:
        yield loaded


@pytest.fixture(scope="module")
def library_dir(tmp_path_factory, diarizer):
    """Diane and Sheila enrolled from their ``enrol`` utterances, cut out of sample.wav with --start/--end ranges."""
    from whisper_subtitler.voices.enrol import ClipRange, add_voice

    folder = tmp_path_factory.mktemp("voices")
    for speaker in ("Diane", "Sheila"):
        clips = [(SAMPLE_WAV, ClipRange(a, b)) for a, b in enrol_ranges(speaker)]
        add_voice(speaker, clips, folder, diarizer=diarizer)
    return folder


@pytest.fixture(scope="module")
def diarized(tmp_path_factory, diarizer):
    """Three conversations of the utterances that were not enrolled (Sheila first, Diane first, Sheila first), each
    with its audio and diarization."""
    from whisper_subtitler.audio import extract_audio
    from whisper_subtitler.vad import speech_regions

    folder = tmp_path_factory.mktemp("conversations")
    lines = [line for s in ("Diane", "Sheila") for split in ("tuning", "held-out") for line in sample_lines(s, split)]
    made = []
    for k, first in enumerate(("Sheila", "Diane", "Sheila")):
        laid = lay_out(lines, folder / f"talk{k}.wav", seed=50 + k, first=first)
        audio = extract_audio(laid.wav)
        made.append((laid, audio, diarizer.diarize(audio, speech=speech_regions(audio.samples))))
    return made


def test_enrolled_library(library_dir):
    from whisper_subtitler.diarize import campplus
    from whisper_subtitler.voices import embed

    assert embed.WEIGHTS == campplus.CAMPPLUS_WEIGHTS and embed.DIMENSION == campplus.EMBEDDING_DIM
    listing = CliRunner().invoke(_app(), ["voices", "list", "--json", "--voices-dir", str(library_dir)])
    assert listing.exit_code == 0, listing.output
    voices = {v["name"]: v for v in json.loads(listing.stdout)["voices"]}
    assert sorted(voices) == ["Diane", "Sheila"]
    assert [len(voices[n]["clips"]) for n in ("Diane", "Sheila")] == [2, 1]
    assert all(v["seconds"] >= 3.0 for v in voices.values())


def test_every_cluster_named_right_in_every_order(diarized, library_dir):
    from whisper_subtitler.voices import VoicesOptions
    from whisper_subtitler.voices.naming import VoiceNamer

    namer = VoiceNamer(VoicesOptions(library_dir, session=False))
    for laid, audio, diarization in diarized:
        reference = truth(laid, [(t.start, t.end, t.speaker) for t in diarization.exclusive_turns])
        assert len(set(reference.values())) == 2, (laid.wav.name, reference)
        renamed, matches = namer.name(audio, diarization)
        assert {m.cluster: m.speaker for m in matches} == reference, (laid.wav.name, matches)
        assert all(m.source == "library" and m.scores[0][0] == m.speaker for m in matches)
        assert renamed.speakers[0] == laid.speakers[0]  # the second speaker of sample.wav speaks first in two of them


def test_batch_labels_unnamed_voices_alike(diarized, tmp_path):
    from whisper_subtitler.voices import VoicesOptions
    from whisper_subtitler.voices.naming import VoiceNamer

    namer = VoiceNamer(VoicesOptions(tmp_path / "empty"))  # an empty library: every voice is unnamed
    labels = []
    for laid, audio, diarization in diarized:
        reference = truth(laid, [(t.start, t.end, t.speaker) for t in diarization.exclusive_turns])
        _, matches = namer.name(audio, diarization)
        assert all(m.source == "session" for m in matches)
        labels.append({reference[m.cluster]: m.speaker for m in matches})
    assert labels[0] == {"Sheila": "SPEAKER_A", "Diane": "SPEAKER_B"}  # Sheila speaks first in the first file
    assert labels[1] == labels[0] == labels[2]


@pytest.mark.parametrize("kind", ["audioeval", "espeak"])
def test_voices_not_in_the_library_are_never_named(library_dir, tmp_path, kind):
    from whisper_subtitler.vad import speech_regions
    from whisper_subtitler.voices.embed import embed_speech, identity
    from whisper_subtitler.voices.library import read_library
    from whisper_subtitler.voices.matching import Cluster, name_clusters

    library = read_library(library_path(library_dir), identity())
    if kind == "audioeval":
        voices = [audioeval_lines(language) for language in ("en", "es", "fr", "hi", "it", "ja", "zh")]
    else:
        voices = [espeak_lines(v, tmp_path)[:2] for v in (VOICE_A, VOICE_B, VOICE_C, VOICE_D)]
    clusters = []
    for lines in voices:
        samples = np.concatenate([line.samples for line in lines] + [np.zeros(8000, dtype=np.float32)])
        vector, seconds = embed_speech(samples, speech_regions(samples))
        clusters.append(Cluster(lines[0].speaker, vector, seconds))
    matches = name_clusters(clusters, library.names, library.matrix())
    assert [m.speaker for m in matches] == [c.label for c in clusters], matches
    assert max(score for m in matches for _, score in m.scores) < 0.3  # far below the threshold


def test_transcribe_names_the_library_voice_and_labels_the_other_alike(diarized, library_dir, tmp_path):
    """The whole command: with Diane enrolled alone, Diane is named although Sheila speaks first, and Sheila, not
    enrolled, is the batch's SPEAKER_A; the JSON records each cluster's scores."""
    import shutil

    only_diane = tmp_path / "lib"
    shutil.copytree(library_dir, only_diane)
    assert _voices(only_diane, "remove", "Sheila")[0] == 0
    files = [str(laid.wav) for laid, _, _ in diarized[:1]]
    args = ["transcribe", *files, "--model", "tiny.en", "--voices-dir", str(only_diane), "-f", "json,srt"]
    result = CliRunner().invoke(_app(), [*args, "-o", str(tmp_path / "out"), "--quiet"])
    assert result.exit_code == 0, result.output
    for laid, _, _ in diarized[:1]:
        document = json.loads((tmp_path / "out" / f"{laid.wav.stem}.json").read_text())
        assert set(document["speakers"]) == {"Diane", "SPEAKER_A"}
        by_label = {v["speaker"]: v for v in document["voices"]}
        assert by_label["Diane"]["source"] == "library" and by_label["Diane"]["scores"][0][0] == "Diane"
        assert by_label["SPEAKER_A"]["source"] == "session" and by_label["SPEAKER_A"]["scores"][0][1] < 0.6
        assert "[Diane]" in (tmp_path / "out" / f"{laid.wav.stem}.srt").read_text()


def _app():
    from whisper_subtitler.cli.app import app

    return app


def _voices(folder, *args):
    result = CliRunner().invoke(_app(), ["voices", *args, "--voices-dir", str(folder)])
    return result.exit_code, result.stderr.strip().splitlines()


@pytest.mark.parametrize("case", ["unreadable", "empty", "music", "name present", "other model", "corrupt"])
def test_bad_input_one_line_exit_code_library_unchanged(library_dir, tmp_path, case):
    import shutil

    folder = tmp_path / "lib"
    shutil.copytree(library_dir, folder)
    path = library_path(folder)
    clip = tmp_path / "clip.wav"
    code = 2
    if case == "unreadable":
        clip.write_text("not audio\n")
    elif case == "empty":
        write_wav(clip, np.zeros(0, dtype=np.float32))
    elif case == "music":  # no voice: the VAD hears no speech in it
        from tests.media_conversation import music_bed

        write_wav(clip, (0.3 * music_bed(16000 * 6, 7, tmp_path)).astype(np.float32))
    elif case == "name present":
        write_wav(clip, np.zeros(32000, dtype=np.float32))
    elif case == "other model":
        document = json.loads(path.read_text())
        document["model"]["sha256"] = "0" * 64
        path.write_text(json.dumps(document))
        code = 3
    else:
        path.write_bytes(path.read_bytes()[:200])
        code = 3
    before = path.read_bytes()
    name = "Diane" if case == "name present" else "Carol"
    exit_code, lines = _voices(folder, "add", name, str(clip))
    assert exit_code == code, lines
    assert len([line for line in lines if not line.lstrip().startswith("hint:")]) == 1, lines
    assert lines[0].startswith("error:")
    assert path.read_bytes() == before
    if code == 3:  # every command refuses such a library, transcribe --voices too, before any file
        assert _voices(folder, "list")[0] == 3
        args = ["transcribe", str(SAMPLE_WAV), "--voices-dir", str(folder), "-o", str(tmp_path / "out")]
        result = CliRunner().invoke(_app(), args)
        assert result.exit_code == 3, result.output
        assert path.read_bytes() == before and not (tmp_path / "out").exists()


def test_a_clip_of_two_voices_is_refused(diarizer, tmp_path):
    from whisper_subtitler.errors import ExitCode
    from whisper_subtitler.voices.enrol import ClipRange, VoiceClipError, add_voice

    with pytest.raises(VoiceClipError, match="2 voices speak in it") as caught:  # Diane and Sheila, 6.5-16 s
        add_voice("Carol", [(SAMPLE_WAV, ClipRange(6.5, 16.0))], tmp_path, diarizer=diarizer)
    assert caught.value.exit_code == ExitCode.USAGE
    assert not library_path(tmp_path).exists()


def test_remove_export_import(library_dir, tmp_path):
    shared = tmp_path / "team.json"
    assert _voices(library_dir, "export", str(shared))[0] == 0
    assert _voices(library_dir, "export", str(shared))[0] == 2  # never overwritten without --overwrite
    other = tmp_path / "other"
    assert _voices(other, "import", str(shared))[0] == 0
    assert library_path(other).read_bytes() == library_path(library_dir).read_bytes()
    code, lines = _voices(other, "import", str(shared))
    assert code == 2 and "already has" in lines[0]  # names present: all or none
    assert _voices(other, "remove", "Sheila")[0] == 0
    assert _voices(other, "remove", "Sheila")[0] == 2
    assert _voices(other, "import", str(shared), "--replace")[0] == 0
    assert library_path(other).read_bytes() == library_path(library_dir).read_bytes()
