"""The immutable description of the machine, built by a pure function from raw probe data.

``probe.py`` reads torch and the OS into a ``Probe`` (raw facts, no interpretation); ``describe(probe)`` turns it
into a ``Machine`` (backends, which work, and each device's architecture and features) using the tables in
``architectures.py``. Tests build ``Probe`` values for machines this project has no access to (H100, MI300X, M2).
No torch import here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from whisper_subtitler.platform import architectures as arch
from whisper_subtitler.types import StrEnum


class BackendName(StrEnum):
    """A compute backend, as ``--gpu-backend``, ``GPU_BACKEND``, the doctor report and the tuning cache name it;
    ``auto`` is a request only (the first backend of ``BACKENDS`` that works)."""

    AUTO = "auto"
    CUDA = "cuda"
    ROCM = "rocm"
    MPS = "mps"
    CPU = "cpu"


BACKENDS = (BackendName.CUDA, BackendName.ROCM, BackendName.MPS, BackendName.CPU)  # also the auto-selection order
GIB = 1024**3  # bytes


@dataclass(frozen=True, slots=True)
class GpuProbe:
    """Raw properties of one CUDA/HIP device as ``torch.cuda.get_device_properties`` reports them.

    ``major``/``minor`` is the compute capability (on ROCm, HIP's own numbering, e.g. 9.4 for gfx942, which is
    *not* an NVIDIA capability); ``gcn_arch_name`` is set on ROCm only. Memory in bytes; ``free_memory`` is
    ``None`` until queried (``torch.cuda.mem_get_info`` creates a CUDA context, so it is asked only when needed).
    """

    index: int
    name: str
    total_memory: int
    major: int
    minor: int
    gcn_arch_name: str | None = None
    multi_processor_count: int | None = None
    free_memory: int | None = None


@dataclass(frozen=True, slots=True)
class Probe:
    """Raw facts about torch and the host, gathered by ``probe.probe()`` or written by hand in tests.

    ``torch_version`` is ``None`` when torch cannot be imported. ``cuda_version``/``hip_version`` are
    ``torch.version.cuda``/``torch.version.hip`` (the build's toolkit, ``None`` when the build lacks it).
    ``gpu_error`` says why no CUDA/HIP device is usable when the build has the backend. Memory in bytes.
    """

    torch_version: str | None = None
    cuda_version: str | None = None
    hip_version: str | None = None
    cudnn_version: int | None = None
    driver_version: str | None = None
    gpus: tuple[GpuProbe, ...] = ()
    gpu_error: str | None = None
    mps_built: bool = False
    mps_available: bool = False
    mps_error: str | None = None
    mps_total_memory: int | None = None
    mps_free_memory: int | None = None
    apple_chip: str | None = None
    os_name: str = "Linux"
    machine: str = "x86_64"
    cpu_name: str = "unknown CPU"
    cpu_flags: frozenset[str] = frozenset()
    cpu_count: int = 1
    cpu_physical_cores: int | None = None
    ram_total: int | None = None
    ram_available: int | None = None


@dataclass(frozen=True, slots=True)
class Device:
    """One compute device as the pipeline sees it.

    ``torch_device`` is the string to pass to ``torch.device`` (ROCm reuses ``"cuda"``). ``architecture`` is a
    family name (``"Hopper"``, ``"CDNA3"``, ``"Apple M2 (Apple8)"``, ``"x86_64"``); ``compute_capability`` is
    ``"major.minor"`` for NVIDIA only; ``gfx_target`` for AMD only. ``total_memory``/``free_memory`` in bytes
    (system RAM for the CPU, the Metal working-set limit for MPS), ``None`` when unknown. ``features`` holds
    native reduced-precision formats (``architectures.FEATURES``).
    """

    backend: BackendName
    torch_device: str
    name: str
    vendor: str
    architecture: str
    compute_capability: str | None = None
    gfx_target: str | None = None
    total_memory: int | None = None
    free_memory: int | None = None
    features: frozenset[str] = frozenset()
    multiprocessors: int | None = None
    index: int | None = None

    @property
    def cc(self) -> tuple[int, int] | None:
        """Compute capability as a tuple, ``None`` on non-NVIDIA devices."""
        if self.compute_capability is None:
            return None
        major, minor = self.compute_capability.split(".")
        return int(major), int(minor)


@dataclass(frozen=True, slots=True)
class Backend:
    """One compute backend: whether this torch build has it (``built``) and whether it works now (``available``).

    ``detail`` says why not, or names what was found; ``devices`` is empty when not available.
    """

    name: BackendName
    built: bool
    available: bool
    detail: str
    devices: tuple[Device, ...] = ()

    @property
    def device(self) -> Device | None:
        """The device this backend uses (the first one: ``cuda`` means ``cuda:0``)."""
        return self.devices[0] if self.devices else None


@dataclass(frozen=True)
class Machine:
    """The whole description: torch build, every backend in ``BACKENDS`` order, and the host CPU."""

    torch_version: str | None
    cuda_version: str | None
    hip_version: str | None
    cudnn_version: int | None
    driver_version: str | None
    backends: tuple[Backend, ...]
    os_name: str
    cpu_count: int
    probe: Probe = field(repr=False, compare=False, default_factory=Probe)

    def backend(self, name: str) -> Backend:
        """The backend called ``name`` (one of ``BACKENDS``); ``KeyError`` for other names."""
        for b in self.backends:
            if b.name == name:
                return b
        raise KeyError(name)

    @property
    def cpu(self) -> Device:
        device = self.backend(BackendName.CPU).device
        assert device is not None  # the CPU backend always has its device
        return device


def _nvidia_device(g: GpuProbe) -> Device:
    return Device(
        backend=BackendName.CUDA,
        torch_device="cuda",
        name=g.name,
        vendor="NVIDIA",
        architecture=arch.nvidia_architecture(g.major, g.minor),
        compute_capability=f"{g.major}.{g.minor}",
        total_memory=g.total_memory,
        free_memory=g.free_memory,
        features=arch.nvidia_features(g.major, g.minor),
        multiprocessors=g.multi_processor_count,
        index=g.index,
    )


def _amd_device(g: GpuProbe) -> Device:
    gfx = arch.normalize_gfx(g.gcn_arch_name or "")
    row = arch.amd_architecture(gfx)
    return Device(
        backend=BackendName.ROCM,
        torch_device="cuda",  # ROCm builds of torch reuse the "cuda" device type
        name=g.name,
        vendor="AMD",
        architecture=row.name if row else "unknown",
        gfx_target=gfx or None,
        total_memory=g.total_memory,
        free_memory=g.free_memory,
        features=row.features if row else frozenset({arch.FP16}),
        multiprocessors=g.multi_processor_count,
        index=g.index,
    )


def _cpu_device(p: Probe) -> Device:
    return Device(
        backend=BackendName.CPU,
        torch_device="cpu",
        name=p.cpu_name,
        vendor="CPU",
        architecture=p.machine,
        total_memory=p.ram_total,
        free_memory=p.ram_available,
        features=arch.cpu_features(p.cpu_flags),
    )


def _mps_device(p: Probe) -> Device:
    chip = p.apple_chip or "Apple silicon"
    row = arch.apple_architecture(chip)
    return Device(
        backend=BackendName.MPS,
        torch_device="mps",
        name=chip,
        vendor="Apple",
        architecture=f"{chip} ({row.gpu_family})" if row else chip,
        total_memory=p.mps_total_memory,
        free_memory=p.mps_free_memory,
        features=row.features if row else frozenset({arch.FP16}),
    )


def describe(p: Probe) -> Machine:
    """Turn raw probe facts into a ``Machine``; pure and deterministic.

    CUDA is available when the build has CUDA (``cuda_version``) and at least one device answered; ROCm the
    same with ``hip_version``; MPS when torch says so; the CPU always.
    """
    no_torch = "torch is not installed" if p.torch_version is None else None

    def gpu_backend(name: BackendName, toolkit: str | None, other: str | None, make) -> Backend:
        label = {BackendName.CUDA: "CUDA", BackendName.ROCM: "ROCm (HIP)"}[name]
        if no_torch:
            return Backend(name, False, False, no_torch)
        if toolkit is None:
            if other is not None:
                hint = "a ROCm build: use --gpu-backend rocm" if name == BackendName.CUDA else "a CUDA build"
                return Backend(name, False, False, f"this torch build ({p.torch_version}) is {hint}")
            return Backend(name, False, False, f"this torch build ({p.torch_version}) has no {label} support")
        if not p.gpus:
            why = p.gpu_error or "no device found"
            return Backend(name, True, False, f"{label} {toolkit} build, but {why}")
        devices = tuple(make(g) for g in p.gpus)
        return Backend(name, True, True, f"{label} {toolkit}, {len(devices)} device(s)", devices)

    cuda = gpu_backend(BackendName.CUDA, p.cuda_version, p.hip_version, _nvidia_device)
    rocm = gpu_backend(BackendName.ROCM, p.hip_version, p.cuda_version, _amd_device)
    if no_torch:
        mps = Backend(BackendName.MPS, False, False, no_torch)
    elif not p.mps_built:
        mps = Backend(
            BackendName.MPS, False, False, f"this torch build ({p.torch_version}) has no MPS support (macOS only)"
        )
    elif not p.mps_available:
        mps = Backend(
            BackendName.MPS, True, False, p.mps_error or "MPS is built but not available (needs macOS 12.3+, Apple GPU)"
        )
    else:
        mps = Backend(BackendName.MPS, True, True, "Metal Performance Shaders", (_mps_device(p),))
    cpu = Backend(BackendName.CPU, True, True, f"{p.cpu_count} logical core(s)", (_cpu_device(p),))
    return Machine(
        torch_version=p.torch_version,
        cuda_version=p.cuda_version,
        hip_version=p.hip_version,
        cudnn_version=p.cudnn_version,
        driver_version=p.driver_version,
        backends=(cuda, rocm, mps, cpu),
        os_name=p.os_name,
        cpu_count=p.cpu_count,
        probe=p,
    )


def with_free_memory(p: Probe, free: dict[int, int]) -> Probe:
    """A copy of ``p`` with ``free_memory`` (bytes) set for the GPUs whose index is in ``free``."""
    gpus = tuple(replace(g, free_memory=free.get(g.index, g.free_memory)) for g in p.gpus)
    return replace(p, gpus=gpus)
