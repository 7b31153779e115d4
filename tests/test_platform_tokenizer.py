"""``platform.prepare_tokenizer``: whisper's tokenizer without tiktoken's special-token scan, the same tokens."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_the_tokens_are_whispers_and_the_special_token_expression_is_never_compiled():
    # in a process of its own: tiktoken's compiled expression and whisper's tokenizers are cached per process
    script = textwrap.dedent(
        """
        from types import SimpleNamespace

        import tiktoken.core
        from whisper.tokenizer import Tokenizer, get_tokenizer

        from whisper_subtitler.platform.tokenizer import prepare_tokenizer

        texts = [" hello there", "Hello, world! 12.5 %", " ♪♪♪", " こんにちは", " -", " '"]
        for multilingual, languages in ((False, 99), (True, 99), (True, 100)):
            model = SimpleNamespace(is_multilingual=multilingual, num_languages=languages)
            prepare_tokenizer(model)
            prepare_tokenizer(model)  # idempotent
            tokenizer = get_tokenizer(multilingual, num_languages=languages, language="en", task="transcribe")
            encoding = tokenizer.encoding
            scanning = type(encoding).encode
            suppressed = Tokenizer.non_speech_tokens.func(tokenizer)  # computed now, as decoding's first file does
            assert tiktoken.core._special_token_regex.cache_info().currsize == 0
            # special-token text is plain text now, as tiktoken's own encode makes it when told not to scan
            plain = scanning(encoding, " <|endoftext|>", disallowed_special=())
            assert tokenizer.encode(" <|endoftext|>") == plain and tokenizer.eot not in plain
            assert encoding.encode("<|endoftext|>", allowed_special="all") == [tokenizer.eot]
            assert tiktoken.core._special_token_regex.cache_info().currsize == 0
            # whisper's own scanning encode gives the same tokens and the same suppressed set
            for text in texts:
                assert scanning(encoding, text) == tokenizer.encode(text)
            encoding.encode = scanning.__get__(encoding)
            assert Tokenizer.non_speech_tokens.func(tokenizer) == suppressed
            del encoding.encode
            assert tiktoken.core._special_token_regex.cache_info().currsize > 0  # the scan ran: the check can fail
            tiktoken.core._special_token_regex.cache_clear()
        print("ok")
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
