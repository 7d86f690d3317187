"""The cache of trained artefacts: a value, or a folder of files, keyed by a hash of
its configuration and of the code that builds it (``$ICLR25_CACHE``, else
``~/.cache/iclr25``).

The code's part of the key is :func:`fingerprint`: an edited training function misses
the cache and is trained again, so no page shows numbers from code that no longer
exists. Beside each artefact a small ``.json`` file names the chapters that used it,
for ``python -m iclr25 cache list`` and ``cache clear SLUG`` (:func:`artefacts`)."""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import inspect
import io
import json
import os
import pickle
import shutil
import sys
import tempfile
import time
import types
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# ---------------------------------------------------------------------------------
# Cache of trained artefacts
# ---------------------------------------------------------------------------------


def cache_dir() -> Path:
    """``$ICLR25_CACHE``, else ``~/.cache/iclr25``."""
    return Path(os.environ.get("ICLR25_CACHE", Path.home() / ".cache" / "iclr25"))


def cache_path(name: str, config: Mapping[str, Any], code: str = "") -> Path:
    """Where the artefact ``name`` built from ``config`` (JSON-serialisable) by the code
    whose :func:`fingerprint` is ``code`` is kept."""
    key = hashlib.sha256(json.dumps([name, config, code], sort_keys=True).encode()).hexdigest()
    return cache_dir() / f"{name}-{key[:16]}.pt"


# ---------------------------------------------------------------------------------
# The code's part of the key
# ---------------------------------------------------------------------------------

PACKAGE = "iclr25"


@functools.cache
def _installed() -> tuple[str, ...]:
    """The folders of the standard library and of installed packages, whose modules
    never count in a fingerprint: a library's code changes with its version, which the
    lock file pins."""
    import sysconfig

    paths = sysconfig.get_paths()
    return tuple(
        {str(Path(paths[k]).resolve()) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    )


def fingerprint(build: Callable[..., Any]) -> str:
    """A digest of the code that builds an artefact: the module in which ``build`` is
    defined, and the modules of this package's functions and classes that ``build``
    names directly (``_train``, ``core.train``, ``brainood.fit``; one level deep) or
    holds in its closure, a table of editors included (``{"ROME": partial(rome, ...)}``),
    this book's modules or any other of the reader's own, never a library's.
    Each module counts by its syntax tree without docstrings, so a changed line of
    code changes the digest, and a comment, a docstring or a reformatting does not.
    A function defined in a notebook, which has no module file, counts by its own
    source."""
    while isinstance(build, functools.partial):
        build = build.func
    build = inspect.unwrap(build)
    parts = sorted({_module_digest(m) for m in _modules_named(build)})
    if not parts:  # defined in a notebook's kernel (``__main__``)
        parts = [_source_digest(build)]
    return hashlib.sha256("".join(parts).encode()).hexdigest()[:16]


def _modules_named(build: Callable[..., Any]) -> set[types.ModuleType]:
    """The module of ``build``, and those of the functions and classes that its code
    names (read from its bytecode, nested functions included), where they are the
    reader's own code (:func:`_ours`)."""
    modules: set[types.ModuleType] = set()

    def add(obj: object) -> None:
        name = getattr(obj, "__module__", None)
        module = sys.modules.get(name) if isinstance(name, str) else None
        if module is not None and module is not sys.modules[__name__] and _ours(module):
            modules.add(module)  # the cache's own code builds nothing

    add(build)
    code = getattr(build, "__code__", None)
    scope = getattr(build, "__globals__", {})
    names: set[str] = set()
    stack = [code] if code is not None else []
    while stack:
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    free = dict(zip(code.co_freevars, build.__closure__ or ())) if code is not None else {}
    values = [scope[n] for n in names if n in scope]
    values += [cell.cell_contents for cell in free.values() if _filled(cell)]
    for value in _held(values):
        if isinstance(value, types.ModuleType) and _ours(value):
            for n in names:  # ``core.train``: the attribute's module
                add(getattr(value, n, None))
        elif isinstance(value, types.FunctionType | type):
            add(value)
    return modules


def _held(values: list[object]) -> Iterator[object]:
    """``values``, with the callables that they hold one level in: the values of a
    dict, list or tuple (a table of editors), a partial's function, a bound method's
    function."""
    for value in values:
        items = list(value.values()) if isinstance(value, dict) else value
        for item in items if isinstance(items, list | tuple) else [value]:
            while isinstance(item, functools.partial):
                item = item.func
            yield getattr(item, "__func__", item)


def _ours(module: types.ModuleType) -> bool:
    """A module of this book (``lib/iclr25``, installed editable) or another file of
    the reader's own; not the standard library's or an installed package's."""
    file = getattr(module, "__file__", None)
    return bool(file) and not str(Path(file).resolve()).startswith(_installed())


def _filled(cell: types.CellType) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # a closure's variable not yet assigned
        return False
    return True


def _module_digest(module: types.ModuleType) -> str:
    path = Path(module.__file__)
    stat = path.stat()
    return _file_digest(str(path), stat.st_mtime_ns, stat.st_size)


@functools.cache
def _file_digest(path: str, mtime_ns: int, size: int) -> str:
    """The digest of a module file's code (:func:`_code_digest`); cached while the file
    is unchanged, since a chapter asks for many artefacts."""
    return _code_digest(Path(path).read_text())


def _source_digest(build: Callable[..., Any]) -> str:
    try:
        return _code_digest(inspect.getsource(build))
    except (OSError, TypeError):  # no source anywhere: the bytecode itself
        code = getattr(build, "__code__", None)
        return hashlib.sha256(code.co_code if code else repr(build).encode()).hexdigest()


def _code_digest(source: str) -> str:
    """SHA-256 of ``source``'s syntax tree with its docstrings dropped (comments,
    blank lines and formatting never reach the tree); of the text itself where it
    does not parse alone (a lambda cut out of a longer statement)."""
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return hashlib.sha256(source.encode()).hexdigest()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and _is_docstring(body[0]):
            node.body = body[1:] or [ast.Pass()]
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()


def _is_docstring(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


# ---------------------------------------------------------------------------------
# Who used what: for ``cache list`` and ``cache clear``
# ---------------------------------------------------------------------------------

CHAPTER = "ICLR25_CHAPTER"
"""Environment variable: the chapter a kernel runs (set by the book's build and by
``iclr25.run``), recorded beside each artefact it loads or builds."""


def _chapter() -> str | None:
    """The chapter asking for an artefact: :data:`CHAPTER`, else the first chapter
    package on the call stack (a test calling a chapter's code)."""
    if os.environ.get(CHAPTER):
        return os.environ[CHAPTER]
    frame = sys._getframe(1)
    while frame is not None:
        parts = str(frame.f_globals.get("__name__", "")).split(".")
        if parts[:2] == [PACKAGE, "chapters"] and len(parts) > 2:
            return parts[2]
        frame = frame.f_back
    return None


def _note_use(path: Path, name: str) -> None:
    """Add the asking chapter to the artefact's side file (under the artefact's lock)."""
    side = path.with_suffix(".json")
    try:
        known = json.loads(side.read_text())
    except (OSError, ValueError):
        known = {"name": name, "chapters": []}
    chapter = _chapter()
    if side.is_file() and (chapter is None or chapter in known["chapters"]):
        return
    if chapter is not None:
        known["chapters"] = sorted({*known["chapters"], chapter})
    tmp = side.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(known))
    os.replace(tmp, side)


@dataclass(frozen=True)
class Artefact:
    """One entry of the cache: its ``name``, the ``chapters`` that used it, its
    ``path`` (a file, or a folder of files), ``size`` in bytes and ``modified`` time."""

    name: str
    chapters: tuple[str, ...]
    path: Path
    size: int
    modified: float

    def remove(self) -> None:
        if self.path.is_dir():
            shutil.rmtree(self.path)
        else:
            self.path.unlink(missing_ok=True)
        self.path.with_suffix(".json").unlink(missing_ok=True)


def artefacts() -> list[Artefact]:
    """Every artefact in the cache, by name. One kept by an older version of this
    module, with no side file, has its name read off its file name and no chapters."""
    found = []
    root = cache_dir()
    for path in sorted(root.iterdir()) if root.is_dir() else []:
        if path.suffix not in (".pt", "") or path.name.endswith(".tmp"):
            continue
        try:
            side = json.loads(path.with_suffix(".json").read_text())
        except (OSError, ValueError):
            side = {"name": path.stem.rsplit("-", 1)[0], "chapters": []}
        files = [f for f in path.rglob("*") if f.is_file()] if path.is_dir() else [path]
        found.append(
            Artefact(
                side["name"],
                tuple(side["chapters"]),
                path,
                sum(f.stat().st_size for f in files),
                path.stat().st_mtime,
            )
        )
    return sorted(found, key=lambda a: (a.name, a.modified))


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

    The key holds ``config`` and the :func:`fingerprint` of ``build``'s code. The
    file holds the SHA-256 of its payload, then the payload (``torch.save`` of
    ``{"config", "value"}``). A file whose digest or config does not match --
    truncated, corrupt or a hash collision -- is rebuilt, never trusted. Loads use
    ``weights_only=True``, so a value must be tensors in plain containers (dicts, lists,
    numbers, strings; a model's ``state_dict()``); anything else is refused before it
    is written. Writes are atomic (temporary file, then rename). Processes that want
    the same artefact at once build it once (:func:`_building`).
    """
    path = cache_path(name, config, fingerprint(build))
    config = json.loads(json.dumps(config))  # as it reads back
    with _building(path):
        value = _load_or_build(name, path, config, build)
        _note_use(path, name)
        return value


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
    path = cache_path(name, config, fingerprint(build)).with_suffix("")
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
                _note_use(path, name)
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
        _note_use(path, name)
        return path
