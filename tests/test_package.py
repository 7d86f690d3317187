"""The package others can install: its wheel declares everything iclr25 imports."""

import ast
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from importlib import metadata

import pytest
from packaging.requirements import Requirement

from iclr25 import toc

LIB = toc.ROOT / "lib"


def third_party_imports() -> set[str]:
    """Top-level names of the third-party modules that lib/iclr25 imports."""
    found = set()
    for path in (LIB / "iclr25").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module.split(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m != "iclr25"}


@pytest.fixture(scope="module")
def wheel_metadata(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    source = out / "lib"  # a copy: setuptools writes build/ and egg-info beside the source
    shutil.copytree(
        LIB, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--quiet", "--wheel-dir", str(out), str(source)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    (wheel,) = out.glob("iclr25-*.whl")
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        files = z.namelist()
        return Parser().parsestr(z.read(name).decode()), files


def test_the_wheel_declares_every_third_party_package_iclr25_imports(wheel_metadata):
    meta, _ = wheel_metadata
    declared = {
        Requirement(r).name.lower().replace("_", "-") for r in meta.get_all("Requires-Dist")
    }
    providers = metadata.packages_distributions()
    missing = {}
    for module in sorted(third_party_imports()):
        dists = {d.lower().replace("_", "-") for d in providers.get(module, [module])}
        if not dists & declared:
            missing[module] = sorted(dists)
    assert not missing, f"imported but not declared in lib/pyproject.toml: {missing}"


def test_every_declared_range_admits_the_pinned_version(wheel_metadata):
    meta, _ = wheel_metadata
    for line in meta.get_all("Requires-Dist"):
        req = Requirement(line.split(";")[0])
        installed = metadata.version(req.name)
        assert req.specifier.contains(installed, prereleases=True), (
            f"{req} does not admit the pinned {req.name} {installed}"
        )
    extras = set(meta.get_all("Provides-Extra"))
    assert {"book", "dev", "lab", "llm-backend"} <= extras


def test_the_wheel_ships_the_chapters_and_their_data(wheel_metadata):
    _, files = wheel_metadata
    for chapter in toc.ALL:
        assert f"iclr25/chapters/{chapter.slug}/__init__.py" in files, chapter.slug
    assert any(f.endswith(".csv") and "/mcqa/" in f for f in files), "mcqa's Memory Colors"
