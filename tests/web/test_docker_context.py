"""The Dockerfile's build context holds what the image builds from.

No Docker engine runs here. This copies the files ``docker build`` would send (the tree
minus ``.dockerignore``, tracked files only) to a temporary folder, checks every path the
Dockerfile copies from is there, and builds the engine's C extensions from that copy
as the image's ``pip install`` would, then imports them.
"""

import fnmatch
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def ignored(path: str, patterns: list[str]) -> bool:
    """``.dockerignore`` semantics for the patterns this project uses (no ``!``)."""
    parts = path.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    for pattern in patterns:
        for prefix in prefixes:
            if fnmatch.fnmatchcase(prefix, pattern):
                return True
            if pattern.startswith("**/") and fnmatch.fnmatchcase(prefix.split("/")[-1], pattern[3:]):
                return True
    return False


def context_files() -> list[str]:
    patterns = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    assert not any(p.startswith("!") for p in patterns), "ignored() does not handle exceptions"
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    return [f for f in tracked if not ignored(f, patterns)]


def test_the_build_context_has_what_the_dockerfile_copies_and_the_engine_builds(tmp_path):
    files = context_files()
    assert "pyproject.toml" in files and "setup.py" in files
    assert not any(f.startswith(("frontend/node_modules/", "var/")) for f in files)
    dockerfile = (ROOT / "Dockerfile").read_text()
    for source in re.findall(r"^COPY (?!--from)(.+) \S+$", dockerfile, re.M):
        for item in source.split():
            if item != ".":
                assert item in files or any(f.startswith(item.rstrip("/") + "/") for f in files), item

    ctx = tmp_path / "context"
    for f in files:
        (ctx / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, ctx / f)
    build = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=ctx,
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-3000:]
    check = subprocess.run([sys.executable, "-c", "import simulation._cscheduler, simulation._cstepgraph"],
                           cwd=ctx, capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stderr[-3000:]
