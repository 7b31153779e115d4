"""Line breaking inside one cue: the fewest lines that fit, broken at the best place, balanced.

Rules from Netflix's Timed Text Style Guide (English template): keep a short cue on one line; break after
punctuation and before conjunctions or prepositions; never separate article and noun, first and last name,
pronoun and verb, auxiliary or negation and verb; prefer balanced lines (slightly bottom-heavy). Words are
never broken, except a single word wider than a whole line (hard wrap, last resort). Languages without
spaces are broken between characters, following the Japanese line-breaking rules (kinsoku shori, JIS X 4051)
for characters that may not start or end a line.

Balance is a hard preference: a layout never leaves a line of one word (an orphan) or a line under a third
of the width of its neighbour (the speaker label counted in the first line's width), nor breaks inside a name
or after an article, when another layout within the width avoids all of these (``is_good``); when none does, the
best layout is returned with ``BAD_LAYOUT`` added to its cost, so that the cue builder prefers other cue
boundaries.

The part-of-speech rules use English word lists; other languages written with spaces get the punctuation
and name rules only. Adjective-noun pairs cannot be told apart without a tagger and are not detected.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate, combinations
from math import comb

from whisper_subtitler.cues.width import display_width, ends_clause, ends_sentence

ARTICLES = frozenset("a an the".split())
DETERMINERS = frozenset("this that these those my your his her its our their some any every each no".split())
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
NAME = 25.0  # penalty of a break between first and last name
AVOID = 15.0
DEFAULT = 6.0
BAD_LAYOUT = 20.0  # added to the cost of a layout that is not ``is_good`` (none of the cue's layouts is)
MIN_LINE_RATIO = 1 / 3  # a line narrower than this share of its neighbour is unbalanced
MAX_COMBINATIONS = 5000  # three lines or more: good layouts are searched exhaustively up to this many


@dataclass(frozen=True, slots=True)
class Token:
    """An unbreakable piece of cue text: ``text`` has no surrounding space; ``space_before`` says whether a
    space joins it to the previous token on the same line."""

    text: str
    space_before: bool


@dataclass(frozen=True, slots=True)
class Layout:
    """Lines of one cue and the penalty of the chosen breaks (0 for one line; lower is better); ``good``: the
    layout keeps the balance and break rules (``is_good``)."""

    lines: tuple[str, ...]
    cost: float
    good: bool = True


def tokenize(
    texts: Sequence[str], spaceless: bool, glued: Sequence[bool] = (), owners: list[int] | None = None
) -> list[Token]:
    """Turn Whisper word texts (with their leading spaces) into breakable tokens.

    With spaces, a word without a leading space (punctuation or a word piece Whisper split off) is glued
    to the previous token, so a line never breaks inside a word. Without spaces, every word is a token and
    a break may fall between any two of them, except before a word that ``glued`` marks (it continues the
    phrase before it: ``cues.phrases.continuations``), which joins the previous token.

    ``owners``, when given, is extended with the index of the token that holds each text (the next token's for a
    text that is only space).
    """
    tokens: list[Token] = []
    for k, raw in enumerate(texts):
        text = raw.strip()
        if not text:
            if owners is not None:
                owners.append(len(tokens))
            continue
        space = raw[:1].isspace()
        if tokens and not space and (not spaceless or (k < len(glued) and glued[k])):
            prev = tokens[-1]
            tokens[-1] = Token(prev.text + text, prev.space_before)
        else:
            tokens.append(Token(text, space if tokens else False))
        if owners is not None:
            owners.append(len(tokens) - 1)
    return tokens


def _bare(text: str) -> str:
    return text.strip("\"'“”‘’«»()[]¿¡.,;:!?…-–—").lower()


@lru_cache(maxsize=1 << 16)  # a pure function of its arguments, called for the same pairs many times
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
        if lb in ARTICLES or lb in DETERMINERS:
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
        return NAME
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


@lru_cache(maxsize=1 << 16)
def is_word(token: str) -> bool:
    """Whether a token is a word (has a letter or digit), not punctuation standing alone (``-``, ``…``)."""
    return any(c.isalnum() for c in token)


def balanced(widths: Sequence[int]) -> bool:
    """Whether no line is narrower than ``MIN_LINE_RATIO`` of a neighbouring line (widths in columns, as shown)."""
    return all(min(a, b) >= MIN_LINE_RATIO * max(a, b) for a, b in zip(widths, widths[1:]))


def is_good(widths: Sequence[int], words: Sequence[int], penalties: Sequence[float], spaceless: bool = False) -> bool:
    """Whether a layout of several lines reads well: balanced (``balanced``; ``widths`` as shown, a label on the
    first line included), no line of a single word (``words``: the words of each line; not applied without
    spaces), and no break the rules forbid or keep for names (``penalties``: ``break_penalty`` at each break,
    all below ``NAME``). One line is always good."""
    if len(widths) < 2:
        return True
    return balanced(widths) and (spaceless or min(words) >= 2) and all(p < NAME for p in penalties)


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
    lines that fit, with the breaks of least total penalty (``break_penalty`` plus imbalance) among the good
    layouts (``is_good``: no orphan word, no line under a third of its neighbour, no break inside a name or
    after an article), or among all when none is good (its cost then includes ``BAD_LAYOUT``), or ``None``
    when the text does not fit at all. Cost: O(n) for two lines, O(lines * n^2) for more (plus an exhaustive
    search for a good layout, bounded by ``MAX_COMBINATIONS``, when the best one is not good).

    With an indent, a broken cue never leaves one word alone after the label on its first line
    (``[SPEAKER_00]: So`` over the rest reads as a stray label): the first line then holds at least two
    words, or the layout is ``None`` so the cue builder cuts the cue elsewhere. A single word that is
    hard-wrapped is the one exception.
    """
    if not tokens:
        return None
    tokens = list(tokens)
    min_first = 2 if first_line_indent > 0 and len(tokens) > 1 else 1  # words on a labelled first line
    widths = [display_width(t.text) for t in tokens]
    if max(widths) > max_width - first_line_indent:
        tokens = _split_wide(tokens, max_width - first_line_indent, spaceless)
        widths = [display_width(t.text) for t in tokens]
    n = len(tokens)
    # prefix[i]: width of tokens[0:i] joined, with their spaces; a line tokens[a:b] is
    # prefix[b] - prefix[a] - (1 if tokens[a] has a space before it).
    prefix = [0, *accumulate(w + (1 if k and t.space_before else 0) for k, (t, w) in enumerate(zip(tokens, widths)))]
    word_count = [0, *accumulate(is_word(t.text) for t in tokens)]

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

    def good(bounds: Sequence[int]) -> bool:
        """Whether the lines between the break points ``bounds`` (0, ..., n) are a good layout."""
        spans = list(zip(bounds, bounds[1:]))
        shown = [width(a, b) + (first_line_indent if k == 0 else 0) for k, (a, b) in enumerate(spans)]
        words = [word_count[b] - word_count[a] for a, b in spans]
        return is_good(shown, words, [penalty(b) for b in bounds[1:-1]], spaceless)

    def result(bounds: Sequence[int], cost: float) -> Layout:
        ok = good(bounds)
        return Layout(tuple(text(a, b) for a, b in zip(bounds, bounds[1:])), cost + (0.0 if ok else BAD_LAYOUT), ok)

    if width(0, n) <= limit(0):
        return Layout((text(0, n),), 0.0)
    if max_lines < 2:
        return None
    # Two lines: try every break point; a good layout wins over any other.
    best: tuple[bool, float, int] | None = None
    # The first line widens and the second narrows as the break moves right: the breaks where both fit are the
    # ones from the first whose second line fits (its width is at least prefix[n] - prefix[b] - 1) up to the last
    # whose first line fits.
    first_fit = max(min_first, bisect_left(prefix, prefix[n] - max_width - 1))
    last_fit = min(n - 1, bisect_right(prefix, max_width - first_line_indent) - 1)
    for b in range(first_fit, last_fit + 1):
        w1, w2 = width(0, b) + first_line_indent, width(b, n)
        if w1 > max_width or w2 > max_width:
            continue
        pen = penalty(b)
        cost = pen + 10.0 * abs(w1 - w2) / max_width + (1.0 if w1 > w2 else 0.0)
        if best is not None and not best[0] and cost >= best[1]:
            continue  # a good layout that costs less is already found
        words = (word_count[b], word_count[n] - word_count[b])
        candidate = (not is_good((w1, w2), words, (pen,), spaceless), cost, b)
        if best is None or candidate < best:
            best = candidate
    if best is not None:
        return result((0, best[2], n), best[1])
    # More lines: dynamic programming over break points, for the fewest lines that fit.
    for lines in range(3, max_lines + 1):
        target = (prefix[n] + first_line_indent) / lines

        def line_cost(li: int, a: int, b: int, target: float = target) -> float:
            """Cost of line ``li`` (1-based) holding tokens[a:b] (``inf`` when it does not fit)."""
            if (li == 1 and b - a < min_first) or width(a, b) > limit(li - 1):
                return float("inf")
            return 10.0 * abs(width(a, b) - target) / max_width + (penalty(b) if b < n else 0.0)

        inf = float("inf")
        cost = [[inf] * (n + 1) for _ in range(lines + 1)]
        back = [[0] * (n + 1) for _ in range(lines + 1)]
        cost[0][0] = 0.0
        for li in range(1, lines + 1):
            for b in range(1, n + 1):
                for a in range(b - 1, -1, -1):
                    if li == 1 and b - a < min_first:
                        continue
                    if width(a, b) > limit(li - 1):
                        break
                    if cost[li - 1][a] == inf:
                        continue
                    c = cost[li - 1][a] + line_cost(li, a, b)
                    if c < cost[li][b]:
                        cost[li][b], back[li][b] = c, a
        if cost[lines][n] < inf:
            bounds, b = [n], n
            for li in range(lines, 0, -1):
                b = back[li][b]
                bounds.append(b)
            bounds.reverse()
            found: tuple[float, Sequence[int]] = (cost[lines][n], bounds)
            if not good(bounds) and comb(n - 1, lines - 1) <= MAX_COMBINATIONS:
                goods = []
                for cuts in combinations(range(1, n), lines - 1):
                    tried = (0, *cuts, n)
                    total = sum(line_cost(li, a, b) for li, (a, b) in enumerate(zip(tried, tried[1:]), 1))
                    if total < inf and good(tried):
                        goods.append((total, tried))
                found = min(goods, default=found)
            return result(found[1], found[0])
    return None
