"""Line breaking inside one cue: the fewest lines that fit, broken at the best place, balanced.

Rules from Netflix's Timed Text Style Guide (English template): keep a short cue on one line; break after
punctuation and before conjunctions or prepositions; never separate article and noun, first and last name,
pronoun and verb, auxiliary or negation and verb; prefer balanced lines (slightly bottom-heavy). Words are
never broken, except a single word wider than a whole line (hard wrap, last resort). Languages without
spaces are broken between characters, following the Japanese line-breaking rules (kinsoku shori, JIS X 4051)
for characters that may not start or end a line.

The part-of-speech rules use English word lists; other languages written with spaces get the punctuation
and name rules only. Adjective-noun pairs cannot be told apart without a tagger and are not detected.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from whisper_subtitler.cues.width import display_width, ends_clause, ends_sentence

ARTICLES = frozenset("a an the this that these those my your his her its our their some any every each no".split())
CONJUNCTIONS = frozenset(
    "and but or nor so yet because although though while whereas if unless until when whenever where "
    "wherever whether which who whom whose that than since as".split()
)
PREPOSITIONS = frozenset(
    "to of in on at for with from by about into onto over under after before between through during "
    "without within against among around across behind beyond near toward towards upon like below above "
    "along beside besides despite except inside outside per via throughout underneath".split()
)
PRONOUNS = frozenset("i you he she we they it".split())
AUXILIARIES = frozenset(
    "am is are was were be been being have has had do does did will would shall should can could may "
    "might must not".split()
)

# Japanese kinsoku shori (JIS X 4051): characters that may not start a line, and that may not end one.
NO_LINE_START = frozenset("、。，．・：；？！ー」』）】〕〉》”’…々ぁぃぅぇぉっゃゅょゎァィゥェォッャュョヮヵヶ")
NO_LINE_END = frozenset("「『（【〔〈《“‘")

NEVER = 40.0  # penalty of a break the rules forbid; still possible when nothing else fits
AVOID = 15.0
DEFAULT = 6.0


@dataclass(frozen=True, slots=True)
class Token:
    """An unbreakable piece of cue text: ``text`` has no surrounding space; ``space_before`` says whether a
    space joins it to the previous token on the same line."""

    text: str
    space_before: bool


@dataclass(frozen=True, slots=True)
class Layout:
    """Lines of one cue and the penalty of the chosen breaks (0 for one line; lower is better)."""

    lines: tuple[str, ...]
    cost: float


def tokenize(texts: Sequence[str], spaceless: bool) -> list[Token]:
    """Turn Whisper word texts (with their leading spaces) into breakable tokens.

    With spaces, a word without a leading space (punctuation or a word piece Whisper split off) is glued
    to the previous token, so a line never breaks inside a word. Without spaces, every word is a token and
    a break may fall between any two of them.
    """
    tokens: list[Token] = []
    for raw in texts:
        text = raw.strip()
        if not text:
            continue
        space = raw[:1].isspace()
        if tokens and not spaceless and not space:
            prev = tokens[-1]
            tokens[-1] = Token(prev.text + text, prev.space_before)
        else:
            tokens.append(Token(text, space if tokens else False))
    return tokens


def _bare(text: str) -> str:
    return text.strip("\"'“”‘’«»()[]¿¡.,;:!?…-–—").lower()


def break_penalty(left: str, right: str, spaceless: bool = False, english: bool = True) -> float:
    """Penalty of breaking between token ``left`` and token ``right`` (a line break or a cue boundary).

    0 after a sentence end, 1 after clause punctuation, 2-3 before a conjunction or preposition,
    ``AVOID`` or ``NEVER`` between words the rules keep together, ``DEFAULT`` otherwise.
    """
    if right[:1] in NO_LINE_START or left[-1:] in NO_LINE_END:
        return NEVER
    if ends_sentence(left):
        return 0.0
    if ends_clause(left):
        return 1.0
    if spaceless:
        return DEFAULT
    lb, rb = _bare(left), _bare(right)
    if english:
        if lb in ARTICLES:
            return NEVER
        if lb in PREPOSITIONS or lb in AUXILIARIES or lb.endswith("n't") or rb == "not" or rb.endswith("n't"):
            return AVOID
        if lb in PRONOUNS and rb not in CONJUNCTIONS and rb not in PREPOSITIONS:
            return AVOID
        if rb in CONJUNCTIONS:
            return 2.0
        if rb in PREPOSITIONS:
            return 3.0
    if left[:1].isupper() and right[:1].isupper() and lb != "i":  # first and last name
        return 25.0
    if lb[:1].isdigit() and rb[:1].isalpha():  # number and unit
        return AVOID
    return DEFAULT


def _split_wide(tokens: list[Token], limit: int, spaceless: bool) -> list[Token]:
    """Split tokens wider than a line: by characters (spaceless) or hard-wrapped (last resort)."""
    out: list[Token] = []
    for tok in tokens:
        if display_width(tok.text) <= limit:
            out.append(tok)
            continue
        chunk, space = "", tok.space_before
        for char in tok.text:
            if chunk and (spaceless or display_width(chunk + char) > limit):
                out.append(Token(chunk, space))
                chunk, space = "", False
            chunk += char
        out.append(Token(chunk, space))
    return out


def layout(
    tokens: Sequence[Token],
    *,
    max_width: int,
    max_lines: int,
    first_line_indent: int = 0,
    spaceless: bool = False,
    english: bool = True,
) -> Layout | None:
    """Break ``tokens`` into at most ``max_lines`` lines of at most ``max_width`` columns.

    ``first_line_indent`` columns are reserved on the first line (a speaker label). Returns the fewest
    lines that fit, with the breaks of least total penalty (``break_penalty`` plus imbalance), or ``None``
    when the text does not fit at all. Cost: O(n) for two lines, O(lines * n^2) for more.

    With an indent, a broken cue never leaves one word alone after the label on its first line
    (``[SPEAKER_00]: So`` over the rest reads as a stray label): the first line then holds at least two
    words, or the layout is ``None`` so the cue builder cuts the cue elsewhere. A single word that is
    hard-wrapped is the one exception.
    """
    if not tokens:
        return None
    tokens = list(tokens)
    min_first = 2 if first_line_indent > 0 and len(tokens) > 1 else 1  # words on a labelled first line
    if any(display_width(t.text) > max_width - first_line_indent for t in tokens):
        tokens = _split_wide(tokens, max_width - first_line_indent, spaceless)
    n = len(tokens)
    widths = [display_width(t.text) for t in tokens]
    # prefix[i]: width of tokens[0:i] joined, with their spaces; a line tokens[a:b] is
    # prefix[b] - prefix[a] - (1 if tokens[a] has a space before it).
    prefix = [0]
    for tok, w in zip(tokens, widths):
        prefix.append(prefix[-1] + w + (1 if tok.space_before and len(prefix) > 1 else 0))

    def width(a: int, b: int) -> int:
        return prefix[b] - prefix[a] - (1 if a > 0 and tokens[a].space_before else 0)

    def limit(line_index: int) -> int:
        return max_width - (first_line_indent if line_index == 0 else 0)

    def text(a: int, b: int) -> str:
        parts = [tokens[a].text]
        parts += [(" " if t.space_before else "") + t.text for t in tokens[a + 1 : b]]
        return "".join(parts)

    def penalty(b: int) -> float:
        return break_penalty(tokens[b - 1].text, tokens[b].text, spaceless, english)

    if width(0, n) <= limit(0):
        return Layout((text(0, n),), 0.0)
    if max_lines < 2:
        return None
    # Two lines: try every break point.
    best: tuple[float, int] | None = None
    for b in range(min_first, n):
        w1, w2 = width(0, b) + first_line_indent, width(b, n)
        if w1 > max_width or w2 > max_width:
            continue
        cost = penalty(b) + 10.0 * abs(w1 - w2) / max_width + (1.0 if w1 > w2 else 0.0)
        if best is None or cost < best[0]:
            best = (cost, b)
    if best is not None:
        return Layout((text(0, best[1]), text(best[1], n)), best[0])
    # More lines: dynamic programming over break points, for the fewest lines that fit.
    for lines in range(3, max_lines + 1):
        target = (prefix[n] + first_line_indent) / lines
        inf = float("inf")
        cost = [[inf] * (n + 1) for _ in range(lines + 1)]
        back = [[0] * (n + 1) for _ in range(lines + 1)]
        cost[0][0] = 0.0
        for li in range(1, lines + 1):
            for b in range(1, n + 1):
                for a in range(b - 1, -1, -1):
                    if li == 1 and b - a < min_first:
                        continue
                    w = width(a, b)
                    if w > limit(li - 1):
                        break
                    if cost[li - 1][a] == inf:
                        continue
                    c = cost[li - 1][a] + 10.0 * abs(w - target) / max_width + (penalty(b) if b < n else 0.0)
                    if c < cost[li][b]:
                        cost[li][b], back[li][b] = c, a
        if cost[lines][n] < inf:
            bounds, b = [], n
            for li in range(lines, 0, -1):
                a = back[li][b]
                bounds.append((a, b))
                b = a
            return Layout(tuple(text(a, b) for a, b in reversed(bounds)), cost[lines][n])
    return None
