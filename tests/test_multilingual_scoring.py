"""The scoring of the multilingual evaluation (``tests/media_multilingual.py``): numbers written as digits compare
with the clips' texts, which spell them out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.media_multilingual import cer, cjk_numerals, normalized


def test_cjk_numerals_write_numbers_as_chinese_and_japanese_spell_them():
    assert [cjk_numerals(d) for d in ("0", "7", "10", "12", "20", "21", "99")] == [
        "〇",
        "七",
        "十",
        "十二",
        "二十",
        "二十一",
        "九十九",
    ]
    assert cjk_numerals("1234567890") == "一二三四五六七八九〇"  # a count written without separators


def test_a_count_written_in_digits_scores_against_the_spelled_out_text():
    # Whisper base on the Chinese and Japanese counting clips: one character off ("0" for 十).
    for language in ("zh", "ja"):
        assert cer(normalized("一二三四五六七八九十。", language), normalized("1234567890", language)) == 0.1
        assert normalized("1, 2, 3, ... 10", language) == "一二三十"
    assert normalized("1, 2, 3.", "es") == "uno dos tres"
    assert normalized("Un 2, 3.", "fr") == "un deux trois"


def test_the_bench_scores_a_stored_result_again(tmp_path):
    """``bench/multilingual.py --rescore``: verdicts and counts rewritten from the stored texts, the rest kept."""
    stored = {
        "command": "python bench/multilingual.py",
        "files": [
            {
                "name": "held-22",
                "right": 1,
                "misheard": 1,
                "translated": 0,
                "dropped": 0,
                "seconds": 12.5,
                "clips": [
                    {"name": "zh/jishu", "text": "1234567890", "language": "zh", "cer": 1.0, "verdict": "misheard"},
                    {"name": "zh/nihao_shijie", "text": "你好世界", "language": "zh", "cer": 0.0, "verdict": "right"},
                ],
            }
        ],
    }
    path = tmp_path / "stored.json"
    path.write_text(json.dumps(stored), encoding="utf-8")
    script = Path(__file__).resolve().parent.parent / "bench" / "multilingual.py"
    root = script.parent.parent
    subprocess.run(
        [sys.executable, str(script), "--rescore", str(path), "--out", str(path)],
        check=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(root), os.environ.get("PYTHONPATH"))))},
    )
    (row,) = json.loads(path.read_text(encoding="utf-8"))["files"]
    assert (row["right"], row["misheard"], row["seconds"]) == (2, 0, 12.5)
    assert [(c["verdict"], c["cer"]) for c in row["clips"]] == [("right", 0.1), ("right", 0.0)]
