"""The platform request: CLI options, environment variables and an optional env file, resolved by precedence.

Precedence (highest first): ``--gpu-backend`` > ``GPU_BACKEND`` > legacy ``USE_CUDA`` (``false`` forces the CPU
under ``auto``; ``true`` means ``auto``) > ``auto``. Real environment variables win over the env file; an
explicit ``--env-file`` replaces ``./.env``. The env file format is the dotenv subset ``KEY=VALUE`` lines,
``#`` comments, optional ``export``, single or double quotes (python-dotenv's syntax; no interpolation).
Pure: the environment is passed in as a mapping.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from whisper_subtitler.errors import UsageError
from whisper_subtitler.platform.machine import BackendName

ENV_GPU_BACKEND = "GPU_BACKEND"
ENV_USE_CUDA = "USE_CUDA"
ENV_OPTIMIZATION_LEVEL = "OPTIMIZATION_LEVEL"
ENV_NO_FALLBACK = "WHISPER_SUBTITLER_NO_FALLBACK"
PLATFORM_VARIABLES = (ENV_GPU_BACKEND, ENV_USE_CUDA, ENV_OPTIMIZATION_LEVEL, ENV_NO_FALLBACK)

BACKEND_CHOICES = tuple(b.value for b in BackendName)  # auto, then the backends
MIN_LEVEL, DEFAULT_LEVEL, MAX_LEVEL = 0, 1, 2
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
_QUOTED = re.compile(r"""^(["'])(.*?)\1\s*(?:#.*)?$""")
_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$")


def parse_env_text(text: str, source: str = "env file") -> dict[str, str]:
    """Parse dotenv text into a dict. Raises ``UsageError`` naming ``source`` and the line for a malformed line."""
    values: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        m = _LINE.match(raw)
        if not m:
            raise UsageError(f"{source}, line {number}: expected KEY=VALUE, got {raw.strip()!r}")
        key, value = m.groups()
        if q := _QUOTED.match(value):
            quote, value = q.groups()
            if quote == '"':
                value = value.replace("\\n", "\n").replace('\\"', '"')
        else:
            value = re.sub(r"\s+#.*$", "", value)  # inline comment after an unquoted value
        values[key] = value
    return values


def load_environment(
    environ: Mapping[str, str], env_file: Path | None = None, cwd: Path | None = None
) -> dict[str, str]:
    """The environment to read: ``env_file`` (or ``cwd/.env`` when it exists) overlaid by ``environ``.

    Raises ``UsageError`` when an explicit ``env_file`` does not exist or cannot be read.
    """
    path = env_file
    if path is None and cwd is not None and (cwd / ".env").is_file():
        path = cwd / ".env"
    file_values: dict[str, str] = {}
    if path is not None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot read env file {path}: {exc.strerror or exc}", "check --env-file") from None
        file_values = parse_env_text(text, str(path))
    return {**file_values, **environ}


def parse_bool(value: str, name: str) -> bool:
    """``1/true/yes/on`` -> True, ``0/false/no/off/''`` -> False (case-insensitive); else ``UsageError``."""
    v = value.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise UsageError(f"{name}={value!r} is not a boolean", "use true or false")


@dataclass(frozen=True, slots=True)
class Request:
    """What the user asked for, after precedence: ``backend`` is one of ``BACKEND_CHOICES``.

    ``source`` names where ``backend`` came from (``--gpu-backend``, ``GPU_BACKEND``, ``USE_CUDA=false``,
    ``default``); ``warnings`` hold clamping and conflict notes for the log.
    """

    backend: BackendName = BackendName.AUTO
    source: str = "default"
    optimization_level: int = DEFAULT_LEVEL
    no_fallback: bool = False
    warnings: tuple[str, ...] = ()
    compute_type: str = "auto"  # --compute-type: auto (the table's choice per device), float32, ..., int8


def _backend(value: str, name: str) -> BackendName:
    v = value.strip().lower()
    if v not in BACKEND_CHOICES:
        raise UsageError(f"{name}={value!r} is not a backend", f"choose one of {', '.join(BACKEND_CHOICES)}")
    return BackendName(v)


def resolve_request(
    environ: Mapping[str, str],
    *,
    gpu_backend: str | None = None,
    optimization_level: int | str | None = None,
    no_fallback: bool = False,
) -> Request:
    """Combine CLI values (``None`` = not given) with ``environ`` by the precedence in the module docstring.

    Raises ``UsageError`` for an unknown backend, a non-boolean ``USE_CUDA``/``WHISPER_SUBTITLER_NO_FALLBACK``
    or a non-integer optimization level. An integer level outside 0..2 is clamped with a warning.
    """
    warnings: list[str] = []
    use_cuda = environ.get(ENV_USE_CUDA)
    use_cuda_flag = parse_bool(use_cuda, ENV_USE_CUDA) if use_cuda is not None else None
    if gpu_backend is not None:
        backend, source = _backend(gpu_backend, "--gpu-backend"), "--gpu-backend"
    elif environ.get(ENV_GPU_BACKEND, "").strip():
        backend, source = _backend(environ[ENV_GPU_BACKEND], ENV_GPU_BACKEND), ENV_GPU_BACKEND
    elif use_cuda_flag is False:
        backend, source = BackendName.CPU, "USE_CUDA=false"
    else:
        backend, source = BackendName.AUTO, "default"
    if use_cuda_flag is False and backend not in (BackendName.CPU, BackendName.AUTO) and source != "USE_CUDA=false":
        warnings.append(f"USE_CUDA=false is ignored: {source} asks for {backend}")

    if optimization_level is not None:
        level_text, level_name = str(optimization_level), "--optimization-level"
    elif environ.get(ENV_OPTIMIZATION_LEVEL, "").strip():
        level_text, level_name = environ[ENV_OPTIMIZATION_LEVEL], ENV_OPTIMIZATION_LEVEL
    else:
        level_text, level_name = str(DEFAULT_LEVEL), "default"
    try:
        level = int(level_text.strip())
    except ValueError:
        raise UsageError(
            f"{level_name}={level_text!r} is not an integer", f"use {MIN_LEVEL}, {DEFAULT_LEVEL} or {MAX_LEVEL}"
        ) from None
    if not MIN_LEVEL <= level <= MAX_LEVEL:
        clamped = min(MAX_LEVEL, max(MIN_LEVEL, level))
        warnings.append(f"{level_name}={level} is outside {MIN_LEVEL}..{MAX_LEVEL}; using {clamped}")
        level = clamped

    env_no_fallback = environ.get(ENV_NO_FALLBACK)
    if env_no_fallback is not None and parse_bool(env_no_fallback, ENV_NO_FALLBACK):
        no_fallback = True
    return Request(backend, source, level, bool(no_fallback), tuple(warnings))
