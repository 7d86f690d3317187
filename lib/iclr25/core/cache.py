"""The cache of trained artefacts: a value, or a folder of files, keyed by a hash of
its configuration (``$ICLR25_CACHE``, else ``~/.cache/iclr25``)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import pickle
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # torch is imported lazily: `python -m iclr25 list` should be quick
    pass


# ---------------------------------------------------------------------------------
# Cache of trained artefacts
# ---------------------------------------------------------------------------------


def cache_dir() -> Path:
    """``$ICLR25_CACHE``, else ``~/.cache/iclr25``."""
    return Path(os.environ.get("ICLR25_CACHE", Path.home() / ".cache" / "iclr25"))


def cache_path(name: str, config: Mapping[str, Any]) -> Path:
    """Where the artefact ``name`` built from ``config`` (JSON-serialisable) is kept."""
    key = hashlib.sha256(json.dumps([name, config], sort_keys=True).encode()).hexdigest()
    return cache_dir() / f"{name}-{key[:16]}.pt"


CACHE_LOG = "ICLR25_CACHE_LOG"
"""Environment variable: a file to which :func:`cached` and :func:`cached_dir` append
one line per artefact, ``hit<TAB><name>``, or ``built<TAB><name><TAB><cpu_s>`` with the
CPU seconds its own build took, less those of the artefacts built inside it, which have
lines of their own (tabs, since a name may hold spaces: ``dlgn-tree-ReLU MLP``);
the book's build sets it to report which of each chapter's artefacts came from the
cache, and where a cold chapter's time went."""


_INNER_CPU_S: list[float] = []
"""For each build under way, innermost last: the CPU seconds of the artefacts built
inside it so far."""


def _timed_build(name: str, build: Callable[[], Any]) -> Any:
    """``build()``, logged as built with its own CPU seconds (the inner builds' excluded)."""
    began = time.process_time()
    _INNER_CPU_S.append(0.0)
    try:
        value = build()
    finally:
        inner = _INNER_CPU_S.pop()
    spent = time.process_time() - began
    if _INNER_CPU_S:
        _INNER_CPU_S[-1] += spent
    _log_cache("built", name, spent - inner)
    return value


@contextlib.contextmanager
def _building(path: Path):
    """Hold an exclusive lock on the artefact at ``path`` for as long as the block runs,
    so that processes wanting the same artefact at once (two chapters of a parallel
    build, or the tests beside it) build it once: the second waits, then finds it. The
    lock file lives outside the cache (in the temporary folder, named by a hash of
    ``path``), so the cache holds artefacts only; where ``fcntl`` is missing (Windows)
    nothing is locked and each process builds its own copy, as before."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    folder = Path(tempfile.gettempdir()) / "iclr25-locks"
    folder.mkdir(exist_ok=True)
    name = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:32]
    with open(folder / f"{name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _log_cache(event: str, name: str, cpu_s: float | None = None) -> None:
    log = os.environ.get(CACHE_LOG)
    if log:
        with open(log, "a") as f:
            f.write("\t".join([event, name, *([f"{cpu_s:.1f}"] if cpu_s is not None else [])]))
            f.write("\n")


def _unsafe_leaf(value: Any, where: str = "value") -> tuple[str, Any]:
    """The first part of ``value`` that is neither a tensor, a plain number, string or
    None, nor a dict, list or tuple of those, with its path (``value['state'][2]``); the
    value itself if none is found (a safe load refused it for another reason)."""
    import torch

    if isinstance(value, dict):
        parts = [(f"{where}[{k!r}]", v) for k, v in value.items()]
    elif isinstance(value, list | tuple):
        parts = [(f"{where}[{i}]", v) for i, v in enumerate(value)]
    elif value is None or isinstance(value, torch.Tensor | bool | int | float | str):
        return "", None
    else:
        return where, value
    for part, v in parts:
        found, leaf = _unsafe_leaf(v, part)
        if found:
            return found, leaf
    return ("", None) if where != "value" else (where, value)


def cached(name: str, config: Mapping[str, Any], build: Callable[[], Any]) -> Any:
    """Load the artefact for ``config``, or ``build()`` it and store it.

    The file holds the SHA-256 of its payload, then the payload (``torch.save`` of
    ``{"config", "value"}``). A file whose digest or config does not match --
    truncated, corrupt or a hash collision -- is rebuilt, never trusted. Loads use
    ``weights_only=True``, so a value must be tensors in plain containers (dicts, lists,
    numbers, strings; a model's ``state_dict()``); anything else is refused before it
    is written. Writes are atomic (temporary file, then rename). Processes that want
    the same artefact at once build it once (:func:`_building`).
    """
    path = cache_path(name, config)
    config = json.loads(json.dumps(config))  # as it reads back
    with _building(path):
        return _load_or_build(name, path, config, build)


def _load_or_build(name: str, path: Path, config: Any, build: Callable[[], Any]) -> Any:
    """:func:`cached`'s work, under its lock."""
    import torch

    if path.is_file():
        blob = path.read_bytes()
        digest, payload = blob[:32], blob[32:]
        if hashlib.sha256(payload).digest() == digest:
            stored = torch.load(io.BytesIO(payload), weights_only=True)
            if stored.get("config") == config:
                _log_cache("hit", name)
                return stored["value"]
        warnings.warn(f"cache file {path} is corrupt or stale; rebuilding it", stacklevel=3)
    value = _timed_build(name, build)
    buffer = io.BytesIO()
    torch.save({"config": config, "value": value}, buffer)
    payload = buffer.getvalue()
    try:
        torch.load(io.BytesIO(payload), weights_only=True)
    except pickle.UnpicklingError as err:
        where, leaf = _unsafe_leaf(value)
        raise TypeError(
            f"cached({name!r}) can only keep tensors in plain containers, "
            f"not {type(leaf).__name__} (at {where})"
        ) from err
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(hashlib.sha256(payload).digest() + payload)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return value


def cached_dir(name: str, config: Mapping[str, Any], build: Callable[[Path], None]) -> Path:
    """The directory of files ``build(folder)`` writes for ``config``, built once and kept.

    For artefacts that a library saves as files (a model's ``save_pretrained``), where
    :func:`cached`'s single ``torch.save`` does not fit. ``build`` fills a fresh temporary
    folder; a ``MANIFEST.json`` recording ``config`` and the SHA-256 of every file is
    written last, and the folder is renamed into place (atomic). A directory whose
    manifest, config or any file's digest does not match is rebuilt, never trusted.
    Processes that want the same folder at once build it once (:func:`_building`).
    """
    import shutil

    path = cache_path(name, config).with_suffix("")
    config = json.loads(json.dumps(config))  # as it reads back

    def digests(folder: Path) -> dict[str, str]:
        found = {}
        for f in sorted(folder.rglob("*")):
            if f.is_file() and f.name != "MANIFEST.json":
                with f.open("rb") as handle:
                    found[str(f.relative_to(folder))] = hashlib.file_digest(
                        handle, "sha256"
                    ).hexdigest()
        return found

    def intact(folder: Path) -> bool:
        try:
            manifest = json.loads((folder / "MANIFEST.json").read_text())
        except (OSError, ValueError):
            return False
        return manifest.get("config") == config and manifest.get("files") == digests(folder)

    with _building(path):
        if path.is_dir():
            if intact(path):
                _log_cache("hit", name)
                return path
            warnings.warn(
                f"cache directory {path} is corrupt or stale; rebuilding it", stacklevel=2
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=path.name, suffix=".tmp"))
        try:
            _timed_build(name, lambda: build(tmp))
            (tmp / "MANIFEST.json").write_text(
                json.dumps({"config": config, "files": digests(tmp)})
            )
            if path.is_dir():
                shutil.rmtree(path)
            os.replace(tmp, path)
        except OSError:
            if not intact(path):  # another process may have put an intact copy in place first
                raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return path
