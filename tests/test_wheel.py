"""The wheel that ``make dist`` builds, installed into a fresh virtual environment and run from there (issue 53).

What it proves: ``make dist`` builds an sdist and, from that sdist, a wheel, offline; the wheel carries every module
of the package (the same ``.py`` files as this clone's ``whisper_subtitler/``, so a subpackage that setuptools does
not find is caught), its data file (``doctor_schema.json``) and the ``whisper-subtitler`` console script; installed
with pip into a virtual environment of its own, that script runs ``--version`` and ``doctor --json`` with the package
imported from that environment, not from this clone, and the report validates against the schema the wheel
installed.

What it does not prove: that pip finds and installs the declared dependencies on a fresh machine. To stay fast and
offline the wheel is installed with ``--no-deps --no-index``, and the dependencies already installed for this test
run are made visible to the fresh environment by a ``.pth`` file that lists this interpreter's site-packages
directories after the fresh environment's own (so the installed wheel is found first). Nor does it try the extras
(``[diarize]``, ``[serve]`` ...) or ``pipx``. It costs about 17 s of CPU time (sdist, wheel, install, ``--version``,
``doctor``): well under a minute on 2 cores, unless other work shares them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "whisper_subtitler"
TIMEOUT_S = 300


def _run(args: list[str | Path], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, f"{args} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def _fresh_env() -> dict[str, str]:
    """The environment of a user's shell: no PYTHONPATH or PYTHONHOME that could lead to this clone."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("make") is None, reason="make dist needs make")
def test_the_wheel_installs_and_runs_in_a_fresh_environment(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    from whisper_subtitler.version import __version__

    dist = tmp_path / "dist"
    _run(["make", "--no-print-directory", "dist", f"VENV={sys.prefix}", f"DIST={dist}"], cwd=ROOT)
    sdists, wheels = sorted(dist.glob("*.tar.gz")), sorted(dist.glob("*.whl"))
    assert len(sdists) == 1 and len(wheels) == 1, sorted(p.name for p in dist.iterdir())
    assert wheels[0].name.startswith(f"whisper_subtitler-{__version__}-py3-none-any")

    with zipfile.ZipFile(wheels[0]) as wheel:
        names = set(wheel.namelist())
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        scripts = wheel.read(entry_points).decode()
    here = {p.relative_to(ROOT).as_posix() for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    assert here - names == set(), "modules of the package missing from the wheel"
    assert "whisper_subtitler/doctor_schema.json" in names
    assert "whisper-subtitler = whisper_subtitler.cli:main" in scripts

    fresh = tmp_path / "fresh"
    venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(fresh)
    bin_dir = fresh / ("Scripts" if os.name == "nt" else "bin")
    python = bin_dir / ("python.exe" if os.name == "nt" else "python")
    env = _fresh_env()
    # pip from this environment installs into the fresh one (pip >= 22.3): the wheel alone, nothing from an index.
    _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "--no-cache-dir",
          "--disable-pip-version-check", wheels[0]], cwd=tmp_path, env=env)  # fmt: skip
    purelib = _run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], tmp_path, env).stdout
    deps = [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages") and Path(p).is_dir()]
    assert deps, sys.path
    (Path(purelib.strip()) / "_test_dependencies.pth").write_text("".join(f"{p}\n" for p in deps))

    where = _run(
        [python, "-c", "import whisper_subtitler.doctor as d; print(d.__file__); print(d.SCHEMA_PATH)"], tmp_path, env
    ).stdout.split()
    assert Path(where[0]).resolve().is_relative_to(fresh.resolve()), where  # the wheel's package, not this clone's

    script = bin_dir / ("whisper-subtitler.exe" if os.name == "nt" else "whisper-subtitler")
    version = _run([script, "--version"], tmp_path, env).stdout
    assert f"whisper-subtitler {__version__}" in version
    report = json.loads(_run([script, "doctor", "--json"], tmp_path, env).stdout)
    jsonschema.validate(report, json.loads(Path(where[1]).read_text(encoding="utf-8")))
    assert report["whisper_subtitler_version"] == __version__ and report["exit_code"] == 0
