"""torch's internals in one place: every use of torch's private names by whisper-subtitler, written against torch 2.4
to 2.13 (``KNOWN``, by major and minor version).

On another version ``known()`` is False, with one warning per process, and torch's own settings are kept:

- ``recompile_limits``: dynamo's recompile limits (``torch._dynamo.config``), raised for the compiled decoder step
  (``decoding.compiled``, a candidate of optimization level 2); torch's own limits otherwise, so that a decoder whose
  graphs pass them runs the rest eagerly, as dynamo does.
- ``set_allocator_settings``: the CUDA caching allocator's settings changed once CUDA is initialized
  (``torch._C._accelerator_setAllocatorSettings`` or ``torch.cuda.memory._set_allocator_settings``;
  ``platform.optimize``); otherwise only the environment variable is set, which torch reads when CUDA initializes.

torch itself is imported inside the functions: importing this module imports neither it nor anything heavy.
"""

from __future__ import annotations

import contextlib
import re

from whisper_subtitler.compat import Gate

KNOWN = ((2, 4), (2, 14))  # torch versions [2.4, 2.14) by (major, minor): the private names below were checked there


def knows(version: str) -> bool:
    """True for a torch version string (``2.13.0+cpu``) within ``KNOWN``."""
    match = re.match(r"(\d+)\.(\d+)", version)
    return match is not None and KNOWN[0] <= (int(match[1]), int(match[2])) < KNOWN[1]


GATE = Gate(
    "torch",
    knows,
    "written for 2.4 to 2.13",
    "torch's own settings are kept: dynamo's recompile limits for the compiled decoder step, and the CUDA "
    "allocator's settings as read when CUDA initializes",
)


def known() -> bool:
    """True when the installed torch is within ``KNOWN`` (one warning per process when not)."""
    return GATE.known()


def recompile_limits(limit: int) -> contextlib.AbstractContextManager:
    """A context in which dynamo may compile ``limit`` graphs per code object (and at least ``4 * limit`` in all,
    ``torch._dynamo.config``); torch's own limits on a version not known."""
    if not known():
        return contextlib.nullcontext()
    import torch

    return torch._dynamo.config.patch(dynamo_limits(limit))


def dynamo_limits(limit: int) -> dict[str, int]:
    """dynamo's recompile limits under their names in this torch (``cache_size_limit`` before torch 2.6)."""
    import torch

    config = torch._dynamo.config
    new = hasattr(config, "recompile_limit")
    per_code = "recompile_limit" if new else "cache_size_limit"
    total = "accumulated_recompile_limit" if new else "accumulated_cache_size_limit"
    return {per_code: limit, total: max(getattr(config, total, 256), 4 * limit)}


def set_allocator_settings(conf: str) -> bool:
    """Apply ``conf`` (``PYTORCH_CUDA_ALLOC_CONF``'s syntax) to the CUDA caching allocator, already initialized:
    ``torch._C._accelerator_setAllocatorSettings`` (torch >= 2.11; the older one warns there), else
    ``torch.cuda.memory._set_allocator_settings``. Returns False, changing nothing, on a version not known."""
    if not known():
        return False
    import torch

    update = getattr(torch._C, "_accelerator_setAllocatorSettings", None)
    (update or torch.cuda.memory._set_allocator_settings)(conf)
    return True
