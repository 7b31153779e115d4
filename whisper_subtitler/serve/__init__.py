"""``whisper-subtitler serve``: subtitles over HTTP, on the API of whisper-asr-webservice (what Bazarr's Whisper
provider and other media-server tools call), built on the Python API (``whisper_subtitler.api``).

- ``jobs``: the queue; each worker is a ``Subtitler`` with its own loaded models and runs one job at a time.
- ``upload``: the multipart upload streamed to a temporary file, its size checked on the way.
- ``app``: the FastAPI application: ``POST /asr``, ``POST /detect-language``, ``GET /health``, errors as JSON.
- ``server``: uvicorn, with the signal handling of a service (SIGTERM: finish, refuse new work, exit 0).

FastAPI, uvicorn and python-multipart are the optional extra ``whisper-subtitler[serve]``; nothing here imports
them at package import. docs/serve.md describes the endpoints.
"""
