"""Batched transcription: VAD-first chunking, batched decoding, word timestamps (see ``transcriber``).

    chunking    speech regions -> windows of <= 30 s (pure)
    quality     temperature fallback rules (pure)
    backoff     out-of-memory backoff: halve the batch, then the CPU (pure)
    features    chunk audio -> log-mel windows
    budgeted    batched greedy decoding with token budgets, finished rows dropped
    kernels     CPU forms of the output projection and cross-attention; the SDPA kernel pin
    compiled    torch.compile of the decoder step (a level-2 candidate)
    alignment   word timestamps from the computed audio features
    transcriber the stage: BatchedTranscriber, ChunkTranscriber, DecodingSettings
    tuning      level 2: batch size, kernels, attention kernel and compilation measured on the real audio, cached
    quantize    int8 dynamic quantization for the CPU (measured, off by default)

Import the stage from ``whisper_subtitler.decoding.transcriber``; this package imports no torch by itself.
"""
