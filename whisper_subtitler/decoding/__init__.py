"""Batched decoding, the layer under the transcription stage (``transcription.batched``): VAD-first chunking,
batched decoding with token budgets, word timestamps.

    chunking    speech regions -> windows of <= 30 s (pure)
    quality     temperature fallback rules (pure)
    backoff     out-of-memory backoff: halve the batch, then the CPU (pure)
    features    chunk audio -> log-mel windows
    budgeted    batched greedy decoding with token budgets, finished rows dropped
    beams       beam search over a whole batch's beams at once
    decode      one batch decoded: greedy or sampled (budgeted), beams (beams), best_of candidates
    kernels     CPU forms of the output projection and cross-attention; the SDPA kernel pin
    compiled    torch.compile of the decoder step (a level-2 candidate)
    alignment   word timestamps from the computed audio features
    language_plan, language_id, code_switching   the language of each speech region, smoothed over the file

The stage itself, its level-2 tuning and int8 quantization live above (``transcription``, ``platform.quantize``);
this package imports no torch by itself and nothing above it.
"""
