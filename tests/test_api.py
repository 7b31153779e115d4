"""The Python API (``whisper_subtitler.api``): the README's example on real speech writes the CLI's SRT, models load
once per ``Subtitler``, failures are typed exceptions and print nothing, options check themselves."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tests import media
from tests.media_speech import read_wav
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


def count_loads(patch: pytest.MonkeyPatch) -> Counter[str]:
    """Count the loads of Whisper (``models.load_whisper``) and of the diarization pipeline (``diarize.load_diarizer``)
    while ``patch`` holds."""
    from whisper_subtitler import diarize, models

    loads: Counter[str] = Counter()

    def counted(name, load):
        def wrapper(*args, **kwargs):
            loads[name] += 1
            return load(*args, **kwargs)

        return wrapper

    patch.setattr(models, "load_whisper", counted("whisper", models.load_whisper))
    patch.setattr(diarize, "load_diarizer", counted("diarizer", diarize.load_diarizer))
    return loads


@pytest.fixture(scope="module")
def readme_run(sample_mp4, tmp_path_factory):
    """The README's example run in a folder holding ``talk.mp4`` (pyannote's real two-speaker sample):
    ``(folder, the example's globals, what it printed, the model loads it made)``."""
    folder = tmp_path_factory.mktemp("readme")
    (folder / "talk.mp4").symlink_to(sample_mp4)
    example: dict = {}
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(io.StringIO()) as printed:
        patch.chdir(folder)
        loads = count_loads(patch)
        exec(compile(readme_example(), str(README), "exec"), example)  # noqa: S102 - our own README's example
    return folder, example, printed.getvalue(), dict(loads)


@pytest.mark.slow
def test_readme_example_writes_the_srt_the_cli_writes(readme_run, monkeypatch):
    from whisper_subtitler.cli import app

    folder, _, printed, _ = readme_run
    assert printed.startswith("en 30.0 s ('SPEAKER_00', 'SPEAKER_01')"), printed
    monkeypatch.chdir(folder)
    args = ["transcribe", "talk.mp4", "--model", "tiny.en", "--diarize", "-f", "srt", "-o", "cli"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    api_srt = (folder / "talk.srt").read_bytes()
    assert api_srt == (folder / "cli" / "talk.srt").read_bytes()
    assert b"[SPEAKER_00]: " in api_srt and b"[SPEAKER_01]: " in api_srt


@pytest.mark.slow
def test_two_runs_load_each_model_once(readme_run, monkeypatch):
    _, example, _, first_loads = readme_run
    assert first_loads == {"whisper": 1, "diarizer": 1}  # the README's Subtitler and its run
    loads = count_loads(monkeypatch)
    events: list[tuple[str, float | None]] = []
    samples = read_wav(media.SAMPLE_WAV)[: 12 * 16_000]  # the first 12 s of the same speech, as samples
    again = example["sub"].run(samples, progress=lambda stage, fraction: events.append((stage, fraction)))
    assert loads == {}  # the second run on the same Subtitler loads nothing
    assert again.duration == pytest.approx(12.0) and again.words and again.cues and again.words[-1].end <= 12.0
    assert again.transcript.source == "array"
    assert [s for s, f in events if f is None][:2] == ["audio", "vad"]
    assert {"model_load", "transcribe", "diarize", "cues"} <= {s for s, _ in events}
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
    assert (DecodingOptions(language="en,Spanish").language, DecodingOptions(language="en,es").languages) == (
        None,
        ("en", "es"),
    )
    assert DecodingOptions(languages=("English", "es")).languages == ("en", "es")
    assert (DecodingOptions(language="en,en").language, DecodingOptions(languages=("de",)).language) == ("en", "de")
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


def test_the_cli_builds_the_run_the_api_builds(tmp_path, monkeypatch):
    from whisper_subtitler import CueOptions, pipeline
    from whisper_subtitler.cli import app

    built = []

    class Capture:
        """Stands in for ``Pipeline``: keeps the options it was built with, processes nothing."""

        def __init__(self, options, selection):
            built.append(options)
            self.options = options  # the command line gives the run its library options here (--resume, --skip-...)

        def load(self, sources):
            pass

        def close(self):
            pass

        def prefetch(self, source):
            pass

        def process(self, source, **kwargs):
            from whisper_subtitler.results import FileResult, FileStatus

            return FileResult(source=source, status=FileStatus.DONE)

    monkeypatch.setattr(pipeline, "Pipeline", Capture)
    media_file = tmp_path / "a.wav"
    media_file.write_bytes(b"RIFF")
    flags = ["--model", "tiny.en", "--no-diarize", "--beam-size", "3", "-l", "German", "--max-line-width", "30"]
    flags += ["-f", "srt,json", "--crlf", "--speaker-style", "dash", "--gpu-backend", "cpu"]
    result = CliRunner().invoke(app, ["transcribe", str(media_file), *flags])
    assert result.exit_code == 0, result.output
    Subtitler(
        decoding=DecodingOptions(model="tiny.en", beam_size=3, language="de"),
        speakers=SpeakerOptions(diarize=False),
        cues=CueOptions(max_line_width=30, speaker_style="dash"),
        output=OutputOptions(formats=("srt", "json"), crlf=True),
        device="cpu",
        load=False,
    )
    cli_run, api_run = built
    assert cli_run == api_run
    assert cli_run.transcribe.language == "de" and cli_run.writer.crlf and cli_run.formats == ("srt", "json")
