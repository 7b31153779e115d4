"""Language codes at the edges of the pipeline: Whisper speaks ISO 639-1 (``en``, plus a few older codes such as
``jw`` and ``iw``), media containers tag streams with ISO 639-2 (``eng``; Matroska and MP4 use the bibliographic
form, ``ger`` and ``fre``, and ffmpeg also reads the terminological ``deu``, ``fra``).

The mapping between them is langcodes' (IANA language subtag registry, ISO 639-1/-2/-3 data); names come from
openai-whisper's own language table, so a track title says what ``--language`` accepts. That table is copied
here (``WHISPER_LANGUAGES``), so that checking ``--language`` imports neither openai-whisper nor torch.
"""

from __future__ import annotations

from functools import lru_cache

UNDEFINED = "und"  # ISO 639-2 "undetermined": ffmpeg's tag for a stream without a language

# openai-whisper's language table (whisper/tokenizer.py, LANGUAGES: ISO 639-1 code -> English name, in its order),
# copied so that checking --language needs no torch; tests/test_startup.py compares it with the installed one.
WHISPER_LANGUAGES: dict[str, str] = {
    "en": "english",
    "zh": "chinese",
    "de": "german",
    "es": "spanish",
    "ru": "russian",
    "ko": "korean",
    "fr": "french",
    "ja": "japanese",
    "pt": "portuguese",
    "tr": "turkish",
    "pl": "polish",
    "ca": "catalan",
    "nl": "dutch",
    "ar": "arabic",
    "sv": "swedish",
    "it": "italian",
    "id": "indonesian",
    "hi": "hindi",
    "fi": "finnish",
    "vi": "vietnamese",
    "he": "hebrew",
    "uk": "ukrainian",
    "el": "greek",
    "ms": "malay",
    "cs": "czech",
    "ro": "romanian",
    "da": "danish",
    "hu": "hungarian",
    "ta": "tamil",
    "no": "norwegian",
    "th": "thai",
    "ur": "urdu",
    "hr": "croatian",
    "bg": "bulgarian",
    "lt": "lithuanian",
    "la": "latin",
    "mi": "maori",
    "ml": "malayalam",
    "cy": "welsh",
    "sk": "slovak",
    "te": "telugu",
    "fa": "persian",
    "lv": "latvian",
    "bn": "bengali",
    "sr": "serbian",
    "az": "azerbaijani",
    "sl": "slovenian",
    "kn": "kannada",
    "et": "estonian",
    "mk": "macedonian",
    "br": "breton",
    "eu": "basque",
    "is": "icelandic",
    "hy": "armenian",
    "ne": "nepali",
    "mn": "mongolian",
    "bs": "bosnian",
    "kk": "kazakh",
    "sq": "albanian",
    "sw": "swahili",
    "gl": "galician",
    "mr": "marathi",
    "pa": "punjabi",
    "si": "sinhala",
    "km": "khmer",
    "sn": "shona",
    "yo": "yoruba",
    "so": "somali",
    "af": "afrikaans",
    "oc": "occitan",
    "ka": "georgian",
    "be": "belarusian",
    "tg": "tajik",
    "sd": "sindhi",
    "gu": "gujarati",
    "am": "amharic",
    "yi": "yiddish",
    "lo": "lao",
    "uz": "uzbek",
    "fo": "faroese",
    "ht": "haitian creole",
    "ps": "pashto",
    "tk": "turkmen",
    "nn": "nynorsk",
    "mt": "maltese",
    "sa": "sanskrit",
    "lb": "luxembourgish",
    "my": "myanmar",
    "bo": "tibetan",
    "tl": "tagalog",
    "mg": "malagasy",
    "as": "assamese",
    "tt": "tatar",
    "haw": "hawaiian",
    "ln": "lingala",
    "ha": "hausa",
    "ba": "bashkir",
    "jw": "javanese",
    "su": "sundanese",
    "yue": "cantonese",
}
# Its other English names (whisper/tokenizer.py, TO_LANGUAGE_CODE beyond LANGUAGES' names).
WHISPER_ALIASES: dict[str, str] = {
    "burmese": "my",
    "valencian": "ca",
    "flemish": "nl",
    "haitian": "ht",
    "letzeburgesch": "lb",
    "pushto": "ps",
    "panjabi": "pa",
    "moldavian": "ro",
    "moldovan": "ro",
    "sinhalese": "si",
    "castilian": "es",
    "mandarin": "zh",
}


def whisper_code(value: str) -> str | None:
    """The code of Whisper's table for ``value``, one of its codes or English names in any case (``"de"``,
    ``"German"``, ``"castilian"`` -> ``"es"``); ``None`` when the table has no such language."""
    v = value.lower()
    if v in WHISPER_LANGUAGES:
        return v
    return WHISPER_ALIASES.get(v) or next((code for code, name in WHISPER_LANGUAGES.items() if name == v), None)


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
    language = normalize(code)
    for candidate in (code, language):
        if candidate and candidate.lower() in WHISPER_LANGUAGES:
            return WHISPER_LANGUAGES[candidate.lower()].title()
    aliases = {"jv": "jw", "he": "iw"}  # Whisper keeps the older codes of Javanese and Hebrew
    if language in aliases:
        return WHISPER_LANGUAGES[aliases[language]].title()
    return code or "Unknown"
