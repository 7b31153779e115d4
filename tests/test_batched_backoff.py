"""Out-of-memory backoff with a simulated OOM: a fake decode function that fails for batches above a size."""

from __future__ import annotations

import logging

import pytest

from whisper_subtitler.decoding.backoff import BatchRunner, is_out_of_memory


class OutOfMemoryError(RuntimeError):
    """Named like ``torch.OutOfMemoryError``, which is how the runner recognises it."""


def fake_decode(limit: int, calls: list[int], device: dict):
    """Doubles each item; raises the fake OOM for batches above ``limit`` while on the GPU."""

    def run(items: list[int]) -> list[int]:
        calls.append(len(items))
        if device["name"] == "gpu" and len(items) > limit:
            raise OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return [2 * x for x in items]

    return run


def test_oom_halves_the_batch_and_loses_no_item(caplog):
    calls: list[int] = []
    runner = BatchRunner(16, release=lambda: calls.append(-1))
    with caplog.at_level(logging.WARNING):
        out = runner.run(list(range(20)), fake_decode(3, calls, {"name": "gpu"}))
    assert out == [2 * x for x in range(20)]  # every item, once, in order
    assert runner.batch_size == 2  # 16 -> 8 -> 4 -> 2, then it stays there
    assert calls[:7] == [16, -1, 8, -1, 4, -1, 2]
    assert all(c <= 2 for c in calls[7:])
    assert "out of memory with a batch of 16; retrying with 8" in caplog.text


def test_oom_at_batch_1_moves_to_the_cpu_once():
    calls: list[int] = []
    device = {"name": "gpu"}

    def to_cpu() -> int:
        device["name"] = "cpu"
        return 8

    runner = BatchRunner(4, to_cpu=to_cpu)
    out = runner.run(list(range(10)), fake_decode(0, calls, device))  # even one item does not fit on the "GPU"
    assert out == [2 * x for x in range(10)]
    assert runner.on_cpu and runner.batch_size == 8
    assert calls == [4, 2, 1, 8, 2]  # then batches of 8 on the CPU: 8 + the remaining 2


def test_oom_at_batch_1_without_a_way_out_is_raised():
    runner = BatchRunner(2)
    with pytest.raises(OutOfMemoryError):
        runner.run([1, 2, 3], fake_decode(0, [], {"name": "gpu"}))


def test_other_errors_are_not_retried():
    calls: list[int] = []

    def broken(items):
        calls.append(len(items))
        raise ValueError("bad input")

    with pytest.raises(ValueError):
        BatchRunner(8).run([1, 2, 3], broken)
    assert calls == [3]


def test_wrong_result_count_is_an_error():
    with pytest.raises(RuntimeError):
        BatchRunner(4).run([1, 2, 3], lambda items: items[:1])


def test_oom_recognition():
    assert is_out_of_memory(OutOfMemoryError("x"))
    assert is_out_of_memory(RuntimeError("MPS backend out of memory (MPS allocated: 1 GB)"))
    assert not is_out_of_memory(RuntimeError("shape mismatch"))
    assert not is_out_of_memory(MemoryError())  # host RAM: not something a smaller batch on the CPU fixes
    with pytest.raises(ValueError):
        BatchRunner(0)
