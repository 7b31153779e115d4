"""``whisper-subtitler align``: subtitles from a transcript people already have, timed by Whisper.

    script     reading TXT, SRT, WebVTT and JSON transcripts
    words      the tokenizer's words of the transcript, in sentences
    windows    where each 30-second alignment window goes (VAD speech regions)
    forced     Whisper's cross-attention alignment (DTW) on the transcript's tokens, window by window
    refine     sentences the audio does not hold; word boundaries moved onto pauses
    run        one media file and transcript to subtitle files (the cue rules and writers of ``transcribe``)

The command is ``cli.align``. ``docs/alignment.md`` explains the method and its limits.
"""
