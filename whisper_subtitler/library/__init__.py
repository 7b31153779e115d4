"""A media library that subtitles itself: the durable queue (``queue``), finding complete media files (``scan``),
skipping what is already subtitled (``skip``), resuming long files (``checkpoints``) and the ``watch`` loop
(``watch``)."""
