"""Detection over simulated machines: raw probe data -> Machine, and the architecture tables.

``MACHINES`` (probe data as ``torch.cuda.get_device_properties`` and friends report it on each device) is
shared by the other ``test_platform_*`` files. No torch needed.
"""

from __future__ import annotations

import pytest

from whisper_subtitler.platform import architectures as arch
from whisper_subtitler.platform.machine import GIB, GpuProbe, Probe, describe

_LINUX_CPU = dict(
    os_name="Linux",
    machine="x86_64",
    cpu_name="AMD EPYC 9454",
    cpu_flags=frozenset({"avx2", "avx512f"}),
    cpu_count=32,
    cpu_physical_cores=16,
    ram_total=256 * GIB,
    ram_available=200 * GIB,
)


def _cuda(name: str, cc: tuple[int, int], total: int, sms: int, free: int | None = None) -> Probe:
    gpu = GpuProbe(0, name, total, cc[0], cc[1], None, sms, free)
    return Probe(
        torch_version="2.9.0+cu128",
        cuda_version="12.8",
        cudnn_version=91002,
        driver_version="570.133.20",
        gpus=(gpu,),
        **_LINUX_CPU,
    )


def _rocm(name: str, gcn: str, cc: tuple[int, int], total: int, cus: int) -> Probe:
    gpu = GpuProbe(0, name, total, cc[0], cc[1], gcn, cus, None)
    return Probe(
        torch_version="2.9.0+rocm6.4",
        hip_version="6.4.43482",
        cudnn_version=3004000,
        driver_version="6.12.12",
        gpus=(gpu,),
        **_LINUX_CPU,
    )


# Memory sizes as torch reports them (bytes); free memory where the probe would have asked for it.
MACHINES: dict[str, Probe] = {
    "h100": _cuda("NVIDIA H100 80GB HBM3", (9, 0), 85_029_158_912, 132, free=84_490_000_000),
    "rtx4090": _cuda("NVIDIA GeForce RTX 4090", (8, 9), 25_386_352_640, 128, free=24_800_000_000),
    "a10": _cuda("NVIDIA A10", (8, 6), 23_609_475_072, 72, free=23_000_000_000),
    "t4": _cuda("Tesla T4", (7, 5), 15_828_320_256, 40, free=15_500_000_000),
    "b200": _cuda("NVIDIA B200", (10, 0), 191_503_138_816, 148, free=190_000_000_000),
    "rtx5090": _cuda("NVIDIA GeForce RTX 5090", (12, 0), 33_670_250_496, 170, free=33_000_000_000),
    "mi300x": _rocm("AMD Instinct MI300X", "gfx942:sramecc+:xnack-", (9, 4), 205_822_885_888, 304),
    "rx7900xtx": _rocm("Radeon RX 7900 XTX", "gfx1100", (11, 0), 25_753_026_560, 48),
    "m2": Probe(
        torch_version="2.9.0",
        mps_built=True,
        mps_available=True,
        apple_chip="Apple M2",
        mps_total_memory=11_453_251_584,
        mps_free_memory=11_453_251_584,
        os_name="Darwin",
        machine="arm64",
        cpu_name="Apple M2",
        cpu_count=8,
        cpu_physical_cores=8,
        ram_total=16 * GIB,
        ram_available=10 * GIB,
    ),
    "cpu": Probe(torch_version="2.13.0+cpu", **_LINUX_CPU),
    "cuda_no_driver": Probe(
        torch_version="2.9.0+cu128",
        cuda_version="12.8",
        gpu_error="no GPU visible (driver missing, or CUDA_VISIBLE_DEVICES/HIP_VISIBLE_DEVICES empty)",
        **_LINUX_CPU,
    ),
    "mac_no_mps": Probe(
        torch_version="2.9.0",
        mps_built=True,
        mps_available=False,
        os_name="Darwin",
        machine="arm64",
        cpu_name="Apple M1",
        cpu_count=8,
        ram_total=8 * GIB,
    ),
    "no_torch": Probe(**_LINUX_CPU),
}


@pytest.mark.parametrize(
    "key, backend, architecture, capability, features",
    [
        ("h100", "cuda", "Hopper", "9.0", {"fp16", "bf16", "tf32", "fp8"}),
        ("rtx4090", "cuda", "Ada Lovelace", "8.9", {"fp16", "bf16", "tf32", "fp8"}),
        ("a10", "cuda", "Ampere", "8.6", {"fp16", "bf16", "tf32"}),
        ("t4", "cuda", "Turing", "7.5", {"fp16"}),
        ("b200", "cuda", "Blackwell", "10.0", {"fp16", "bf16", "tf32", "fp8"}),
        ("rtx5090", "cuda", "Blackwell", "12.0", {"fp16", "bf16", "tf32", "fp8"}),
        ("mi300x", "rocm", "CDNA3", "gfx942", {"fp16", "bf16", "tf32", "fp8"}),
        ("rx7900xtx", "rocm", "RDNA3", "gfx1100", {"fp16", "bf16"}),
        ("m2", "mps", "Apple M2 (Apple8)", None, {"fp16", "bf16"}),
        ("cpu", "cpu", "x86_64", None, set()),
    ],
)
def test_each_machine_is_described_with_its_architecture_and_features(key, backend, architecture, capability, features):
    machine = describe(MACHINES[key])
    b = machine.backend(backend)
    assert b.available and b.device is not None
    device = b.device
    assert device.architecture == architecture
    assert (device.compute_capability or device.gfx_target) == capability
    assert device.features == features
    assert device.torch_device == ("cpu" if backend == "cpu" else "mps" if backend == "mps" else "cuda")
    # Exactly the backends this build has work; the CPU always does.
    assert [x.name for x in machine.backends if x.available] == sorted({backend, "cpu"}, key="cuda rocm mps cpu".find)


def test_hip_compute_capability_is_not_read_as_an_nvidia_one():
    device = describe(MACHINES["mi300x"]).backend("rocm").device
    assert device.compute_capability is None  # HIP says 9.4 for gfx942: that is not Hopper
    assert device.vendor == "AMD" and device.gfx_target == "gfx942"


def test_nine_point_zero_is_hopper_not_blackwell():
    assert arch.nvidia_architecture(9, 0) == "Hopper"
    assert arch.nvidia_architecture(10, 0) == arch.nvidia_architecture(12, 0) == "Blackwell"
    assert arch.nvidia_architecture(8, 7) == "Ampere"
    assert arch.nvidia_architecture(7, 0) == "Volta"
    assert arch.nvidia_architecture(2, 1) == "unknown"


def test_feature_thresholds_follow_the_compute_capability_table():
    assert arch.nvidia_features(7, 5) == {"fp16"}
    assert arch.nvidia_features(8, 0) == {"fp16", "tf32", "bf16"}
    assert arch.nvidia_features(8, 9) == {"fp16", "tf32", "bf16", "fp8"}
    assert arch.nvidia_features(5, 2) == frozenset()


def test_cpu_features_come_from_flags():
    assert arch.cpu_features(frozenset({"avx512_bf16", "avx2"})) == {"bf16"}
    assert arch.cpu_features(frozenset({"amx_bf16", "amx_fp16"})) == {"bf16", "fp16"}
    assert arch.cpu_features(frozenset()) == frozenset()


def test_unknown_gfx_target_and_apple_chip_are_reported_not_guessed():
    assert arch.amd_architecture("gfx9999") is None
    assert arch.apple_architecture("Intel Core i9") is None
    assert arch.apple_architecture("Apple M3 Max").gpu_family == "Apple9"


@pytest.mark.parametrize(
    "key, backend, fragment",
    [
        ("cuda_no_driver", "cuda", "no GPU visible"),
        ("cpu", "cuda", "has no CUDA support"),
        ("mi300x", "cuda", "ROCm build"),
        ("h100", "rocm", "CUDA build"),
        ("mac_no_mps", "mps", "not available"),
        ("cpu", "mps", "no MPS support"),
        ("no_torch", "cuda", "torch is not installed"),
    ],
)
def test_unavailable_backends_say_why(key, backend, fragment):
    b = describe(MACHINES[key]).backend(backend)
    assert not b.available and b.devices == ()
    assert fragment in b.detail


def test_description_is_immutable():
    machine = describe(MACHINES["h100"])
    with pytest.raises(AttributeError):
        machine.backends[0].device.name = "other"  # type: ignore[misc]


def test_probe_on_this_machine_is_cheap_and_consistent():
    from whisper_subtitler.platform.probe import probe

    p = probe()
    machine = describe(p)
    assert p.torch_version is not None and p.cpu_count >= 1
    assert machine.backend("cpu").available
    # This session's torch is a CPU build: no GPU backend may claim to work.
    if p.cuda_version is None and p.hip_version is None:
        assert not machine.backend("cuda").available and not machine.backend("rocm").available
