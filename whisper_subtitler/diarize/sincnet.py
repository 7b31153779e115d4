"""pyannote's segmentation model (PyanNet: SincNet, BiLSTM, linear layers) on overlapping windows, with the
first SincNet convolution computed once per stretch of audio instead of once per window.

The windows of the segmentation step start every second and last ten, so every sample goes through the first
convolution (80 sinc band-pass filters of 251 taps, stride 10) ten times; it is the model's largest
convolution. That convolution is linear and comes right after an instance normalisation of the waveform with
the window's own mean and standard deviation, so for a window ``x`` (``InstanceNorm1d(1, affine=True)``:
``y = (x - mean) / sqrt(var + eps) * gamma + beta``)::

    conv(y)[f] = (gamma / s) * conv(x)[f] + (beta - gamma * mean / s) * sum(filter[f]),   s = sqrt(var + eps)

``conv(x)`` over a stretch of consecutive windows is computed once and sliced per window (window starts are
multiples of the stride), then scaled and shifted with the window's own statistics: the same numbers as the
model's forward pass up to float rounding. Everything after it (absolute value, pooling, the other instance
norms, convolutions, BiLSTM, classifier) runs per window as in ``PyanNet.forward`` (pyannote.audio 4).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F


def supports(model) -> bool:
    """Whether ``model`` is a PyanNet with the SincNet front end this module knows (else use its forward)."""
    sincnet = getattr(model, "sincnet", None)
    if sincnet is None or type(sincnet).__name__ != "SincNet" or not hasattr(model, "lstm"):
        return False
    encoder = sincnet.conv1d[0]
    return getattr(encoder, "padding", 0) == 0 and hasattr(encoder, "get_filters") and len(sincnet.conv1d) == 3


def segment(model, waveform: torch.Tensor, starts: np.ndarray, window: int) -> torch.Tensor:
    """The model's output for the windows ``waveform[:, s:s + window]`` (zero-padded past the end) for each
    start ``s`` in ``starts`` (samples, increasing, multiples of the first convolution's stride).

    ``waveform``: ``(1, n_samples)`` at the model's sample rate. Returns ``(len(starts), frames, classes)``,
    what ``model(torch.stack(windows))`` returns. Raises ``ValueError`` for starts off the stride grid.
    """
    sincnet = model.sincnet
    encoder = sincnet.conv1d[0]
    stride = encoder.stride
    if np.any(starts % stride):
        raise ValueError(f"window starts must be multiples of {stride} samples")
    first, last = int(starts[0]), int(starts[-1]) + window
    span = waveform[:, first:last]
    if span.shape[-1] < last - first:
        span = F.pad(span, (0, last - first - span.shape[-1]))
    filters = encoder.get_filters()  # (80, 1, 251)
    span = span.to(filters.device, filters.dtype)  # pyannote's inference hands over a float32 waveform on the CPU
    shared = F.conv1d(span.unsqueeze(0), filters, stride=stride)[0]  # (80, conv frames of the stretch)
    frames = (window - filters.shape[-1]) // stride + 1
    taps = filters.sum(dim=-1)[:, 0]  # (80,)
    norm = sincnet.wav_norm1d
    gamma, beta = norm.weight[0], norm.bias[0]
    pooled = []
    for start in starts:
        k = int(start) - first
        piece = span[0, k : k + window]
        var, mean = torch.var_mean(piece, correction=0)
        scale = gamma / torch.sqrt(var + norm.eps)
        offset = (beta - mean * scale) * taps
        first_conv = shared[:, k // stride : k // stride + frames] * scale + offset[:, None]
        pooled.append(sincnet.pool1d[0](torch.abs(first_conv)))
    outputs = F.leaky_relu(sincnet.norm1d[0](torch.stack(pooled)))
    for conv, pool, norm1d in zip(sincnet.conv1d[1:], sincnet.pool1d[1:], sincnet.norm1d[1:]):
        outputs = F.leaky_relu(norm1d(pool(conv(outputs))))
    return _after_sincnet(model, outputs)


def _after_sincnet(model, outputs: torch.Tensor) -> torch.Tensor:
    """``PyanNet.forward`` from the SincNet features ``(batch, feature, frame)`` on."""
    outputs = outputs.transpose(1, 2)  # batch frame feature
    if model.hparams.lstm["monolithic"]:
        outputs, _ = model.lstm(outputs)
    else:
        for i, lstm in enumerate(model.lstm):
            outputs, _ = lstm(outputs)
            if i + 1 < model.hparams.lstm["num_layers"]:
                outputs = model.dropout(outputs)
    if model.hparams.linear["num_layers"] > 0:
        for linear in model.linear:
            outputs = F.leaky_relu(linear(outputs))
    return model.activation(model.classifier(outputs))
