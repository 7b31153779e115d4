"""``torch.compile`` of the decoder step: a candidate that optimization level 2 measures (``tuning``), off otherwise.

Each decoding step runs ``model.decoder(tokens, audio_features, kv_cache=...)``
(``whisper.decoding.PyTorchInference.logits``). ``CompiledInference`` runs the same call through
``torch.compile(dynamic=True)``: the same modules and arithmetic (with the decoder kernels when they are on), fused by
TorchInductor, so the greedy text is the same (``tests/test_decoding_compiled.py``). openai-whisper's key/value cache
is a dict keyed by modules and filled by forward hooks; dynamo breaks the graph there and compiles one graph per
layer and per kind of step (first step or later, one row or more): 30 graphs for tiny.en. The recompile limit is
raised to that for these calls only (``recompile_limit``, through ``compat.torch.recompile_limits``).

The cost is the compilation, paid once per process, for a step that was no faster on the CPU (docs/performance.md,
"torch.compile of the decoder step"). Whether it pays back depends on the device and the model, so level 2
measures it, compilation included (``platform.tune(amortize=...)``), and keeps it only where it wins.

CUDA graphs (``mode="reduce-overhead"``) are not a candidate: the self-attention cache grows by one token per step,
so every step has a new shape and would record a new graph; they need a preallocated (static) cache, which
openai-whisper's decoder does not have.
"""

from __future__ import annotations

import functools
from typing import Any

import torch
from whisper.decoding import PyTorchInference

from whisper_subtitler.compat import torch as torch_compat

GRAPHS_PER_LAYER = 8  # first step or later, one row or more, and a margin; 30 graphs were compiled for tiny.en


def _decoder_step(decoder, tokens: torch.Tensor, audio_features: torch.Tensor, kv_cache: dict) -> torch.Tensor:
    return decoder(tokens, audio_features, kv_cache=kv_cache)


@functools.cache
def compiled_step():
    """The compiled decoder call, one per process (dynamo keeps its graphs per decoder and shape, guarded)."""
    return torch.compile(_decoder_step, dynamic=True)


def recompile_limit(model) -> int:
    """Graphs dynamo may compile per code object for ``model``'s decoder (see the module docstring)."""
    return GRAPHS_PER_LAYER * (len(model.decoder.blocks) + 1)


class CompiledInference(PyTorchInference):
    """``whisper.decoding.PyTorchInference`` whose decoder call is compiled (``compiled_step``); the key/value
    cache, its hooks and ``rearrange_kv_cache`` are openai-whisper's own.

    ``logits(tokens, audio_features)``: tokens ``(rows, n)``, features ``(rows, n_audio_ctx, n_audio_state)``;
    returns logits ``(rows, n or 1, n_vocab)``, as ``PyTorchInference.logits``. Errors from compilation (no C++
    compiler, an unsupported device) propagate: level 2 then drops the candidate.
    """

    kv_cache: dict[Any, torch.Tensor]  # PyTorchInference's, set in its __init__
    hooks: list[Any]

    def logits(self, tokens: torch.Tensor, audio_features: torch.Tensor) -> torch.Tensor:
        if not self.kv_cache:
            self.kv_cache, self.hooks = self.model.install_kv_cache_hooks()
        if tokens.shape[-1] > self.initial_token_length:
            tokens = tokens[:, -1:]  # only the last token after the first step, as PyTorchInference
        with torch_compat.recompile_limits(recompile_limit(self.model)):
            return compiled_step()(self.model.decoder, tokens, audio_features, self.kv_cache)
