"""GPU and CPU architecture tables: a new GPU generation is a new row here, not a new branch elsewhere.

Pure data and lookups, no torch import. Sources:
- NVIDIA compute capabilities: CUDA C++ Programming Guide, "Compute Capabilities" table, and
  https://developer.nvidia.com/cuda-gpus (7.0 Volta, 7.5 Turing, 8.0/8.6/8.7 Ampere, 8.9 Ada Lovelace,
  9.0 Hopper, 10.x/11.x/12.x Blackwell; 9.0 is Hopper, not Blackwell). TF32 and BF16 tensor cores from 8.0
  (Ampere whitepaper), FP8 from 8.9 (Ada and Hopper whitepapers).
- AMD gfx targets: LLVM AMDGPU processor table (https://llvm.org/docs/AMDGPUUsage.html) and the ROCm
  hardware specification tables (data types supported per GPU).
- Apple silicon: Metal feature set tables; BF16 arithmetic from M2 (Apple8 GPU family), exposed by MPS on macOS 14+.
"""

from __future__ import annotations

from dataclasses import dataclass

# Feature names used everywhere (Machine, doctor JSON): reduced-precision formats the device runs natively.
TF32, BF16, FP16, FP8 = "tf32", "bf16", "fp16", "fp8"
FEATURES = (TF32, BF16, FP16, FP8)


@dataclass(frozen=True, slots=True)
class NvidiaArch:
    """One row: compute capability ``major.minor`` (``minor=None`` matches any minor) -> architecture name."""

    major: int
    minor: int | None
    name: str


NVIDIA_ARCHITECTURES: tuple[NvidiaArch, ...] = (
    NvidiaArch(3, None, "Kepler"),
    NvidiaArch(5, None, "Maxwell"),
    NvidiaArch(6, None, "Pascal"),
    NvidiaArch(7, 0, "Volta"),
    NvidiaArch(7, 2, "Volta"),  # Jetson Xavier
    NvidiaArch(7, 5, "Turing"),
    NvidiaArch(8, 0, "Ampere"),
    NvidiaArch(8, 6, "Ampere"),
    NvidiaArch(8, 7, "Ampere"),  # Jetson Orin
    NvidiaArch(8, 9, "Ada Lovelace"),
    NvidiaArch(9, 0, "Hopper"),
    NvidiaArch(10, None, "Blackwell"),  # B200/GB200 (10.0), B300 (10.3)
    NvidiaArch(11, None, "Blackwell"),  # Jetson Thor (CUDA 13 numbering)
    NvidiaArch(12, None, "Blackwell"),  # RTX 50xx, RTX PRO 6000 (12.0), DGX Spark (12.1)
)

# Feature -> lowest compute capability with native support.
NVIDIA_FEATURE_MIN_CC: dict[str, tuple[int, int]] = {
    FP16: (5, 3),
    TF32: (8, 0),
    BF16: (8, 0),
    FP8: (8, 9),
}


@dataclass(frozen=True, slots=True)
class AmdArch:
    """One row: gfx target (exact LLVM processor name) -> architecture family and native formats."""

    gfx: str
    name: str
    features: frozenset[str]


def _f(*names: str) -> frozenset[str]:
    return frozenset(names)


AMD_ARCHITECTURES: tuple[AmdArch, ...] = (
    AmdArch("gfx900", "GCN5 (Vega 10)", _f(FP16)),
    AmdArch("gfx906", "GCN5 (Vega 20)", _f(FP16)),
    AmdArch("gfx908", "CDNA", _f(FP16, BF16)),
    AmdArch("gfx90a", "CDNA2", _f(FP16, BF16)),
    AmdArch("gfx940", "CDNA3", _f(FP16, BF16, TF32, FP8)),
    AmdArch("gfx941", "CDNA3", _f(FP16, BF16, TF32, FP8)),
    AmdArch("gfx942", "CDNA3", _f(FP16, BF16, TF32, FP8)),  # MI300X/MI300A/MI325X; TF32 is AMD's XF32
    AmdArch("gfx950", "CDNA4", _f(FP16, BF16, FP8)),  # MI350/MI355X
    AmdArch("gfx1030", "RDNA2", _f(FP16)),
    AmdArch("gfx1100", "RDNA3", _f(FP16, BF16)),  # RX 7900 XTX/XT, PRO W7900
    AmdArch("gfx1101", "RDNA3", _f(FP16, BF16)),
    AmdArch("gfx1102", "RDNA3", _f(FP16, BF16)),
    AmdArch("gfx1150", "RDNA3.5", _f(FP16, BF16)),
    AmdArch("gfx1151", "RDNA3.5", _f(FP16, BF16)),  # Ryzen AI Max (Strix Halo)
    AmdArch("gfx1200", "RDNA4", _f(FP16, BF16, FP8)),
    AmdArch("gfx1201", "RDNA4", _f(FP16, BF16, FP8)),  # RX 9070 XT
)


@dataclass(frozen=True, slots=True)
class AppleArch:
    """One row: chip generation prefix of the chip name (``Apple M2 Pro`` -> ``M2``) -> GPU family, formats."""

    generation: str
    gpu_family: str
    features: frozenset[str]


APPLE_ARCHITECTURES: tuple[AppleArch, ...] = (
    AppleArch("M1", "Apple7", _f(FP16)),
    AppleArch("M2", "Apple8", _f(FP16, BF16)),
    AppleArch("M3", "Apple9", _f(FP16, BF16)),
    AppleArch("M4", "Apple9", _f(FP16, BF16)),
    AppleArch("M5", "Apple10", _f(FP16, BF16)),
)


def nvidia_architecture(major: int, minor: int) -> str:
    """Architecture name for an NVIDIA compute capability, e.g. ``(9, 0) -> "Hopper"``; ``"unknown"`` if absent."""
    exact = {(r.major, r.minor): r.name for r in NVIDIA_ARCHITECTURES}
    if (major, minor) in exact:
        return exact[(major, minor)]
    family = {r.major: r.name for r in NVIDIA_ARCHITECTURES if r.minor is None}
    return family.get(major, "unknown")


def nvidia_features(major: int, minor: int) -> frozenset[str]:
    """Native reduced-precision formats for a compute capability (``NVIDIA_FEATURE_MIN_CC``)."""
    return frozenset(f for f, cc in NVIDIA_FEATURE_MIN_CC.items() if (major, minor) >= cc)


def normalize_gfx(gcn_arch_name: str) -> str:
    """``"gfx90a:sramecc+:xnack-"`` -> ``"gfx90a"`` (torch reports target features after colons)."""
    return gcn_arch_name.split(":", 1)[0].strip().lower()


def amd_architecture(gfx: str) -> AmdArch | None:
    """The table row for a gfx target (feature suffixes ignored), or ``None`` when not in the table."""
    gfx = normalize_gfx(gfx)
    return next((r for r in AMD_ARCHITECTURES if r.gfx == gfx), None)


def apple_architecture(chip_name: str) -> AppleArch | None:
    """The table row for an Apple chip name such as ``"Apple M2 Pro"``, or ``None`` (Intel Mac, unknown)."""
    words = chip_name.replace("Apple", "").split()
    generation = words[0].upper() if words else ""
    return next((r for r in APPLE_ARCHITECTURES if r.generation == generation), None)


# CPU flags (Linux /proc/cpuinfo names) -> native formats; fp32 is always there and not listed.
CPU_FEATURE_FLAGS: dict[str, tuple[str, ...]] = {
    BF16: ("avx512_bf16", "amx_bf16"),
    FP16: ("avx512_fp16", "amx_fp16"),
}


def cpu_features(flags: frozenset[str]) -> frozenset[str]:
    """Native reduced-precision formats from CPU flags; ARM Macs report none here (fp32 path)."""
    return frozenset(f for f, names in CPU_FEATURE_FLAGS.items() if any(n in flags for n in names))
