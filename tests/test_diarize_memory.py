"""When Whisper leaves the accelerator before diarization (pure rule)."""

from __future__ import annotations

import pytest

from whisper_subtitler.diarize.memory import PLENTY_OF_VRAM, one_model_at_a_time, release_accelerator_memory

GiB = 2**30


@pytest.mark.parametrize(
    "device, memory, expected",
    [
        ("cpu", None, False),  # host RAM: keep both
        ("cpu", 2 * GiB, False),
        ("cuda", 8 * GiB, True),  # short VRAM: one large model at a time
        ("cuda:1", 16 * GiB, True),
        ("cuda", PLENTY_OF_VRAM, False),
        ("cuda", 80 * GiB, False),
        ("mps", None, True),  # unknown: play safe
    ],
)
def test_one_model_at_a_time(device, memory, expected):
    assert one_model_at_a_time(device, memory) is expected


def test_release_on_cpu_is_harmless():
    release_accelerator_memory("cpu")
