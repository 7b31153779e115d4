"""Backend selection over simulated machines, every fallback and error path, and the environment rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_platform_machines import MACHINES
from whisper_subtitler.errors import BackendUnavailableError, ExitCode, UsageError
from whisper_subtitler.platform import configure, describe, plan_optimizations, select
from whisper_subtitler.platform.environment import Request, load_environment, parse_env_text, resolve_request

# machine -> backend, torch device, dtype for large-v3, planned level-1 steps for large-v3, batch for large-v3, dtype
# and batch for base (fp32 + TF32 on CUDA 8.0+ for tiny and base only)
EXPECTED = {
    "h100": (
        "cuda",
        "cuda",
        "float16",
        {"cudnn_benchmark_off", "cudnn_attention_off", "tf32", "compute_dtype", "cuda_allocator", "batch_size"},
        32,
        "float32",
        32,
    ),
    "rtx4090": (
        "cuda",
        "cuda",
        "float16",
        {"cudnn_benchmark_off", "cudnn_attention_off", "tf32", "compute_dtype", "cuda_allocator", "batch_size"},
        32,
        "float32",
        32,
    ),
    "a10": (
        "cuda",
        "cuda",
        "float16",
        {"cudnn_benchmark_off", "cudnn_attention_off", "tf32", "compute_dtype", "cuda_allocator", "batch_size"},
        32,
        "float32",
        32,
    ),
    "t4": (
        "cuda",
        "cuda",
        "float16",
        {"cudnn_benchmark_off", "cudnn_attention_off", "compute_dtype", "cuda_allocator", "batch_size"},
        24,
        "float16",
        32,
    ),
    "b200": (
        "cuda",
        "cuda",
        "float16",
        {"cudnn_benchmark_off", "cudnn_attention_off", "tf32", "compute_dtype", "cuda_allocator", "batch_size"},
        32,
        "float32",
        32,
    ),
    "rtx5090": (
        "cuda",
        "cuda",
        "float16",
        {"cudnn_benchmark_off", "cudnn_attention_off", "tf32", "compute_dtype", "cuda_allocator", "batch_size"},
        32,
        "float32",
        32,
    ),
    "mi300x": ("rocm", "cuda", "float16", {"cudnn_benchmark_off", "compute_dtype", "batch_size"}, 32, "float16", 32),
    "rx7900xtx": ("rocm", "cuda", "float16", {"cudnn_benchmark_off", "compute_dtype", "batch_size"}, 32, "float16", 32),
    "m2": ("mps", "mps", "float16", {"mps_cpu_fallback", "compute_dtype", "batch_size"}, 12, "float16", 32),
    "cpu": ("cpu", "cpu", "float32", {"compute_dtype", "cpu_threads", "batch_size"}, 8, "float32", 8),
}


@pytest.mark.parametrize("key", list(EXPECTED))
def test_auto_selection_per_machine(key):
    backend, device, dtype, steps, batch_large, dtype_base, batch_base = EXPECTED[key]
    machine = describe(MACHINES[key])
    s = select(Request(), machine, "large-v3")
    assert (s.backend, s.device, s.dtype) == (backend, device, dtype)
    assert not s.fell_back and s.warnings == ()
    assert s.reason.startswith(f"auto picked {backend}")
    assert s.batch_size == batch_large
    base = select(Request(), machine, "base")
    assert (base.dtype, base.batch_size) == (dtype_base, batch_base)
    planned = {r.name for r in plan_optimizations(s, environ={}) if r.status == "planned"}
    from whisper_subtitler.platform import allocator

    host = {"host_allocator"} if backend == "cpu" and allocator.why_not({}) is None else set()  # glibc hosts
    assert planned == steps | host


def test_t4_batch_is_limited_by_memory_with_the_figures_in_the_reason():
    s = select(Request(), describe(MACHINES["t4"]), "large-v3")
    assert s.batch.reason.startswith("free memory 14.4 GiB")
    assert "fits 31" in s.batch.reason and "capped" not in s.batch.reason


def test_fp32_with_tf32_only_for_the_models_it_was_measured_on():
    h100 = describe(MACHINES["h100"])
    for model in ("tiny", "tiny.en", "base", "base.en", None):  # None: the default model, base
        s = select(Request(), h100, model)
        assert s.dtype == "float32" and "TF32" in s.dtype_reason, model
    for model in ("small", "medium", "large-v3", "turbo", "/models/my-finetune.pt"):
        assert select(Request(), h100, model).dtype == "float16", model
    assert select(Request(optimization_level=0), h100, "base").dtype == "float16"  # level 0: Whisper's default
    assert select(Request(compute_type="float32"), h100, "large-v3").dtype == "float32"  # the user's choice stands
    assert select(Request(), describe(MACHINES["t4"]), "base").dtype == "float16"  # no TF32


def test_level_0_keeps_whisper_defaults_and_a_small_batch():
    h100 = describe(MACHINES["h100"])
    s = select(Request(optimization_level=0), h100, "base")
    assert s.dtype == "float16" and s.batch_size == 8
    assert "level 0 caps" in s.batch.reason
    planned = {r.name for r in plan_optimizations(s, environ={}) if r.status == "planned"}
    assert planned == {"cudnn_benchmark_off", "cudnn_attention_off"}
    m2 = select(Request(optimization_level=0), describe(MACHINES["m2"]))
    assert m2.dtype == "float32"  # fp16 on MPS only from level 1


@pytest.mark.parametrize(
    "key, wanted, fragment",
    [
        ("cpu", "cuda", "no CUDA support"),
        ("cuda_no_driver", "cuda", "no GPU visible"),
        ("h100", "rocm", "CUDA build"),
        ("mi300x", "cuda", "ROCm build"),
        ("cpu", "mps", "no MPS support"),
        ("mac_no_mps", "mps", "not available"),
    ],
)
def test_unavailable_request_falls_back_to_cpu_with_a_warning_that_says_why(key, wanted, fragment):
    s = select(Request(backend=wanted, source="--gpu-backend"), describe(MACHINES[key]))
    assert (s.backend, s.device, s.dtype) == ("cpu", "cpu", "float32")
    assert s.fell_back and s.requested == wanted
    assert len(s.warnings) == 1 and wanted in s.warnings[0] and fragment in s.warnings[0]


@pytest.mark.parametrize("key, wanted", [("cpu", "cuda"), ("h100", "rocm"), ("cpu", "mps"), ("cuda_no_driver", "cuda")])
def test_no_fallback_makes_it_an_error_with_exit_code_4(key, wanted):
    with pytest.raises(BackendUnavailableError) as info:
        select(Request(backend=wanted, source="GPU_BACKEND", no_fallback=True), describe(MACHINES[key]))
    assert info.value.exit_code == ExitCode.BACKEND_UNAVAILABLE == 4
    assert wanted in info.value.message and "GPU_BACKEND" in info.value.message
    assert info.value.hint


def test_explicit_cpu_on_a_gpu_machine_is_honoured():
    s = select(Request(backend="cpu", source="--gpu-backend"), describe(MACHINES["h100"]))
    assert s.backend == "cpu" and not s.fell_back and s.reason.startswith("--gpu-backend asks for cpu")


def test_auto_on_cpu_explains_every_missing_gpu_backend():
    s = select(Request(), describe(MACHINES["cpu"]))
    assert "cuda: " in s.reason and "rocm: " in s.reason and "mps: " in s.reason


# --- precedence: --gpu-backend > GPU_BACKEND > USE_CUDA > auto --------------------------------------------


@pytest.mark.parametrize(
    "cli, env, backend, source",
    [
        (None, {}, "auto", "default"),
        ("rocm", {"GPU_BACKEND": "cuda", "USE_CUDA": "false"}, "rocm", "--gpu-backend"),
        (None, {"GPU_BACKEND": "MPS"}, "mps", "GPU_BACKEND"),
        (None, {"GPU_BACKEND": "cuda", "USE_CUDA": "false"}, "cuda", "GPU_BACKEND"),
        (None, {"USE_CUDA": "false"}, "cpu", "USE_CUDA=false"),
        (None, {"USE_CUDA": "0"}, "cpu", "USE_CUDA=false"),
        (None, {"USE_CUDA": "true"}, "auto", "default"),
        (None, {"GPU_BACKEND": ""}, "auto", "default"),
    ],
)
def test_backend_precedence(cli, env, backend, source):
    r = resolve_request(env, gpu_backend=cli)
    assert (r.backend, r.source) == (backend, source)


def test_use_cuda_false_forces_cpu_under_auto_even_on_an_h100():
    s = select(resolve_request({"USE_CUDA": "false"}), describe(MACHINES["h100"]))
    assert s.backend == "cpu" and not s.fell_back and "USE_CUDA=false" in s.reason


def test_conflicting_use_cuda_is_reported():
    r = resolve_request({"GPU_BACKEND": "cuda", "USE_CUDA": "false"})
    assert r.warnings and "USE_CUDA=false is ignored" in r.warnings[0]


@pytest.mark.parametrize(
    "kwargs, env",
    [
        ({"gpu_backend": "opencl"}, {}),
        ({}, {"GPU_BACKEND": "gpu"}),
        ({}, {"USE_CUDA": "maybe"}),
        ({}, {"OPTIMIZATION_LEVEL": "fast"}),
        ({"optimization_level": "1.5"}, {}),
        ({}, {"WHISPER_SUBTITLER_NO_FALLBACK": "sometimes"}),
    ],
)
def test_invalid_values_are_usage_errors(kwargs, env):
    with pytest.raises(UsageError) as info:
        resolve_request(env, **kwargs)
    assert info.value.exit_code == ExitCode.USAGE == 2


@pytest.mark.parametrize("given, level", [(-1, 0), (3, 2), (99, 2), ("7", 2)])
def test_optimization_level_out_of_range_is_clamped_with_a_warning(given, level):
    r = resolve_request({"OPTIMIZATION_LEVEL": str(given)})
    assert r.optimization_level == level
    assert len(r.warnings) == 1 and "outside 0..2" in r.warnings[0]
    assert resolve_request({}, optimization_level=given).optimization_level == level


def test_cli_level_wins_over_the_environment():
    assert resolve_request({"OPTIMIZATION_LEVEL": "0"}, optimization_level=2).optimization_level == 2
    assert resolve_request({"OPTIMIZATION_LEVEL": "0"}).optimization_level == 0
    assert resolve_request({}).optimization_level == 1


@pytest.mark.parametrize("value, expected", [("1", True), ("true", True), ("0", False), ("", False)])
def test_no_fallback_environment_variable(value, expected):
    assert resolve_request({"WHISPER_SUBTITLER_NO_FALLBACK": value}).no_fallback is expected
    assert resolve_request({"WHISPER_SUBTITLER_NO_FALLBACK": value}, no_fallback=True).no_fallback is True


# --- env file -------------------------------------------------------------------------------------------


def test_env_file_syntax():
    text = """
# comment
GPU_BACKEND=cuda
export OPTIMIZATION_LEVEL = 2   # inline comment
USE_CUDA="false"  # quoted
NAME='a # not a comment'
ESCAPED="line\\nnext"
EMPTY=
"""
    values = parse_env_text(text)
    assert values == {
        "GPU_BACKEND": "cuda",
        "OPTIMIZATION_LEVEL": "2",
        "USE_CUDA": "false",
        "NAME": "a # not a comment",
        "ESCAPED": "line\nnext",
        "EMPTY": "",
    }


def test_malformed_env_file_line_is_a_usage_error_naming_the_line():
    with pytest.raises(UsageError, match="line 2"):
        parse_env_text("A=1\nthis is not an assignment\n", "my.env")


def test_real_environment_wins_over_the_file_and_explicit_file_replaces_dot_env(tmp_path: Path):
    (tmp_path / ".env").write_text("GPU_BACKEND=mps\nOPTIMIZATION_LEVEL=0\n")
    other = tmp_path / "other.env"
    other.write_text("GPU_BACKEND=rocm\n")
    assert load_environment({}, None, tmp_path) == {"GPU_BACKEND": "mps", "OPTIMIZATION_LEVEL": "0"}
    assert load_environment({"GPU_BACKEND": "cpu"}, None, tmp_path)["GPU_BACKEND"] == "cpu"
    assert load_environment({}, other, tmp_path) == {"GPU_BACKEND": "rocm"}
    with pytest.raises(UsageError, match="cannot read env file"):
        load_environment({}, tmp_path / "missing.env", tmp_path)


def test_configure_reads_the_env_file_and_selects(tmp_path: Path, caplog):
    env_file = tmp_path / "settings.env"
    env_file.write_text("GPU_BACKEND=cuda\nOPTIMIZATION_LEVEL=5\n")
    machine = describe(MACHINES["cpu"])
    with caplog.at_level("WARNING", logger="whisper_subtitler.platform"):
        s = configure(env_file=env_file, environ={}, cwd=tmp_path, machine=machine, model="small")
    assert s.backend == "cpu" and s.fell_back and s.optimization_level == 2 and s.model == "small"
    assert len(s.warnings) == 2
    assert sum("falling back to the CPU" in r.message for r in caplog.records) == 1  # logged once, on stderr
    with pytest.raises(BackendUnavailableError):
        configure(env_file=env_file, no_fallback=True, environ={}, cwd=tmp_path, machine=machine)
    s = configure(gpu_backend="cuda", environ={}, cwd=tmp_path, machine=describe(MACHINES["h100"]))
    assert (s.backend, s.device, s.dtype) == ("cuda", "cuda", "float32")


def test_configure_on_this_machine_detects_the_cpu(tmp_path: Path):
    s = configure(environ={}, cwd=tmp_path)
    assert s.backend in ("cpu", "cuda", "rocm", "mps")
    assert s.device_info.total_memory is None or s.device_info.total_memory > 0
    assert s.batch_size >= 1 and s.optimization_level == 1


def test_selection_is_immutable():
    s = select(Request(), describe(MACHINES["cpu"]))
    with pytest.raises(AttributeError):
        s.backend = "cuda"  # type: ignore[misc]


# --- the CLI options: --no-fallback and --env-file on transcribe ------------------------------------------


def _cpu_only_machine():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the fallback cannot be provoked")


def test_cli_transcribe_no_fallback_exits_4_before_reading_inputs(tmp_path: Path, monkeypatch):
    from typer.testing import CliRunner

    from whisper_subtitler.cli import app

    _cpu_only_machine()
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["transcribe", "missing.wav", "--gpu-backend", "cuda", "--no-fallback"])
    assert result.exit_code == 4, result.output
    assert "cuda was requested by --gpu-backend but is not available" in result.output


def test_cli_transcribe_reads_the_env_file(tmp_path: Path, monkeypatch):
    from typer.testing import CliRunner

    from whisper_subtitler.cli import app

    _cpu_only_machine()
    monkeypatch.chdir(tmp_path)
    for name in ("GPU_BACKEND", "USE_CUDA", "OPTIMIZATION_LEVEL", "WHISPER_SUBTITLER_NO_FALLBACK"):
        monkeypatch.delenv(name, raising=False)
    strict = tmp_path / "strict.env"
    strict.write_text("GPU_BACKEND=cuda\nWHISPER_SUBTITLER_NO_FALLBACK=1\n")
    result = CliRunner().invoke(app, ["transcribe", "missing.wav", "--env-file", str(strict)])
    assert result.exit_code == 4, result.output
    assert "requested by GPU_BACKEND" in result.output
    (tmp_path / ".env").write_text("GPU_BACKEND=opencl\n")  # ./.env is read without --env-file
    result = CliRunner().invoke(app, ["transcribe", "missing.wav"])
    assert result.exit_code == 2 and "GPU_BACKEND='opencl' is not a backend" in result.output


@pytest.mark.parametrize(
    ("key", "compute_type", "dtype"),
    [
        ("h100", "auto", "float32"),
        ("h100", "float16", "float16"),
        ("t4", "auto", "float16"),
        ("h100", "bfloat16", "bfloat16"),
        ("m2", "bfloat16", "bfloat16"),
        ("cpu", "int8", "int8"),
        ("cpu", "bfloat16", "bfloat16"),
        ("t4", "bfloat16", "t4 has no bfloat16"),
        ("h100", "int8", "CPU only"),
        ("cpu", "float16", "needs a GPU"),
    ],
)
def test_compute_type_is_honoured_or_refused_on_each_device(key, compute_type, dtype):
    request = Request(compute_type=compute_type)
    if " " not in dtype:
        s = select(request, describe(MACHINES[key]), "base")
        assert s.dtype == dtype and (compute_type == "auto" or compute_type in s.dtype_reason)
        return
    with pytest.raises(UsageError) as e:
        select(request, describe(MACHINES[key]), "base")
    assert dtype.split(" ", 1)[1] in e.value.message and e.value.exit_code == ExitCode.USAGE
