"""Level 2: the tuner measures, picks, caches, and a second run reads the cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_platform_machines import MACHINES
from whisper_subtitler.platform import describe, select
from whisper_subtitler.platform.environment import Request
from whisper_subtitler.platform.tune import cache_path, tune, tuning_key


class FakeClock:
    """A timer where ``measure(candidate)`` advances time by ``cost[candidate]`` seconds."""

    def __init__(self, cost: dict) -> None:
        self.cost, self.now, self.calls = cost, 0.0, []

    def timer(self) -> float:
        return self.now

    def measure(self, candidate) -> None:
        self.calls.append(candidate)
        if isinstance(self.cost[candidate], Exception):
            raise self.cost[candidate]
        self.now += self.cost[candidate]


def test_picks_the_fastest_caches_it_and_the_second_run_only_reads(tmp_path: Path):
    path = tmp_path / "tuning.json"
    clock = FakeClock({4: 3.0, 8: 2.0, 16: 1.0, 32: 1.5})
    first = tune([4, 8, 16, 32], clock.measure, {"model": "base"}, path=path, timer=clock.timer)
    assert first.winner == 16 and not first.cached
    assert first.seconds == {"4": 3.0, "8": 2.0, "16": 1.0, "32": 1.5}
    assert len(clock.calls) == 4 * 3  # one warm-up and two timed repeats each
    stored = json.loads(path.read_text())
    assert stored["version"] == 1 and stored["entries"][first.key]["winner"] == 16

    again = FakeClock({4: 3.0, 8: 2.0, 16: 1.0, 32: 1.5})
    second = tune([4, 8, 16, 32], again.measure, {"model": "base"}, path=path, timer=again.timer)
    assert second.winner == 16 and second.cached and again.calls == []


def test_baseline_wins_unless_beaten_by_more_than_the_noise(tmp_path: Path):
    clock = FakeClock({8: 1.00, 16: 0.97})
    assert tune([16], clock.measure, "k1", baseline=8, path=tmp_path / "t.json", timer=clock.timer).winner == 8
    clock = FakeClock({8: 1.00, 16: 0.80})
    assert tune([16], clock.measure, "k2", baseline=8, path=tmp_path / "t.json", timer=clock.timer).winner == 16


def test_a_failing_candidate_is_dropped_and_all_failing_keeps_the_baseline(tmp_path: Path):
    path = tmp_path / "t.json"
    clock = FakeClock({8: 1.0, 32: MemoryError("CUDA out of memory")})
    result = tune([8, 32], clock.measure, "k", path=path, timer=clock.timer)
    assert result.winner == 8 and result.failed == ("32",)
    clock = FakeClock({16: RuntimeError("x"), 32: RuntimeError("y")})
    result = tune([16, 32], clock.measure, "other", baseline=16, path=path, timer=clock.timer)
    assert result.winner == 16 and not result.cached
    assert "other" not in json.loads(path.read_text())["entries"]  # nothing measured, nothing cached


def test_a_corrupt_cache_is_ignored_and_rewritten(tmp_path: Path, caplog):
    path = tmp_path / "t.json"
    path.write_text("{not json")
    clock = FakeClock({1: 2.0, 2: 1.0})
    assert tune([1, 2], clock.measure, "k", path=path, timer=clock.timer).winner == 2
    assert "ignoring unreadable tuning cache" in caplog.text
    assert json.loads(path.read_text())["entries"]["k"]["winner"] == 2


def test_a_cached_winner_outside_the_candidates_is_measured_again(tmp_path: Path):
    path = tmp_path / "t.json"
    clock = FakeClock({1: 2.0, 2: 1.0, 4: 0.5})
    tune([1, 2], clock.measure, "k", path=path, timer=clock.timer)
    result = tune([4], clock.measure, "k", path=path, timer=clock.timer)
    assert result.winner == 4 and not result.cached


def test_the_key_separates_devices_drivers_torch_versions_and_models(tmp_path: Path):
    h100 = select(Request(optimization_level=2), describe(MACHINES["h100"]))
    t4 = select(Request(optimization_level=2), describe(MACHINES["t4"]))
    k1, k2 = tuning_key(h100, "base", "batch_size"), tuning_key(t4, "base", "batch_size")
    assert k1["device"] == "NVIDIA H100 80GB HBM3" and k1["driver"] == "570.133.20" and k1["torch"] == "2.9.0+cu128"
    assert k1 != k2 and k1 != tuning_key(h100, "small", "batch_size")
    assert cache_path({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "whisper-subtitler" / "tuning.json"


def test_level_2_on_this_cpu_picks_a_batch_size_by_real_measurement_and_reuses_it(tmp_path: Path, monkeypatch, request):
    """The same 1024 feature rows through a Linear layer in batches of each candidate: batch 1 pays the
    per-call overhead 1024 times, so measurement must not pick it; the second run must not measure.
    One thread, so that another process on the shared cores cannot stall an OpenMP team."""
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    request.addfinalizer(lambda: torch.set_num_threads(threads))
    layer = torch.nn.Linear(256, 256)
    rows = torch.randn(1024, 256)
    calls = []

    def measure(batch: int) -> None:
        calls.append(batch)
        with torch.no_grad():
            for start in range(0, len(rows), batch):
                layer(rows[start : start + batch])

    selection = select(Request(optimization_level=2), describe(MACHINES["cpu"]))
    key = tuning_key(selection, "test-linear", "batch_size")
    first = tune([1, 64, 256], measure, key, repeats=3)
    assert not first.cached and first.winner in (64, 256), first.seconds
    assert first.seconds["1"] > first.seconds[str(first.winner)]
    assert (tmp_path / "whisper-subtitler" / "tuning.json").is_file()
    calls.clear()
    second = tune([1, 64, 256], measure, key)
    assert second.cached and second.winner == first.winner and calls == []


def test_amortize_adds_a_one_time_cost_spread_over_the_runs(tmp_path: Path):
    """A compiled candidate, 10 % faster per run after a first run 30 s longer, wins only when it pays back."""

    class SetupClock(FakeClock):
        def __init__(self, cost: dict, setup: dict) -> None:
            super().__init__(cost)
            self.setup = dict(setup)

        def measure(self, candidate) -> None:
            self.now += self.setup.pop(candidate, 0.0)
            super().measure(candidate)

    costs, setup = {False: 1.0, True: 0.9}, {True: 30.0}
    clock = SetupClock(costs, setup)
    short = tune(
        [False, True], clock.measure, "short", baseline=False, amortize=15, path=tmp_path / "t.json", timer=clock.timer
    )
    assert short.winner is False and short.seconds["True"] == pytest.approx(0.9 + 30.0 / 15)
    clock = SetupClock(costs, setup)
    long = tune(
        [False, True], clock.measure, "long", baseline=False, amortize=1000, path=tmp_path / "t.json", timer=clock.timer
    )
    assert long.winner is True and long.seconds["True"] == pytest.approx(0.9 + 0.03)
    clock = SetupClock(costs, setup)
    plain = tune([False, True], clock.measure, "plain", baseline=False, path=tmp_path / "t.json", timer=clock.timer)
    assert plain.winner is True and plain.seconds["True"] == pytest.approx(0.9)  # without amortize: warm-up not counted
    with pytest.raises(ValueError):
        tune([1], clock.measure, "k", amortize=10, warmup=0, path=tmp_path / "t.json", timer=clock.timer)
