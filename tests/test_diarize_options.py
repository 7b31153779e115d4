"""DiarizationOptions validation: the usage errors of --num-speakers, --min-speakers, --max-speakers."""

from __future__ import annotations

import dataclasses

import pytest

from whisper_subtitler.diarize import DiarizationOptions
from whisper_subtitler.errors import ExitCode, UsageError


def test_defaults_mean_the_offline_pipeline_and_no_speaker_counts():
    options = DiarizationOptions()
    assert options.model is None and options.speaker_counts() == {}


def test_speaker_counts_are_passed_on_as_given():
    assert DiarizationOptions(num_speakers=2).speaker_counts() == {"num_speakers": 2}
    assert DiarizationOptions(min_speakers=2, max_speakers=4).speaker_counts() == {"min_speakers": 2, "max_speakers": 4}
    assert DiarizationOptions(min_speakers=3, max_speakers=3).speaker_counts() == {"min_speakers": 3, "max_speakers": 3}


def test_min_greater_than_max_is_a_usage_error():
    with pytest.raises(UsageError) as e:
        DiarizationOptions(min_speakers=3, max_speakers=2)
    assert e.value.exit_code == ExitCode.USAGE == 2
    assert "--min-speakers (3)" in e.value.message and "--max-speakers (2)" in e.value.message


@pytest.mark.parametrize(
    "kwargs",
    [
        {"num_speakers": 0},
        {"min_speakers": -1},
        {"max_speakers": 0},
        {"num_speakers": True},
        {"num_speakers": 2.0},
        {"num_speakers": 5, "max_speakers": 4},
        {"num_speakers": 1, "min_speakers": 2},
        {"model": "  "},
    ],
)
def test_invalid_values_are_usage_errors(kwargs):
    with pytest.raises(UsageError):
        DiarizationOptions(**kwargs)


def test_options_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        DiarizationOptions().num_speakers = 3  # type: ignore[misc]


def test_importing_the_package_loads_neither_torch_nor_pyannote():
    import subprocess
    import sys

    code = (
        "import sys, whisper_subtitler.diarize, whisper_subtitler.speakers; "
        "print(sorted(m for m in ('torch', 'pyannote.audio', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_cli_speaker_options_imply_diarize_and_parse_names():
    from whisper_subtitler.diarize.options import options_from_cli

    assert options_from_cli(diarize=False) == (None, ())
    assert options_from_cli(diarize=True) == (DiarizationOptions(), ())
    assert options_from_cli(diarize=None) == (DiarizationOptions(required=False), ())  # on by default
    assert options_from_cli(diarize=None, num_speakers=2) == (DiarizationOptions(num_speakers=2), ())
    assert options_from_cli(diarize=None, speaker_names="Ann, Bob") == (DiarizationOptions(), ("Ann", "Bob"))
    with pytest.raises(UsageError, match="--no-diarize"):
        options_from_cli(diarize=False, num_speakers=2)
    assert options_from_cli(diarize=True, model="pyannote/x")[0].model == "pyannote/x"


def test_cli_rttm_without_diarization_and_min_above_max_are_usage_errors():
    from whisper_subtitler.diarize.options import options_from_cli

    with pytest.raises(UsageError, match="rttm"):
        options_from_cli(diarize=False, formats=("srt", "rttm"))
    with pytest.raises(UsageError, match="greater than"):
        options_from_cli(diarize=True, min_speakers=4, max_speakers=2)
