"""Put a loaded openai-whisper model on the selected device in the selected dtype; MPS-safe.

Two things break openai-whisper on Apple's MPS backend (pytorch/pytorch#87886, #141711):
- ``Whisper.alignment_heads`` is a *sparse* COO buffer (``model.py``: ``mask.to_sparse()``), and sparse tensors
  cannot move to MPS, so ``model.to("mps")`` raises ``NotImplementedError`` (SparseMPS). ``whisper.timing``
  only reads it as ``model.alignment_heads.indices().T`` (``find_alignment``) to pick (layer, head) pairs of
  the cross-attention weights on the host. So the buffer is unregistered and kept as a plain attribute holding
  the same sparse tensor on the CPU (``compat.whisper.keep_alignment_heads_on_cpu``): ``.to()`` no longer touches it
  and ``.indices()`` works as before.
- ``whisper.timing.dtw`` calls ``x.double()`` before ``.cpu()``; MPS has no float64. The word timing that
  ``platform.word_timing`` installs (``prepare_model`` calls it) moves the matrix to the CPU first (same
  numbers: the DTW runs on the CPU in float64 either way).
Operators MPS lacks run on the CPU through ``PYTORCH_ENABLE_MPS_FALLBACK=1``, set by ``configure`` before
torch is imported.
"""

from __future__ import annotations

import logging
import os
import platform as _platform
import sys
from typing import TYPE_CHECKING, Any

from whisper_subtitler.compat import whisper as whisper_compat
from whisper_subtitler.platform.machine import BackendName
from whisper_subtitler.platform.tokenizer import prepare_tokenizer
from whisper_subtitler.platform.word_timing import warm_up_word_timing

if TYPE_CHECKING:
    from whisper_subtitler.platform.select import Selection

log = logging.getLogger(__name__)


MPS_FALLBACK_VARIABLE = "PYTORCH_ENABLE_MPS_FALLBACK"


def enable_mps_fallback(environ: dict[str, str] | None = None) -> bool:
    """Set ``PYTORCH_ENABLE_MPS_FALLBACK=1`` on Apple silicon unless the user set it; True when it is in effect.

    torch reads the variable when it registers its MPS operators, at ``import torch``: set it later and
    operators missing on MPS raise ``NotImplementedError`` instead of running on the CPU. So this runs before
    the probe imports torch, and warns when torch was imported first.
    """
    env = os.environ if environ is None else environ
    if sys.platform != "darwin" or _platform.machine() != "arm64":
        return False
    if MPS_FALLBACK_VARIABLE in env:
        return env[MPS_FALLBACK_VARIABLE] not in ("", "0")
    env[MPS_FALLBACK_VARIABLE] = "1"
    if "torch" in sys.modules:
        log.warning(
            "torch was imported before %s could be set: operators missing on MPS will fail; "
            "export %s=1 before starting",
            MPS_FALLBACK_VARIABLE,
            MPS_FALLBACK_VARIABLE,
        )
    return True


def cast_model(model: Any, dtype: str) -> Any:
    """Cast weights to ``dtype`` (``float16``/``float32``) and keep LayerNorms in float32.

    openai-whisper's ``LayerNorm.forward`` computes in float32 (``x.float()``), so its weights must stay
    float32; its ``Linear`` and ``Conv1d`` cast weights to the input dtype on every call, which costs
    nothing once the weights already have that dtype (and halves their memory in fp16).
    """
    import torch

    target = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}[dtype]
    model = model.to(dtype=target)
    if target != torch.float32:
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.float()
    return model


def prepare_model(model: Any, selection: Selection) -> Any:
    """Move a ``whisper.model.Whisper`` to ``selection.device`` in ``selection.dtype`` and return it; ``int8``
    quantizes its linear layers (``platform.quantize.quantize_int8``).

    On MPS the alignment heads stay on the CPU (module docstring). Word timing is set up for every device
    (``word_timing.warm_up_word_timing``: off Triton, the DTW's matrix leaving MPS before float64, numba's cached
    DTW, torch's threads kept), and the tokenizer built (``tokenizer.prepare_tokenizer``). Pass
    ``fp16=(selection.dtype == "float16")`` to ``whisper.DecodingOptions``.
    Modifies ``model`` in place (``nn.Module.to`` does) and returns it.
    """
    if selection.backend == BackendName.MPS:
        whisper_compat.keep_alignment_heads_on_cpu(model)
    if selection.dtype == "int8":
        from whisper_subtitler.platform.quantize import quantize_int8

        model = quantize_int8(cast_model(model, "float32"))  # on the CPU: the selection refuses int8 elsewhere
    else:
        model = cast_model(model, selection.dtype)
    model = model.to(selection.device)
    warm_up_word_timing()
    prepare_tokenizer(model)
    log.info("model on %s in %s", selection.device, selection.dtype)
    return model
