"""The CAM++ embedding adapter on synthetic speech: same voice close, other voice far, masks honoured, and
the per-window deduplication gives exactly what one-by-one computation gives."""

from __future__ import annotations

import numpy as np
import pytest

from tests.media_speech import VOICE_A, VOICE_B, utterance


@pytest.fixture(scope="module")
def model():
    from whisper_subtitler.diarize.campplus import CAMPPlusEmbedding

    return CAMPPlusEmbedding.from_checkpoint()


@pytest.fixture(scope="module")
def voices(tmp_path_factory):
    work = tmp_path_factory.mktemp("campplus")
    n = 3 * 16_000  # every signal 3 s long (cut or padded), so batches need no padding

    def say(voice, text):
        speech = utterance(text, voice, work)[:n]
        return np.pad(speech, (0, n - len(speech)))

    return {
        "a1": say(VOICE_A, "The weather was lovely for the whole weekend at the lake."),
        "a2": say(VOICE_A, "Please bring the documents to the office before noon tomorrow."),
        "b1": say(VOICE_B, "The weather was lovely for the whole weekend at the lake."),
    }


def embed(model, *signals, weights=None):
    import torch

    n = max(len(s) for s in signals)
    batch = torch.stack([torch.from_numpy(np.pad(s, (0, n - len(s)))) for s in signals]).unsqueeze(1)
    with torch.inference_mode():
        return model(batch, weights=weights).numpy()


def cosine(x, y) -> float:
    return float(np.dot(x, y) / np.linalg.norm(x) / np.linalg.norm(y))


def test_same_voice_is_closer_than_another_voice_saying_the_same_words(model, voices):
    a1, a2, b1 = embed(model, voices["a1"], voices["a2"], voices["b1"])
    assert a1.shape == (192,)
    assert cosine(a1, a2) > cosine(a1, b1) + 0.1


def test_masks_select_the_speaker(model, voices):
    import torch

    both = np.concatenate([voices["a1"], voices["b1"]])
    frames = 100  # any frame rate: pyannote's StatsPool interpolates the weights
    first = torch.zeros(2, frames)
    first[0, : frames // 2] = 1  # row 0: the A half; row 1: the B half
    first[1, frames // 2 :] = 1
    ((on_a, on_b),) = [embed(model, both, both, weights=first)]
    a, b = embed(model, voices["a1"], voices["b1"])
    assert cosine(on_a, a) > cosine(on_a, b) and cosine(on_b, b) > cosine(on_b, a)


def test_repeated_windows_give_the_same_embeddings_as_one_by_one(model, voices):
    import torch

    a, b = voices["a1"], voices["b1"]
    weights = torch.rand(5, 50)
    batched = embed(model, a, a, a, b, b, weights=weights)
    one_by_one = np.vstack([embed(model, s, weights=weights[i : i + 1]) for i, s in enumerate([a, a, a, b, b])])
    np.testing.assert_allclose(batched, one_by_one, rtol=1e-4, atol=1e-4)


def test_onnx_runtime_frames_equal_torch_frames_on_real_speech(model, tmp_path, monkeypatch):
    """The CPU path of the pooled embeddings (ONNX Runtime, exported once into the cache) gives torch's frame-level
    features on the real sample, to float rounding; a second model loads the cached export without exporting."""
    import torch

    from tests import media
    from whisper_subtitler.audio import stream_audio
    from whisper_subtitler.diarize import onnx_trunk
    from whisper_subtitler.diarize.campplus import CAMPPlusEmbedding
    from whisper_subtitler.diarize.onnx_trunk import FrameNetwork, cpu_session

    samples = next(stream_audio(media.SAMPLE_WAV, piece_seconds=None)).samples
    batch = torch.from_numpy(samples[: 20 * 16_000].reshape(2, 1, -1).copy())
    network = FrameNetwork(model.campplus).eval()
    session = cpu_session(network, model.checkpoint, tmp_path)
    assert session is not None
    name = f"campplus-frames-{onnx_trunk.export_key(model.checkpoint)}"
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{name}.check.npy", f"{name}.onnx"]
    with torch.inference_mode():
        expected = model.forward_frames(batch)
        got = model._frames_on_all_cores(batch, session)
    assert got.shape == expected.shape == (2, 512, 499)  # 998 fbank frames of 25 ms every 10 ms in 10 s
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)

    def no_export(network):
        raise AssertionError("the cached export should have been used")

    monkeypatch.setattr(onnx_trunk, "export", no_export)
    other = CAMPPlusEmbedding.from_checkpoint()
    assert cpu_session(FrameNetwork(other.campplus).eval(), other.checkpoint, tmp_path) is not None


def test_cached_onnx_export_is_checked_against_its_record_without_torch(model, tmp_path, monkeypatch):
    """A later process checks the cached export against the torch output recorded at export time, without running
    CAM++ on torch (issue 48: 0.3-0.5 s per diarized process); an export that no longer matches its record, or a
    record that is damaged, is checked against torch again (and the export redone when it differs)."""
    import numpy as np

    from whisper_subtitler.diarize import onnx_trunk
    from whisper_subtitler.diarize.onnx_trunk import FrameNetwork, check_record, cpu_session

    network = FrameNetwork(model.campplus).eval()
    first = cpu_session(network, model.checkpoint, tmp_path)
    assert first is not None
    target = tmp_path / f"campplus-frames-{onnx_trunk.export_key(model.checkpoint)}.onnx"
    record = check_record(target)
    recorded = np.load(record)
    assert recorded.shape == (1, 512, 150)

    class NoTorch(FrameNetwork):
        def forward(self, features):
            raise AssertionError("the record should have been used, not torch")

    def no_export(network):
        raise AssertionError("the cached export should have been used")

    monkeypatch.setattr(onnx_trunk, "export", no_export)
    assert cpu_session(NoTorch(model.campplus).eval(), model.checkpoint, tmp_path) is not None

    # a record that the export does not match: the export is made again (and checked against torch)
    np.save(record, recorded + 1.0)
    monkeypatch.undo()
    exports = []
    real_export = onnx_trunk.export
    monkeypatch.setattr(onnx_trunk, "export", lambda network: exports.append(1) or real_export(network))
    assert cpu_session(network, model.checkpoint, tmp_path) is not None
    assert exports == [1]
    np.testing.assert_allclose(np.load(record), recorded, rtol=1e-6, atol=1e-6)

    # a damaged record: torch checks the export, no new export, and the record is written again
    record.write_bytes(b"damaged")
    assert cpu_session(network, model.checkpoint, tmp_path) is not None
    assert exports == [1]
    np.testing.assert_allclose(np.load(record), recorded, rtol=1e-6, atol=1e-6)


def test_onnx_runtime_path_falls_back_to_torch(model, tmp_path, monkeypatch, caplog):
    """Without the onnx package there is no ONNX session (logged) and ``frames`` runs torch; a damaged cache file
    is exported again."""
    import logging
    import sys

    import torch

    from whisper_subtitler.diarize import onnx_trunk
    from whisper_subtitler.diarize.onnx_trunk import FrameNetwork, cpu_session

    network = FrameNetwork(model.campplus).eval()
    target = tmp_path / f"campplus-frames-{onnx_trunk.export_key(model.checkpoint)}.onnx"
    target.write_bytes(b"not an onnx model")
    assert cpu_session(network, model.checkpoint, tmp_path) is not None
    assert target.stat().st_size > 1_000_000  # exported again over the damaged file

    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx raises ImportError
    with caplog.at_level(logging.INFO, logger="whisper_subtitler.diarize.onnx_trunk"):
        assert cpu_session(network, model.checkpoint, tmp_path / "empty") is None
    assert "stays on torch" in caplog.text and "onnx" in caplog.text

    from whisper_subtitler.diarize.campplus import CAMPPlusEmbedding

    fallback = CAMPPlusEmbedding.from_checkpoint()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert fallback.onnx_frames() is None
    x = torch.zeros(1, 1, 16_000)
    with torch.inference_mode():
        torch.testing.assert_close(fallback.frames(x), fallback.forward_frames(x))
