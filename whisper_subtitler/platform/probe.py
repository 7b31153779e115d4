"""Read raw facts from torch and the OS into a ``Probe``: the only module here that asks the hardware.

Cheap by design: no model load, no tensor allocation. ``torch.cuda.device_count`` and
``get_device_properties`` are queries (the latter initialises torch's CUDA state, but not a context on the
device); ``torch.cuda.mem_get_info`` does create a CUDA context, so ``gpu_free_memory`` is called only once a
CUDA/ROCm device has been selected. Every query is guarded: a failing driver becomes ``gpu_error``, never an
exception.
"""

from __future__ import annotations

import contextlib
import logging
import os
import platform
import re
import subprocess
from pathlib import Path

from whisper_subtitler.platform.machine import GpuProbe, Probe

log = logging.getLogger(__name__)


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _sysctl(name: str) -> str | None:
    try:
        out = subprocess.run(["sysctl", "-n", name], capture_output=True, text=True, timeout=5, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _cpu_count() -> int:
    """Logical cores this process may run on (affinity and cgroup-limited where the OS tells)."""
    if hasattr(os, "process_cpu_count"):  # Python 3.13+
        return os.process_cpu_count() or 1
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def _host() -> dict:
    system, mach = platform.system(), platform.machine()
    name, physical = platform.processor() or mach, None
    flags: frozenset[str] = frozenset()
    ram_total = ram_available = None
    cpuinfo = _read("/proc/cpuinfo")
    if cpuinfo:
        if m := re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M):
            name = m.group(1).strip()
        if m := re.search(r"^flags\s*:\s*(.+)$", cpuinfo, re.M):
            flags = frozenset(m.group(1).split())
        cores = set(re.findall(r"^physical id\s*:\s*(\d+)\s*$.*?^core id\s*:\s*(\d+)\s*$", cpuinfo, re.M | re.S))
        physical = len(cores) or None
    meminfo = _read("/proc/meminfo")
    if meminfo:
        kib = {k: int(v) for k, v in re.findall(r"^(\w+):\s+(\d+) kB", meminfo, re.M)}
        ram_total = kib.get("MemTotal", 0) * 1024 or None
        ram_available = kib.get("MemAvailable", 0) * 1024 or None
    if system == "Darwin":
        name = _sysctl("machdep.cpu.brand_string") or name
        total = _sysctl("hw.memsize")
        ram_total = int(total) if total and total.isdigit() else None
        physical_cpus = _sysctl("hw.physicalcpu")
        physical = int(physical_cpus) if physical_cpus and physical_cpus.isdigit() else None
    elif ram_total is None:
        with contextlib.suppress(ValueError, OSError, AttributeError):
            ram_total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return dict(
        os_name=system,
        machine=mach,
        cpu_name=name,
        cpu_flags=flags,
        cpu_count=_cpu_count(),
        cpu_physical_cores=physical,
        ram_total=ram_total,
        ram_available=ram_available,
    )


def _driver_version() -> str | None:
    """NVIDIA kernel driver version from ``/proc`` (no NVML, no context); AMD's amdgpu module version."""
    text = _read("/proc/driver/nvidia/version")
    if text and (m := re.search(r"Kernel Module(?: for \S+)?\s+(\d[\w.]*)", text)):
        return m.group(1)
    amd = _read("/sys/module/amdgpu/version")
    return amd.strip() if amd else None


def probe() -> Probe:
    """Probe torch and the host. Never raises; free GPU memory is left ``None`` (see ``gpu_free_memory``)."""
    host = _host()
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 - a broken torch install is a fact to report, not a crash
        log.warning("torch cannot be imported: %s", exc)
        return Probe(**host)

    cuda_version = getattr(torch.version, "cuda", None)
    hip_version = getattr(torch.version, "hip", None)
    gpus: list[GpuProbe] = []
    gpu_error = cudnn = driver = None
    if cuda_version or hip_version:
        driver = _driver_version()
        try:
            count = torch.cuda.device_count()
            if count == 0:
                gpu_error = "no GPU visible (driver missing, or CUDA_VISIBLE_DEVICES/HIP_VISIBLE_DEVICES empty)"
            for i in range(count):
                pr = torch.cuda.get_device_properties(i)
                gpus.append(
                    GpuProbe(
                        index=i,
                        name=pr.name,
                        total_memory=int(pr.total_memory),
                        major=int(pr.major),
                        minor=int(pr.minor),
                        gcn_arch_name=getattr(pr, "gcnArchName", None) if hip_version else None,
                        multi_processor_count=getattr(pr, "multi_processor_count", None),
                    )
                )
        except Exception as exc:  # noqa: BLE001 - driver/runtime mismatch, busy device, ...
            gpus, gpu_error = [], f"the device query failed: {exc}".splitlines()[0]
        try:
            cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
        except Exception:  # noqa: BLE001
            cudnn = None

    mps_built = bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_built())
    mps_available, mps_error, mps_total, mps_free, chip = False, None, None, None, None
    if mps_built:
        try:
            mps_available = torch.backends.mps.is_available()
            if mps_available:
                chip = host["cpu_name"]
                mps_total = int(torch.mps.recommended_max_memory())
                mps_free = max(0, mps_total - int(torch.mps.driver_allocated_memory()))
        except Exception as exc:  # noqa: BLE001
            mps_error = f"the MPS query failed: {exc}".splitlines()[0]

    return Probe(
        torch_version=torch.__version__,
        cuda_version=cuda_version,
        hip_version=hip_version,
        cudnn_version=cudnn,
        driver_version=driver,
        gpus=tuple(gpus),
        gpu_error=gpu_error,
        mps_built=mps_built,
        mps_available=mps_available,
        mps_error=mps_error,
        mps_total_memory=mps_total,
        mps_free_memory=mps_free,
        apple_chip=chip,
        **host,
    )


def gpu_free_memory(index: int = 0) -> int | None:
    """Free memory in bytes on CUDA/HIP device ``index`` (``torch.cuda.mem_get_info``; creates a context).

    Returns ``None`` when the query fails.
    """
    try:
        import torch

        free, _total = torch.cuda.mem_get_info(index)
        return int(free)
    except Exception as exc:  # noqa: BLE001
        log.warning("could not query free GPU memory: %s", exc)
        return None
