"""Exact conversion of a CTranslate2 (faster-whisper) Whisper model folder into an openai-whisper checkpoint.

A CTranslate2 folder holds ``model.bin`` (all tensors), ``config.json`` (``alignment_heads`` among others) and the
tokenizer files. openai-whisper cannot read it, but the tensors are the same ones under other names, so the
conversion renames and un-fuses them without touching a single value (float16 stays float16).

``model.bin`` layout, binary version 6 (CTranslate2 ``python/ctranslate2/specs/model_spec.py``, ``_serialize``):
u32 version; string spec name; u32 spec revision; u32 variable count; per variable: string name, u8 rank,
rank x u32 dims, u8 dtype, u32 byte count, raw little-endian data; then u32 alias count and (alias, target) string
pairs. Strings are u16 byte length followed by the bytes, NUL included.
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path
from typing import BinaryIO

import numpy as np

# CTranslate2 DataType enum (include/ctranslate2/types.h) -> numpy dtype; bf16 has no numpy type and is read as raw u16.
_DTYPES = {0: np.float32, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.float16, 5: np.uint16}
_BF16 = 5

# CTranslate2 sub-module names -> openai-whisper ones (whisper/model.py), per layer.
_SELF_ATTN = "self_attention"
_RENAMES = {
    "encoder/layer_norm": "encoder.ln_post",
    "decoder/layer_norm": "decoder.ln",
    "decoder/embeddings": "decoder.token_embedding",
    "encoder/conv1": "encoder.conv1",
    "encoder/conv2": "encoder.conv2",
}
_LAYER_PARTS = {
    "self_attention/linear_1": "attn.out",
    "self_attention/layer_norm": "attn_ln",
    "attention/linear_0": "cross_attn.query",
    "attention/linear_2": "cross_attn.out",
    "attention/layer_norm": "cross_attn_ln",
    "ffn/linear_0": "mlp.0",
    "ffn/linear_1": "mlp.2",
    "ffn/layer_norm": "mlp_ln",
}
_LEAF = {"gamma": "weight", "beta": "bias", "weight": "weight", "bias": "bias"}


class ConversionError(ValueError):
    """The folder is not a CTranslate2 Whisper model this converter understands."""


def _read_string(f: BinaryIO) -> str:
    (length,) = struct.unpack("<H", f.read(2))
    return f.read(length).decode("utf-8").rstrip("\0")


def read_model_bin(path: Path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Read every variable of a CTranslate2 ``model.bin``.

    Returns ``(variables, aliases)``: arrays by CTranslate2 name (bf16 as raw uint16), and alias -> target names.
    Raises ``ConversionError`` for another binary version or a spec that is not ``WhisperSpec``.
    """
    variables: dict[str, np.ndarray] = {}
    with open(path, "rb") as f:
        (version,) = struct.unpack("<I", f.read(4))
        if version != 6:
            raise ConversionError(f"{path}: CTranslate2 binary version {version}, only version 6 is supported")
        spec = _read_string(f)
        if spec != "WhisperSpec":
            raise ConversionError(f"{path}: a {spec or 'unnamed'} model, not a Whisper model")
        f.read(4)  # spec revision
        (count,) = struct.unpack("<I", f.read(4))
        for _ in range(count):
            name = _read_string(f)
            rank = f.read(1)[0]
            shape = struct.unpack(f"<{rank}I", f.read(4 * rank)) if rank else ()
            dtype = f.read(1)[0]
            (n_bytes,) = struct.unpack("<I", f.read(4))
            if dtype not in _DTYPES:
                raise ConversionError(f"{path}: variable {name} has unknown dtype code {dtype}")
            data = np.frombuffer(f.read(n_bytes), dtype=_DTYPES[dtype])
            variables[name] = data.reshape(shape) if shape else data.reshape(())
            if dtype == _BF16:
                variables[name] = variables[name].view(np.uint16)  # converted to torch.bfloat16 below
        aliases: dict[str, str] = {}
        raw = f.read(4)
        if len(raw) == 4:
            (n_alias,) = struct.unpack("<I", raw)
            for _ in range(n_alias):
                alias = _read_string(f)
                aliases[alias] = _read_string(f)
    return variables, aliases


def _target_name(name: str) -> str | None:
    """openai-whisper parameter name of a CTranslate2 variable, or ``None`` for fused or non-tensor entries."""
    head, _, leaf = name.rpartition("/")
    if name == "encoder/position_encodings/encodings":
        return "encoder.positional_embedding"
    if name == "decoder/position_encodings/encodings":
        return "decoder.positional_embedding"
    if head in _RENAMES and leaf in _LEAF:
        return f"{_RENAMES[head]}.{_LEAF[leaf]}"
    m = re.fullmatch(r"(encoder|decoder)/layer_(\d+)/(.+)", head)
    if m and m.group(3) in _LAYER_PARTS and leaf in _LEAF:
        return f"{m.group(1)}.blocks.{m.group(2)}.{_LAYER_PARTS[m.group(3)]}.{_LEAF[leaf]}"
    return None


def convert(folder: Path) -> dict:
    """Convert a CTranslate2 Whisper folder into an openai-whisper checkpoint dict.

    Returns ``{"dims": {...}, "model_state_dict": {name: tensor}, "alignment_heads": [[layer, head], ...]}``, loadable
    with ``whisper.model.Whisper(ModelDimensions(**dims)).load_state_dict(state, strict=True)``. Every tensor keeps its
    values and dtype; fused q/k/v projections are split on dim 0 and the all-zero fused key bias is dropped (openai's
    ``key`` has no bias). Raises ``ConversionError`` when a tensor is left unmapped or the key bias is not zero.
    """
    import torch

    folder = Path(folder)
    variables, _aliases = read_model_bin(folder / "model.bin")
    config = (
        json.loads((folder / "config.json").read_text(encoding="utf-8")) if (folder / "config.json").exists() else {}
    )

    def tensor(a: np.ndarray) -> torch.Tensor:
        t = torch.from_numpy(a.copy())
        return t.view(torch.bfloat16) if a.dtype == np.uint16 else t

    state: dict[str, torch.Tensor] = {}
    for name, array in variables.items():
        if array.ndim == 0:
            continue  # scalars: num_heads, activation, alignment settings
        target = _target_name(name)
        if target is not None:
            state[target] = tensor(array)
            continue
        m = re.fullmatch(
            r"(encoder|decoder)/layer_(\d+)/(self_attention|attention)/(linear_0|linear_1)/(weight|bias)", name
        )
        if not m:
            raise ConversionError(f"{folder}: no openai-whisper name for CTranslate2 variable {name}")
        side, layer, kind, linear, leaf = m.groups()
        prefix = f"{side}.blocks.{layer}"
        if kind == _SELF_ATTN:  # linear_0 = q, k, v fused on dim 0
            parts = dict(zip(("query", "key", "value"), np.split(array, 3, axis=0)))
            module = "attn"
        else:  # cross-attention linear_1 = k, v fused on dim 0 (linear_0 is the query, mapped above)
            parts = dict(zip(("key", "value"), np.split(array, 2, axis=0)))
            module = "cross_attn"
        for proj, part in parts.items():
            if proj == "key" and leaf == "bias":
                if np.any(part.astype(np.float32) != 0):
                    raise ConversionError(f"{folder}: {name} has a non-zero key bias that openai-whisper cannot hold")
                continue
            state[f"{prefix}.{module}.{proj}.{leaf}"] = tensor(part)

    def count_layers(side: str) -> int:
        return len({int(m.group(1)) for k in variables if (m := re.match(rf"{side}/layer_(\d+)/", k))})

    conv1 = variables["encoder/conv1/weight"]
    embedding = variables["decoder/embeddings/weight"]
    dims = {
        "n_mels": int(conv1.shape[1]),
        "n_audio_ctx": int(variables["encoder/position_encodings/encodings"].shape[0]),
        "n_audio_state": int(conv1.shape[0]),
        "n_audio_head": int(variables["encoder/num_heads"]),
        "n_audio_layer": count_layers("encoder"),
        "n_vocab": int(embedding.shape[0]),
        "n_text_ctx": int(variables["decoder/position_encodings/encodings"].shape[0]),
        "n_text_state": int(embedding.shape[1]),
        "n_text_head": int(variables["decoder/num_heads"]),
        "n_text_layer": count_layers("decoder"),
    }
    heads = [[int(layer), int(head)] for layer, head in config.get("alignment_heads", [])]
    return {"dims": dims, "model_state_dict": state, "alignment_heads": heads}


def is_ctranslate2_folder(path: Path) -> bool:
    """True when ``path`` is a folder with a CTranslate2 ``model.bin`` (or its split parts) and a ``config.json``."""
    return Path(path).is_dir() and (Path(path) / "config.json").is_file() and (Path(path) / "model.bin").is_file()
