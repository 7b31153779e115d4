"""The one place that adapts pyannote.audio 4 to this project's environment. Import it before pyannote.

Every workaround for pyannote.audio (and for the torchaudio it imports) lives here, each with the reason,
and ``tests/test_diarize_pyannote_compat.py`` fails loudly when the library changes so that one becomes
wrong or unnecessary:

1. **Telemetry off unless the user turns it on.** pyannote.audio 4 sends usage metrics to pyannoteAI by
   default; it reads the environment variable ``PYANNOTE_METRICS_ENABLED`` (``true``/``1`` enable) at every
   tracked call and sets it from its own default only when unset (``pyannote/audio/telemetry/metrics.py``).
   We set ``false`` when the user has not set it, before pyannote is imported.
2. **torchaudio without its compiled extension.** PyPI's torchaudio wheels for Linux are CUDA builds; beside
   a CPU build of torch, ``import torchaudio`` raises ``OSError: libc10_cuda.so``, and pyannote.audio cannot
   be imported. torchaudio has a supported state without the extension (``_IS_TORCHAUDIO_EXT_AVAILABLE =
   False``, what a deployment without the library file gets), and everything pyannote needs from it
   (resampling, ``compliance.kaldi.fbank``) is pure Python. Only when the import fails that way we register
   that state as ``torchaudio._extension`` before importing torchaudio. A working torchaudio is left alone.
3. **No PLDA for agglomerative clustering.** ``SpeakerDiarization.__init__`` loads a PLDA unconditionally and
   ``get_plda(None)`` raises ``TypeError``, although only VBx clustering uses it. :class:`NoPLDA` is a PLDA
   that loads nothing and refuses to be used.
4. **stdout is for data.** pyannote prints to stdout (hub download failures, "Found only N clusters");
   :func:`stdout_to_log` sends those lines to this module's logger instead.
5. **TF32 stays as the platform layer set it.** On CUDA, every pipeline call runs
   ``pyannote.audio.utils.reproducibility.fix_reproducibility``, which turns TensorFloat-32 off for the whole
   process (and warns); :func:`keep_tf32_settings` puts the two flags back after the call, so Whisper on the
   next file runs as configured.

torchcodec (pyannote's file decoder) is not needed: audio is passed in memory as
``{"waveform": (1, n_samples) float tensor, "sample_rate": 16000}``; its import warning is silenced.

Raises :class:`~whisper_subtitler.errors.MissingRequirementError` on import when pyannote.audio is missing.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import sys
import types
import warnings
from collections.abc import Iterator

from whisper_subtitler.errors import MissingRequirementError

logger = logging.getLogger(__name__)

TELEMETRY_ENV = "PYANNOTE_METRICS_ENABLED"  # read by pyannote.audio.telemetry.metrics.is_metrics_enabled
TESTED_PYANNOTE = ((4, 0), (5, 0))  # pyannote.audio versions this adapter was checked against: [4.0, 5.0)
INSTALL_HINT = "install the diarization extra: pip install 'whisper-subtitler[diarize]'"

# 1. Telemetry: decided before pyannote reads its own default.
os.environ.setdefault(TELEMETRY_ENV, "false")


def _import_torchaudio() -> bool:
    """Import torchaudio, without its compiled extension when that cannot load (2. above).

    Returns True when the extension-less state had to be declared. Raises ``ImportError`` when torchaudio
    is not installed and ``OSError`` when it fails for another reason than its extension.
    """
    try:
        import torchaudio  # noqa: F401
    except OSError as exc:
        if "_torchaudio" not in str(exc) and "libc10_cuda" not in str(exc):
            raise
        logger.debug("torchaudio's compiled extension does not load (%s); using its pure-Python parts", exc)
    else:
        return False

    from torchaudio._internal.module_utils import fail_with_message

    extension = types.ModuleType("torchaudio._extension")
    extension.__doc__ = "torchaudio without its compiled extension (whisper_subtitler.diarize.pyannote_compat)"
    vars(extension).update(
        _IS_TORCHAUDIO_EXT_AVAILABLE=False,
        _IS_ALIGN_AVAILABLE=False,
        fail_if_no_align=fail_with_message("torchaudio's compiled extension is not available."),
        _load_lib=lambda lib: False,
    )
    sys.modules["torchaudio._extension"] = extension
    import torchaudio  # noqa: F401, F811

    return True


try:
    TORCHAUDIO_WITHOUT_EXTENSION = _import_torchaudio()
    with warnings.catch_warnings():
        # pyannote warns at import when torchcodec cannot decode; we never let it decode.
        warnings.filterwarnings("ignore", message=r"(?s).*torchcodec is not installed correctly")
        import pyannote.audio  # noqa: F401
        from pyannote.audio.core.plda import PLDA
except ImportError as exc:
    raise MissingRequirementError(
        f"speaker diarization needs pyannote.audio, which cannot be imported ({exc.name or exc})",
        hint=INSTALL_HINT,
    ) from None


class NoPLDA(PLDA):
    """A PLDA that loads nothing: the ``plda`` argument of ``SpeakerDiarization`` for non-VBx clustering.

    ``pyannote.audio.pipelines.SpeakerDiarization.__init__`` (4.0.x) passes ``plda`` to ``get_plda``, which
    accepts only a PLDA, a path or a dict; only ``VBxClustering`` calls it. Calling this one raises
    ``RuntimeError``.
    """

    def __init__(self) -> None:  # deliberately no super().__init__(): there are no PLDA weights to load
        self.lda_dimension = 0

    def __call__(self, embeddings):  # noqa: D401 - same signature as PLDA.__call__
        raise RuntimeError("NoPLDA cannot transform embeddings: use AgglomerativeClustering, not VBx")


def redact(text: str, secret: str | None = None) -> str:
    """``text`` without ``secret`` nor anything shaped like a Hugging Face token (``hf_`` + 8 or more letters)."""
    if secret:
        text = text.replace(secret, "***")
    return re.sub(r"hf_[A-Za-z0-9]{8,}", "hf_***", text)


@contextlib.contextmanager
def stdout_to_log(level: int = logging.INFO) -> Iterator[None]:
    """Send what pyannote prints to stdout to this module's logger (stderr), one record per line, redacted."""
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer):
            yield
    finally:
        for line in buffer.getvalue().splitlines():
            if line.strip():
                logger.log(level, "pyannote: %s", redact(line.strip()))


@contextlib.contextmanager
def quiet_pyannote_warnings() -> Iterator[None]:
    """Silence pyannote's warnings that are about its own plumbing, not about the result.

    The in-memory waveform makes torchcodec irrelevant; the others come from pyannote's internals and numpy
    inside them (no effect on the result).
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"(?s).*torchcodec")
        warnings.filterwarnings("ignore", message=r"(?s).*std\(\): degrees of freedom")
        warnings.filterwarnings("ignore", category=UserWarning, module=r"pyannote\.audio\.models\.blocks")
        # numpy inside pyannote's clustering on a window with a single embedding (short audio)
        warnings.filterwarnings("ignore", category=RuntimeWarning, message=r"Mean of empty slice")
        warnings.filterwarnings("ignore", category=RuntimeWarning, message=r"invalid value encountered in")
        yield


@contextlib.contextmanager
def keep_tf32_settings() -> Iterator[None]:
    """Restore ``torch.backends.cuda.matmul.allow_tf32`` and ``torch.backends.cudnn.allow_tf32`` on exit (5. above)."""
    import torch

    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"(?s)TensorFloat-32 \(TF32\) has been disabled")
            yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn


def pyannote_version() -> tuple[int, int]:
    """The installed pyannote.audio version as (major, minor)."""
    major, minor, *_ = pyannote.audio.__version__.split(".")
    return int(major), int(minor)


if not TESTED_PYANNOTE[0] <= pyannote_version() < TESTED_PYANNOTE[1]:
    logger.warning(
        "pyannote.audio %s was not tested with whisper-subtitler (tested: >=4.0,<5)", pyannote.audio.__version__
    )
