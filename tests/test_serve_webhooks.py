"""``serve.webhooks``: the file a Sonarr, Radarr or plain webhook names, path maps and the library check (pure logic,
no server)."""

from __future__ import annotations

import pytest

from whisper_subtitler.serve.upload import RequestError
from whisper_subtitler.serve.webhooks import inside_library, mapped, parse_hook, parse_path_map


def test_sonarr_import_prefers_the_file_path_then_joins_the_series_folder():
    payload = {
        "eventType": "Download",
        "series": {"path": "/tv/Show"},
        "episodeFile": {"relativePath": "Season 01/Show - S01E01.mkv", "path": "/tv/Show/Season 01/Show - S01E01.mkv"},
        "episodeFiles": [{"relativePath": "Season 01/Show - S01E02.mkv"}],
    }
    hook = parse_hook(payload)
    assert (hook.source, hook.event) == ("sonarr", "Download")
    assert hook.paths == ("/tv/Show/Season 01/Show - S01E01.mkv", "/tv/Show/Season 01/Show - S01E02.mkv")


def test_radarr_import_and_other_events():
    hook = parse_hook(
        {"eventType": "Download", "movie": {"folderPath": "/movies/F"}, "movieFile": {"relativePath": "F.mkv"}}
    )
    assert (hook.source, hook.paths) == ("radarr", ("/movies/F/F.mkv",))
    assert parse_hook({"eventType": "Test", "movie": {"folderPath": "/movies/F"}}).paths == ()
    assert parse_hook({"eventType": "Grab", "series": {"path": "/tv/S"}}).paths == ()
    assert parse_hook({"path": "/media/a.mkv"}).paths == ("/media/a.mkv",)


@pytest.mark.parametrize(
    "payload",
    [[], {"eventType": "Download", "series": {"path": "/tv"}}, {"eventType": "Download", "movie": {}}, {"path": ""}],
)
def test_payloads_naming_no_file_are_refused(payload):
    with pytest.raises(RequestError) as error:
        parse_hook(payload)
    assert error.value.status == 422


def test_path_maps_replace_whole_leading_parts():
    maps = [parse_path_map("/tv/=/media/tv"), parse_path_map("/=/root")]
    assert mapped("/tv/Show/e1.mkv", maps) == "/media/tv/Show/e1.mkv"
    assert mapped("/tvshows/e1.mkv", maps[:1]) == "/tvshows/e1.mkv"
    assert mapped("/x/y.mkv", maps) == "/root/x/y.mkv"
    for bad in ("tv=/media", "/tv", "/tv=media"):
        with pytest.raises(ValueError):
            parse_path_map(bad)


def test_inside_library_follows_links_and_dots(tmp_path):
    library, outside = tmp_path / "lib", tmp_path / "secret"
    library.mkdir()
    outside.mkdir()
    (library / "a.mkv").write_bytes(b"x")
    (outside / "b.mkv").write_bytes(b"x")
    (library / "link").symlink_to(outside)
    assert inside_library(str(library / "a.mkv"), [library]) == (library / "a.mkv").resolve()
    for path, status in [
        (library / ".." / "secret" / "b.mkv", 403),
        (library / "link" / "b.mkv", 403),
        ("relative.mkv", 403),
        (library / "missing.mkv", 404),
    ]:
        with pytest.raises(RequestError) as error:
            inside_library(str(path), [library])
        assert error.value.status == status, path
    with pytest.raises(RequestError) as error:
        inside_library(str(library / "a.mkv"), [])
    assert error.value.status == 403
