"""int8 dynamic quantization of an openai-whisper model for the CPU: measured by ``make bench``, off by default.

PyTorch's dynamic quantization (``torch.ao.quantization.quantize_dynamic``) stores ``nn.Linear`` weights as int8
and quantizes activations on the fly. Two traps in openai-whisper (docs/performance.md, "Traps"): its layers are
``whisper.model.Linear``, a subclass that ``quantize_dynamic``'s exact-type mapping silently skips, so they are
first replaced by plain ``nn.Linear`` copies (``compat.whisper.plain_linear_layers``); and the output projection (the
tied token embedding, 51864 x d, the largest tensor each decoding step reads) is a matmul, not a Linear, so it gets a
quantized Linear of its own and the decoder's projection is replaced by it (``compat.whisper.install_projection``).

Only the decoder is quantized, with one scale per output channel (``per_channel_dynamic_qconfig``): the decoder
runs once per token and is where int8 pays; the encoder runs once per 30 s window, and quantizing it cost about
5 WER points on base on the 10-minute bench clip (0.107 to 0.158), while the decoder alone keeps float32's words
there (0.107) and is still faster than faster-whisper's int8 (docs/performance.md).

The words can still change, so it is opt-in:
``--compute-type int8`` on the CPU (``platform.prepare_model``); ``docs/benchmarks.md`` has the current measurement.
PyTorch has deprecated its quantized tensors (torch 2.13 warns; the warning is silenced here): when they go, this
moves to torchao.
"""

from __future__ import annotations

import warnings


def quantize_int8(model, *, output_projection: bool = True):
    """Quantize ``model``'s decoder linear layers (and, with ``output_projection``, its output projection) to int8
    in place, per output channel, for CPU inference in float32; the encoder stays float32. Returns the model, left in
    float32 on an openai-whisper version that ``compat.whisper`` does not know (whose layers it cannot vouch for).
    Raises ``ValueError`` for a model not on the CPU."""
    import torch
    from torch import nn

    from whisper_subtitler.compat import whisper as whisper_compat

    if model.device.type != "cpu":
        raise ValueError("int8 dynamic quantization runs on the CPU only")
    per_channel = torch.ao.quantization.per_channel_dynamic_qconfig
    model.float()
    if not whisper_compat.known():  # openai-whisper's own layers and forward: left in float32
        return model
    whisper_compat.plain_linear_layers(model.decoder)
    with warnings.catch_warnings():  # torch 2.13: torch.ao.quantization and quantized tensors are deprecated
        warnings.simplefilter("ignore", (UserWarning, DeprecationWarning))
        torch.ao.quantization.quantize_dynamic(model.decoder, {nn.Linear: per_channel}, dtype=torch.qint8, inplace=True)

    if output_projection:
        weight = model.decoder.token_embedding.weight
        projection = nn.Linear(weight.shape[1], weight.shape[0], bias=False)
        projection.weight = nn.Parameter(weight.detach().clone(), requires_grad=False)
        holder = nn.Sequential(projection)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", (UserWarning, DeprecationWarning))
            torch.ao.quantization.quantize_dynamic(holder, {nn.Linear: per_channel}, dtype=torch.qint8, inplace=True)
        model.decoder.projection_int8 = holder[0]
        whisper_compat.install_projection(model, lambda x: model.decoder.projection_int8(x).float())
    return model
