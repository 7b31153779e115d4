"""The package's version: a bottom-layer module, so that every layer can report it. The one place it is written:
``pyproject.toml`` reads it from here (``[tool.setuptools.dynamic]``), and no start-up pays for reading the installed
metadata (``importlib.metadata``: about 70 ms)."""

__version__ = "0.1.0"
