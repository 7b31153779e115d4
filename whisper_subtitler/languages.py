"""Language codes at the edges of the pipeline: Whisper speaks ISO 639-1 (``en``, plus a few older codes such as
``jw`` and ``iw``), media containers tag streams with ISO 639-2 (``eng``; Matroska and MP4 use the bibliographic
form, ``ger`` and ``fre``, and ffmpeg also reads the terminological ``deu``, ``fra``).

The mapping between them is langcodes' (IANA language subtag registry, ISO 639-1/-2/-3 data); names come from
openai-whisper's own language table, so a track title says what ``--language`` accepts.
"""

from __future__ import annotations

from functools import lru_cache

UNDEFINED = "und"  # ISO 639-2 "undetermined": ffmpeg's tag for a stream without a language


@lru_cache(maxsize=256)
def normalize(code: str) -> str | None:
    """The ISO 639-1 code (or 639-3 when there is none) of an ISO 639-1 or 639-2 (B or T) code or a language tag,
    e.g. ``"ger"``, ``"deu"``, ``"de"`` and ``"de-AT"`` -> ``"de"``; ``None`` for an empty, undetermined or invalid
    code. Case-insensitive."""
    import langcodes

    text = (code or "").strip().replace("_", "-")
    if not text or text.lower() == UNDEFINED or not langcodes.tag_is_valid(text):
        return None
    try:
        language = langcodes.Language.get(text).language
    except (ValueError, LookupError):
        return None
    return language or None


def iso639_2b(code: str) -> str:
    """The ISO 639-2/B code containers use for ``code`` (``"de"`` -> ``"ger"``, ``"en"`` -> ``"eng"``), or
    ``"und"`` when ``code`` is empty or unknown."""
    import langcodes

    language = normalize(code)
    if language is None:
        return UNDEFINED
    try:
        return langcodes.Language.get(language).to_alpha3(variant="B")
    except LookupError:
        return UNDEFINED


def same_language(a: str | None, b: str | None) -> bool:
    """Whether two codes (any of the forms ``normalize`` reads) name the same language; never for unknown ones."""
    x, y = normalize(a or ""), normalize(b or "")
    return x is not None and x == y


def language_name(code: str) -> str:
    """An English name for ``code`` (``"de"`` -> ``"German"``), from openai-whisper's table; the code itself when
    the table does not have it."""
    from whisper.tokenizer import LANGUAGES

    language = normalize(code)
    for candidate in (code, language):
        if candidate and candidate.lower() in LANGUAGES:
            return LANGUAGES[candidate.lower()].title()
    aliases = {"jv": "jw", "he": "iw"}  # Whisper keeps the older codes of Javanese and Hebrew
    if language in aliases:
        return LANGUAGES[aliases[language]].title()
    return code or "Unknown"
