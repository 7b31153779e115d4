"""The Python API (``whisper_subtitler.api``): the README's example on real speech writes the CLI's SRT, models load
once per ``Subtitler``, failures are typed exceptions and print nothing, options check themselves."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tests import media
from tests.media_speech import read_wav, write_wav
from whisper_subtitler import (
    AudioOptions,
    DecodingOptions,
    InputError,
    ModelNotFoundError,
    OutputOptions,
    Result,
    SpeakerOptions,
    Subtitler,
    Transcript,
    UsageError,
)

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_example() -> str:
    """The first Python block of the README's "Python API" section."""
    section = README.read_text(encoding="utf-8").split("\n## Python API\n", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


@pytest.mark.slow
def test_readme_example_writes_the_srt_the_cli_writes(sample_mp4, tmp_path, monkeypatch, capsys):
    from whisper_subtitler.cli import app

    (tmp_path / "talk.mp4").symlink_to(sample_mp4)
    monkeypatch.chdir(tmp_path)
    exec(compile(readme_example(), str(README), "exec"), {})  # noqa: S102 - our own README's example
    printed = capsys.readouterr().out
    assert printed.startswith("en 30.0 s ('SPEAKER_00', 'SPEAKER_01')"), printed

    args = ["transcribe", "talk.mp4", "--model", "tiny.en", "--diarize", "-f", "srt", "-o", "cli"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    api_srt = (tmp_path / "talk.srt").read_bytes()
    assert api_srt == (tmp_path / "cli" / "talk.srt").read_bytes()
    assert b"[SPEAKER_00]: " in api_srt and b"[SPEAKER_01]: " in api_srt


@pytest.mark.slow
def test_two_runs_load_each_model_once(monkeypatch, tmp_path):
    from whisper_subtitler import diarize, models

    loads: Counter[str] = Counter()
    load_whisper, load_diarizer = models.load_whisper, diarize.load_diarizer

    def counted(name, load):
        def wrapper(*args, **kwargs):
            loads[name] += 1
            return load(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(models, "load_whisper", counted("whisper", load_whisper))
    monkeypatch.setattr(diarize, "load_diarizer", counted("diarizer", load_diarizer))
    events: list[tuple[str, float | None]] = []
    sub = Subtitler(model="tiny.en", diarize=True, progress=lambda stage, fraction: events.append((stage, fraction)))
    assert loads == {"whisper": 1}  # Whisper at once; the diarization pipeline on the first run that needs it

    samples = read_wav(media.SAMPLE_WAV)[: 12 * 16_000]  # the first 12 s of the real two-speaker sample
    from_file = sub.run(write_wav(tmp_path / "first12.wav", samples))
    from_samples = sub.run(samples)
    assert loads == {"whisper": 1, "diarizer": 1}
    assert from_file.duration == pytest.approx(12.0) and from_samples.duration == pytest.approx(12.0)
    assert from_samples.words and from_samples.cues and from_samples.words[-1].end <= 12.0
    assert from_file.text and from_file.transcript.source.endswith("first12.wav")
    assert [s for s, f in events if f is None][:3] == ["audio", "vad", "model_load"]
    assert {"transcribe", "diarize", "cues"} <= {s for s, _ in events}
    assert any(s == "transcribe" and f is not None and 0 < f <= 1 for s, f in events)


def test_a_missing_file_raises_input_error_and_prints_nothing(tmp_path, capfd):
    sub = Subtitler(model="tiny.en", diarize=False, device="cpu", load=False)
    with pytest.raises(InputError, match="no such file"):
        sub.run(tmp_path / "missing.mp4")
    assert capfd.readouterr() == ("", "")


def test_an_unknown_model_raises_model_not_found_and_prints_nothing(capfd):
    with pytest.raises(ModelNotFoundError, match="unknown model name 'no-such-model'") as caught:
        Subtitler(model="no-such-model", diarize=False, device="cpu")
    assert "tiny" in (caught.value.hint or "")
    assert capfd.readouterr() == ("", "")


def test_samples_must_be_mono():
    sub = Subtitler(model="tiny.en", diarize=False, device="cpu", load=False)
    with pytest.raises(UsageError, match="1-D"):
        sub.run(np.zeros((2, 16_000), dtype=np.float32))


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: DecodingOptions(patience=2.0), "needs --beam-size"),
        (lambda: DecodingOptions(condition_on_previous_text=True), "--no-batch only"),
        (lambda: DecodingOptions(language="klingon"), "unknown language"),
        (lambda: DecodingOptions(temperatures=()), "not a temperature"),
        (lambda: DecodingOptions(suppress_tokens="a,b"), "not a list of token ids"),
        (lambda: DecodingOptions(compute_type="int4"), "compute-type"),
        (lambda: SpeakerOptions(diarize=False, num_speakers=2), "--no-diarize"),
        (lambda: SpeakerOptions(min_speakers=3, max_speakers=2), "greater than"),
        (lambda: SpeakerOptions(names=("Ann", "Ann")), "more than once"),
        (lambda: OutputOptions(formats=("doc",)), "unknown output format"),
        (lambda: AudioOptions(track=1, language="de"), "give one"),
        (lambda: Subtitler(device="tpu", load=False), "not a backend"),
    ],
)
def test_options_check_themselves(make, message):
    with pytest.raises(UsageError, match=message):
        make()


def test_options_are_normalized():
    assert DecodingOptions(language="German").language == "de"
    assert DecodingOptions(language="auto", temperatures=(0, 1)).temperatures == (0.0, 1.0)
    assert OutputOptions(formats="srt,vtt").resolved() == ("srt", "vtt")
    assert DecodingOptions(model="tiny.en", beam_size=5).transcribe_options(fp16=True).beam_size == 5


def test_a_result_writes_the_format_of_the_suffix(tmp_path):
    result = Result(Transcript(segments=(), language="en", duration=1.0), cues=())
    assert result.write(tmp_path / "a.vtt").read_text() == "WEBVTT\n\n"
    with pytest.raises(UsageError, match="no subtitle format"):
        result.write(tmp_path / "a.doc")
    with pytest.raises(InputError, match="exists"):
        result.write(tmp_path / "a.vtt", overwrite=False)


def test_importing_the_package_imports_no_torch():
    code = (
        "import sys, whisper_subtitler; assert 'torch' not in sys.modules and 'Subtitler' in whisper_subtitler.__all__"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
