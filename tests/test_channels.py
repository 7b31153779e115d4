"""The channel of a multichannel stream (issue 47, ``whisper_subtitler.channels``): the layout rules, the speech check
of ``auto``, the usage errors, the reports, and real dialogue in 5.1, 5.1(side) and 7.1 files under a music bed."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import ffmpeg as ffmpeg_python
import jiwer
import numpy as np
import pytest

from tests.media import normalize
from tests.media_channels import centre_alone, rms, surround
from tests.media_conversation import Rearranged, read_stm, rearranged_conversation
from tests.media_speech import read_wav
from tests.test_diarize_real_world import der
from whisper_subtitler.audio import _open, extract_audio, ffmpeg_binary, ffmpeg_url
from whisper_subtitler.channels import (
    ChannelUse,
    check_channels,
    check_windows,
    choose_by_layout,
    layout_channels,
)
from whisper_subtitler.errors import ChannelError, ExitCode, UsageError
from whisper_subtitler.options import AudioOptions, SpeakerOptions
from whisper_subtitler.types import SAMPLE_RATE, Segment, Transcript, Word
from whisper_subtitler.writers.json import read_transcript, transcript_from_dict, transcript_to_dict

# ---------------------------------------------------------------------------------------------------------- rules


@pytest.mark.parametrize(
    ("value", "canonical"),
    [("auto", "auto"), ("Downmix", "downmix"), ("centre", "center"), ("CENTER", "center"), ("left", "left"),
     ("right", "right"), ("0", "0"), ("07", "7")],
)  # fmt: skip
def test_channels_values(value, canonical):
    assert check_channels(value) == canonical
    assert AudioOptions(channels=value).channels == canonical


@pytest.mark.parametrize("value", ["middle", "-1", "1.5", "", "FC", "٣"])
def test_channels_invalid_value_is_a_usage_error(value):
    with pytest.raises(UsageError, match="--channels"):
        AudioOptions(channels=value)


@pytest.mark.parametrize("layout", ["3.0", "4.0", "5.0", "5.0(side)", "5.1", "5.1(side)", "6.1", "7.1", "7.1(wide)"])
def test_auto_takes_the_centre_of_a_layout_that_has_one(layout):
    count = len(layout_channels(layout, 0) or ())
    use = choose_by_layout("auto", layout, count, "film.mkv")
    assert (use.used, use.pan, use.default) == ("FC", "pan=mono|c0=FC", False)
    assert layout in use.reason and "front centre" in use.reason


@pytest.mark.parametrize(("layout", "count"), [("mono", 1), ("stereo", 2), ("", 1), ("", 2)])
def test_auto_downmixes_mono_and_stereo_as_before(layout, count):
    use = choose_by_layout("auto", layout, count)
    assert (use.used, use.pan, use.default) == ("downmix", None, True)


@pytest.mark.parametrize(("layout", "count"), [("quad", 4), ("2.1", 3), ("", 6), ("6 channels", 6), ("5.1", 4)])
def test_auto_downmixes_a_layout_without_a_named_centre(layout, count):
    use = choose_by_layout("auto", layout, count)
    assert (use.used, use.default) == ("downmix", False)


def test_layout_names():
    assert layout_channels("5.1(side)", 6) == ("FL", "FR", "FC", "LFE", "SL", "SR")
    assert layout_channels("FL+FR+FC", 3) == ("FL", "FR", "FC")
    assert layout_channels("6 channels (FL+FR+FC+LFE+BL+BR)", 6) == ("FL", "FR", "FC", "LFE", "BL", "BR")
    assert layout_channels("", 6) is None
    assert layout_channels("5.1", 2) is None  # a layout that does not fit the stream is not believed


def test_named_and_numbered_channels():
    assert choose_by_layout("center", "5.1", 6).used == "FC"
    assert choose_by_layout("left", "7.1", 8).used == "FL"
    assert choose_by_layout("right", "stereo", 2).used == "FR"
    assert choose_by_layout("3", "5.1", 6).used == "LFE"
    assert choose_by_layout("3", "", 4).used == "c3"  # unnamed: the channel by number
    assert choose_by_layout("downmix", "5.1", 6) == ChannelUse("downmix", "--channels downmix", "5.1")
    assert choose_by_layout("center", "5.1", 6).pan == "pan=mono|c0=FC"


@pytest.mark.parametrize(
    ("mode", "layout", "count", "said"),
    [("center", "stereo", 2, "layout stereo"), ("center", "quad", 4, "layout quad"), ("left", "mono", 1, "mono"),
     ("center", "", 6, "layout unnamed"), ("6", "5.1", 6, "layout 5.1")],
)  # fmt: skip
def test_a_channel_the_stream_lacks_is_a_usage_error_of_that_file(mode, layout, count, said):
    with pytest.raises(ChannelError) as caught:
        choose_by_layout(mode, layout, count, "dir/film.mkv")
    error = caught.value
    assert error.exit_code == ExitCode.USAGE == 2 and not error.ends_batch
    assert error.message.startswith("dir/film.mkv: ") and said in error.message and "\n" not in str(error)


def test_check_windows_spread_over_a_long_file():
    assert check_windows(None) == [(0.0, 120.0)]
    assert check_windows(90.0) == [(0.0, 120.0)]
    windows = check_windows(600.0)
    assert [length for _, length in windows] == [30.0] * 4
    assert [start + length / 2 for start, length in windows] == [75.0, 225.0, 375.0, 525.0]


def test_json_transcript_says_the_channel_and_reads_old_files():
    words = (Word(" Hello", 0.0, 0.5, 0.9),)
    plain = Transcript((Segment(0.0, 0.5, " Hello", words),), "en", 1.0)
    centre = ChannelUse("FC", "layout 5.1: front centre", "5.1")
    data = transcript_to_dict(replace(plain, channel=centre))
    assert data["audio_channel"] == {"used": "FC", "reason": "layout 5.1: front centre", "layout": "5.1"}
    assert list(data).index("audio_channel") == list(data).index("duration") + 1
    assert transcript_from_dict(json.loads(json.dumps(data))).channel == centre
    stereo = ChannelUse("downmix", "stereo track: downmix", "stereo", default=True)
    as_before = transcript_to_dict(replace(plain, channel=stereo))
    assert as_before == transcript_to_dict(plain) and "audio_channel" not in as_before  # unchanged, byte for byte
    old = transcript_to_dict(plain)
    assert transcript_from_dict(old).channel is None
    assert transcript_from_dict({**old, "audio_channel": "FC"}).channel is None  # not ours: ignored


# ----------------------------------------------------------------------------------------------------- real media


@pytest.fixture(scope="module")
def conversation(tmp_path_factory) -> Rearranged:
    """A real two-speaker conversation (29 s) with its exact references."""
    return rearranged_conversation(tmp_path_factory.mktemp("channels") / "conversation.wav", seed=3)


@pytest.fixture(scope="module")
def films(conversation) -> dict[str, Path]:
    """The conversation in the front centre of a 5.1, 5.1(side) and 7.1 mix, a music bed at its level in every
    other channel; a 5.1 with the dialogue in front left and right and a silent centre; the stereo and mono
    mixes of the same."""
    speech = read_wav(conversation.wav)
    spans = [speech[round(u.start * SAMPLE_RATE) : round(u.end * SAMPLE_RATE)] for u in conversation.utterances]
    level = rms(np.concatenate(spans))  # the RMS of the speech in its utterances
    folder = conversation.wav.parent
    made = {
        "5.1 aac mp4": surround(folder / "film-51.mp4", speech, level, "5.1", "aac"),
        "5.1(side) eac3 mp4": surround(folder / "film-51side.mp4", speech, level, "5.1(side)", "eac3"),
        "7.1 aac mkv": surround(folder / "film-71.mkv", speech, level, "7.1", "aac"),
        "5.1(side) ac3 mkv": surround(folder / "film-51side.mkv", speech, level, "5.1(side)", "ac3"),
        "lr": surround(
            folder / "film-lr.mkv", speech, level, "5.1(side)", "ac3", dialogue=("FL", "FR"), silent=("FC",)
        ),
        "stereo": surround(folder / "film-stereo.mp4", speech, level, "stereo", "aac", dialogue=("FL", "FR")),
    }
    return made


def test_the_downmix_command_of_mono_and_stereo_is_unchanged(films, conversation):
    """The ffmpeg command for a stereo and a mono input is, byte for byte, the one every earlier version ran."""
    for source in (films["stereo"], conversation.wav):
        absolute = source.absolute()
        before = (
            ffmpeg_python.input(ffmpeg_url(absolute), protocol_whitelist="file")
            .output("pipe:", map="0:a:0", format="f32le", acodec="pcm_f32le", ac=1, ar=SAMPLE_RATE)
            .global_args("-nostdin", "-hide_banner", "-loglevel", "error")
            .compile(cmd=ffmpeg_binary("ffmpeg"))
        )
        _, cmd, use = _open(source, 0)
        assert cmd == before and use.default and use.used == "downmix"
    _, cmd, use = _open(films["5.1 aac mp4"], 0, "downmix")
    assert "-ac" in cmd and "-af" not in cmd and not use.default


@pytest.mark.slow
@pytest.mark.parametrize("name", ["5.1 aac mp4", "5.1(side) eac3 mp4", "7.1 aac mkv"])
def test_auto_takes_the_dialogue_from_the_centre(films, name, tmp_path):
    """The samples ``auto`` transcribes are those of the centre taken alone with ffmpeg (``pan=mono|c0=FC``)."""
    audio = extract_audio(films[name])
    assert audio.channel is not None and audio.channel.used == "FC", audio.channel
    assert "speech" in audio.channel.reason and name.split()[0] in audio.channel.reason
    alone = read_wav(centre_alone(films[name], tmp_path / "centre.wav"))
    assert len(alone) == len(audio.samples)
    assert float(abs(alone - audio.samples).max()) < 2 / 32768  # the WAV's 16-bit rounding only


def _words(result) -> str:
    return normalize(" ".join(w.text for w in result.transcript.words))


def _wer(reference: Rearranged, hypothesis: str) -> float:
    truth = normalize(" ".join(u.text for u in sorted(read_stm(reference.stm), key=lambda u: u.start)))
    return jiwer.wer(truth, hypothesis)


@pytest.fixture(scope="module")
def subtitler():
    """tiny.en with the embedded diarization pipeline, loaded once for the module."""
    from whisper_subtitler.api import Subtitler

    with Subtitler("tiny.en", diarize=True) as sub:
        yield sub


@pytest.mark.slow
def test_words_and_speakers_of_a_film_are_those_of_its_centre(films, conversation, subtitler, tmp_path):
    """Real speech under a music bed at its own level in five channels: ``auto`` gives the words and the speakers
    of the centre transcribed alone (WER and DER within 0.02, the two speakers), far fewer word errors than the
    downmix every earlier version transcribed."""
    film = films["5.1(side) ac3 mkv"]
    auto = subtitler.run(film)
    assert auto.transcript.channel is not None and auto.transcript.channel.used == "FC"
    alone = subtitler.run(centre_alone(film, tmp_path / "centre.wav"))
    downmix = subtitler.replace(audio=AudioOptions(channels="downmix"), speakers=SpeakerOptions(diarize=False)).run(
        film
    )
    wer_auto, wer_alone, wer_downmix = (_wer(conversation, _words(r)) for r in (auto, alone, downmix))
    assert abs(wer_auto - wer_alone) <= 0.02, (wer_auto, wer_alone)
    assert wer_auto < 0.3 and wer_downmix > wer_auto + 0.2, (wer_auto, wer_downmix)
    der_auto, der_alone = (der(conversation.rttm, r.transcript.turns, conversation.duration) for r in (auto, alone))
    assert abs(der_auto - der_alone) <= 0.02 and der_auto < 0.15, (der_auto, der_alone)
    assert len(auto.transcript.speakers) == len(alone.transcript.speakers) == 2


@pytest.mark.slow
def test_a_silent_centre_falls_back_to_the_downmix(films, subtitler, cli, tmp_path):
    """Dialogue in front left and right, nothing in the centre: ``auto`` hears no speech there and downmixes; its
    words are those of ``--channels downmix``. ``-v``, the ``--json`` summary and the JSON transcript say so."""
    film = films["lr"]
    result = cli("transcribe", str(film), "--model", "tiny.en", "--no-diarize", "-f", "json", "-v", "--json",
                 "--output-dir", str(tmp_path))  # fmt: skip
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)["files"][0]
    assert summary["audio_channel"]["used"] == "downmix" and "little speech" in summary["audio_channel"]["reason"]
    assert "audio channel downmix" in " ".join(result.stderr.split())  # Rich wraps long lines
    written = read_transcript(tmp_path / f"{film.stem}.json")
    assert written.channel is not None and written.channel.used == "downmix" and written.channel.layout == "5.1(side)"
    downmix = subtitler.replace(audio=AudioOptions(channels="downmix"), speakers=SpeakerOptions(diarize=False)).run(
        film
    )
    said = normalize(" ".join(w.text for w in written.words))
    assert said == _words(downmix) and len(said.split()) > 20


@pytest.mark.slow
def test_center_on_a_stereo_file_fails_that_file_with_exit_code_2(films, cli, tmp_path):
    """``--channels center`` in a batch: the stereo file fails with one line naming it and its layout (exit code
    2), a corrupt multichannel file fails with one line, the 7.1 file is transcribed from its centre."""
    stereo, film = films["stereo"], films["7.1 aac mkv"]
    data = bytearray(films["5.1(side) ac3 mkv"].read_bytes())
    data[len(data) // 5 : len(data) * 4 // 5] = bytes(len(data) * 4 // 5 - len(data) // 5)  # zeros over the middle
    corrupt = tmp_path / "corrupt.mkv"
    corrupt.write_bytes(bytes(data))
    result = cli("transcribe", str(stereo), str(corrupt), str(film), "--channels", "center", "--model", "tiny.en",
                 "--no-diarize", "-f", "srt", "--json", "--output-dir", str(tmp_path))  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if stereo.name in line]
    assert len(lines) == 1 and "layout stereo" in lines[0] and "no FC channel" in lines[0], result.stderr
    assert len([line for line in result.stderr.splitlines() if corrupt.name in line]) == 1, result.stderr
    files = {Path(f["input"]).name: f for f in json.loads(result.stdout)["files"]}
    assert files[stereo.name]["status"] == "failed" and "layout stereo" in files[stereo.name]["error"]
    assert files[corrupt.name]["status"] == "failed" and files[corrupt.name]["error"]
    assert files[film.name]["status"] == "done"
    assert files[film.name]["audio_channel"] == {"used": "FC", "reason": "--channels center"}
    assert (tmp_path / f"{film.stem}.srt").stat().st_size > 0


def test_the_choice_follows_the_audio_track_and_language(films, tmp_path):
    """``--audio-track`` and ``--audio-language`` pick the stream first; the channel is chosen by that stream's
    layout (``pieces.open_stream``, what the pipeline, ``align`` and the Ray workers open)."""
    from tests.media import ffmpeg
    from whisper_subtitler.pieces import open_stream

    both = tmp_path / "two-tracks.mkv"
    ffmpeg("-i", str(films["stereo"]), "-i", str(films["7.1 aac mkv"]), "-map", "0:a", "-map", "1:a", "-c", "copy",
           "-metadata:s:a:0", "language=ger", "-metadata:s:a:1", "language=eng", str(both))  # fmt: skip
    uses = {}
    for track, language in ((0, None), (1, None), (0, "en"), (0, "de")):
        stream = open_stream(both, track, True, language)
        uses[track, language] = next(stream).channel
        stream.close()
    assert uses[0, None] == uses[0, "de"] and uses[0, None] is not None and uses[0, None].default
    assert uses[1, None] is not None and uses[1, None].used == "FC" and uses[1, None].layout == "7.1"
    assert uses[0, "en"] == uses[1, None]
    stream = open_stream(both, 1, True, None, "left")
    assert next(stream).channel == ChannelUse("FL", "--channels left", "7.1")
    stream.close()


def test_dry_run_shows_the_channel_each_file_would_give(tmp_path, cli):
    """``--dry-run`` says the channel from the layout alone (ffprobe, nothing decoded): ``auto``'s centre is
    "decided when the file is read" (the speech check), a stereo file's downmix and an asked-for channel "by the
    layout", a channel the file lacks the line the run would fail that file with; nothing is written."""
    from tests.media import ffmpeg

    film, stereo = tmp_path / "film.mp4", tmp_path / "music.m4a"
    ffmpeg("-f", "lavfi", "-i", "sine=f=440:d=1", "-af", "pan=5.1|c0=c0|c1=c0|c2=c0|c3=c0|c4=c0|c5=c0", "-c:a", "aac",
           str(film))  # fmt: skip
    ffmpeg("-f", "lavfi", "-i", "sine=f=440:d=1", "-ac", "2", "-c:a", "aac", str(stereo))
    plan = cli("transcribe", str(film), str(stereo), "--dry-run", "--json")
    assert plan.returncode == 0, plan.stderr
    channels = [f["audio_channel"] for f in json.loads(plan.stdout)["files"]]
    assert channels[0]["used"] == "FC" and channels[0]["decided"] == "when the file is read"
    assert "layout 5.1" in channels[0]["reason"] and "little speech" in channels[0]["reason"]
    assert channels[1] == {"used": "downmix", "reason": "stereo track: downmix", "decided": "by the layout"}
    text = cli("transcribe", str(film), str(stereo), "--channels", "center", "--dry-run")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[1].split() == ["channel", "FC", "(--channels", "center;", "decided", "by", "the", "layout)"]
    failing = lines[lines.index(str(stereo)) + 1]
    assert failing.startswith("  channel   none: ") and "layout stereo" in failing and "no FC channel" in failing
    assert sorted(p.name for p in tmp_path.iterdir()) == ["film.mp4", "music.m4a"]
