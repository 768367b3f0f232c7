"""The disk cache of compiled kernels (``pygpu.compiler``), and its in-process memo.

An entry is one file ``<root>/v1/<key>.bin``: a magic, the BLAKE2b-256 of the payload,
the payload (the binary). It is written to a temporary file in the same folder and renamed
into place, so a reader sees a whole entry or none; an entry whose checksum does not
match is deleted and recompiled. After each write the folder is trimmed, oldest first
(by modification time, refreshed by a hit when older than a minute), to
``PYGPU_CACHE_MAX_BYTES`` (256 MiB).

The key is a BLAKE2b-256 over everything that changes the binary; the caller provides the
parts (source, options, compiler identity, target, header digests): see
``pygpu.compiler``. Headers are found by ``resolve_includes`` here.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import sys
import time
from pathlib import Path

from pygpu.errors import CacheUnwritableError, ComputedIncludeError

__all__ = [
    "DEFAULT_MAX_BYTES",
    "cache_root",
    "load",
    "make_key",
    "resolve_includes",
    "store",
]

DEFAULT_MAX_BYTES = 256 * 1024 * 1024
_FORMAT = "pygpu-kernel-cache-v2"
_MAGIC = b"PYGPUKC2"
_DIGEST_BYTES = 32
_SUFFIX = ".bin"


def cache_root(cache_dir: str | os.PathLike[str] | None) -> Path:
    """The cache folder: ``cache_dir``, else ``$PYGPU_CACHE_DIR``, else the user cache folder."""
    if cache_dir is not None:
        return Path(cache_dir)
    env = os.environ.get("PYGPU_CACHE_DIR")
    if env:
        return Path(env)
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "pygpu"
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local")) / "pygpu" / "Cache"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pygpu"


def _hash(data: bytes = b"") -> hashlib.blake2b:
    # BLAKE2b, not SHA-256: Python's own, so its first use in a process does not pay for
    # initialising OpenSSL (tens of microseconds of a new process's cache hit).
    return hashlib.blake2b(data, digest_size=_DIGEST_BYTES)


def make_key(parts: list[str | bytes]) -> str:
    """The BLAKE2b-256 (hex) of the parts, each length-prefixed so no two lists collide."""
    h = _hash(_FORMAT.encode())
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def _entry(root: Path, key: str) -> Path:
    return root / "v1" / f"{key}{_SUFFIX}"


# A hit refreshes an entry's modification time (eviction goes oldest first) only when it is
# older than this: a hit then costs no write to the disk's metadata.
_REFRESH_AFTER_S = 60.0


def _read(path: str) -> tuple[bytes, float]:
    """The file's contents and modification time, in one open (os-level calls: a third of
    what ``open()`` costs, on the path of every new process's cache hit)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        chunks = [os.read(fd, st.st_size + 1)]
        while chunks[-1]:  # a short read: keep reading to the end
            chunks.append(os.read(fd, 1 << 20))
        return b"".join(chunks), st.st_mtime
    finally:
        os.close(fd)


def load(root: Path, key: str) -> bytes | None:
    """The binary cached under ``key``, or None (missing, or corrupt: then deleted)."""
    path = os.path.join(root, "v1", f"{key}{_SUFFIX}")
    try:
        data, mtime = _read(path)
    except OSError:
        return None
    header = len(_MAGIC) + _DIGEST_BYTES
    payload = data[header:]
    if data[: len(_MAGIC)] != _MAGIC or _hash(payload).digest() != data[len(_MAGIC) : header]:
        try:
            os.unlink(path)
        except OSError:
            pass
        return None
    if time.time() - mtime > _REFRESH_AFTER_S:
        try:
            os.utime(path)  # eviction removes the least recently used first
        except OSError:
            pass
    return payload


def store(root: Path, key: str, binary: bytes, max_bytes: int | None = None) -> None:
    """Writes the entry atomically, then trims the folder to ``max_bytes``."""
    import tempfile  # only a miss writes: a new process's cache hit does not import it

    folder = root / "v1"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=f".{key}.", suffix=".tmp", dir=folder)
    except OSError as e:
        raise CacheUnwritableError(
            f"cannot write the kernel cache folder {folder}: {e.strerror or e}; set PYGPU_CACHE_DIR "
            "(or pass cache_dir=...) to a writable folder, or pass cache_dir=False to compile without caching"
        ) from e
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(_MAGIC + _hash(binary).digest() + binary)
        os.replace(temp, _entry(root, key))
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    _trim(folder, _max_bytes() if max_bytes is None else max_bytes)


def _max_bytes() -> int:
    value = os.environ.get("PYGPU_CACHE_MAX_BYTES")
    if not value:
        return DEFAULT_MAX_BYTES
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"PYGPU_CACHE_MAX_BYTES must be a number of bytes, not {value!r}") from None


def _trim(folder: Path, max_bytes: int) -> None:
    entries = []
    total = 0
    with os.scandir(folder) as it:
        for e in it:
            if not e.name.endswith(_SUFFIX):
                continue
            try:
                st = e.stat()
            except OSError:
                continue  # removed meanwhile by another process
            entries.append((st.st_mtime_ns, st.st_size, e.path))
            total += st.st_size
    if total <= max_bytes:
        return
    for _mtime, size, path in sorted(entries):
        try:
            os.unlink(path)
        except OSError:
            continue
        total -= size
        if total <= max_bytes:
            return


_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.MULTILINE)
# `#include NAME`: the header is a macro's expansion, known only to the preprocessor.
_COMPUTED_INCLUDE = re.compile(rb"^[ \t]*#[ \t]*include[ \t]+([A-Za-z_][^\n]*)$", re.MULTILINE)


def resolve_includes(
    source: str, include_dirs: list[Path], opaque: dict[Path, str] | None = None
) -> list[tuple[str, Path, bytes]]:
    """Every header the source includes, directly or through other headers, that is found
    in ``include_dirs`` (or, for ``"..."``, next to the including header): (name, path,
    BLAKE2b-256 of its contents). Headers found nowhere are the compiler's own (its version
    is part of the key). Conditional inclusion is not evaluated: every ``#include`` line
    counts, which can only make the key stricter. A header found in a folder of ``opaque``
    (folder -> its identity: a toolkit's) is neither read nor followed: its digest covers the
    folder's identity and the file's size and modification time. An absolute name is
    taken as it is. Raises :class:`ComputedIncludeError` for a ``#include NAME`` (a macro):
    the caller then compiles without the cache."""
    found: list[tuple[str, Path, bytes]] = []
    seen: set[Path] = set()
    pending: list[tuple[bytes, Path | None]] = [(source.encode(errors="surrogateescape"), None)]
    while pending:
        text, here = pending.pop()
        computed = _COMPUTED_INCLUDE.search(text)
        if computed is not None:
            where = f" in {here}" if here is not None else ""
            raise ComputedIncludeError(
                f"`{computed.group(0).decode(errors='replace').strip()}`{where} includes a header named by a macro"
            )
        for m in _INCLUDE.finditer(text):
            quote, name = m.group(1), m.group(2).decode(errors="surrogateescape").strip()
            if os.path.isabs(name):
                candidates = [Path(os.path.dirname(name))]
                name = os.path.basename(name)
            else:
                candidates = ([here] if quote == b'"' and here is not None else []) + include_dirs
            for folder in candidates:
                # One stat per folder tried (os, not pathlib: this runs on every new process's cache hit).
                try:
                    st = os.stat(os.path.join(folder, name))
                except OSError:
                    continue
                if not stat.S_ISREG(st.st_mode):
                    continue
                path = folder / name
                if opaque and folder in opaque:
                    if path not in seen:
                        seen.add(path)
                        stamp = f"{opaque[folder]}|{name}|{st.st_size}|{st.st_mtime_ns}"
                        found.append((name, path, _hash(stamp.encode()).digest()))
                    break
                path = path.resolve()
                if path not in seen:
                    seen.add(path)
                    data = path.read_bytes()
                    found.append((name, path, _hash(data).digest()))
                    pending.append((data, path.parent))
                break
    return found
