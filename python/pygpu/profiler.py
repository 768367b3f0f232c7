"""``pygpu.profile()``: where the time goes, per kernel, copy and fill.

While the ``with`` block runs, the backend records every kernel launch, copy, fill, device
allocation and synchronisation it performs (start and end, stream, grid and block, bytes), and
``pygpu.nvtx.range`` marks named ranges on the same clock. Afterwards the profile gives a
per-kernel table, a trace file for Perfetto or ``chrome://tracing``, and a timeline plot::

    >>> import numpy as np
    >>> import pygpu
    >>> import pygpu.gpuarray as gpuarray
    >>> with pygpu.profile() as p:
    ...     a = gpuarray.to_gpu(np.arange(1000, dtype=np.float32))
    ...     b = (2 * a + 1).get()
    >>> kinds = {activity.kind for activity in p.activities}
    >>> {"kernel", "memcpy_htod", "memcpy_dtoh"} <= kinds
    True
    >>> print(p.table())  # doctest: +SKIP

The host backend records itself (its kernels run on the CPU, so the times are the kernels'
own). On CUDA the device's times come from CUPTI's activity API, loaded when a recording starts
from, first found: ``$PYGPU_CUPTI`` (a file), the pip wheels ``nvidia-cuda-cupti`` (CUDA 13:
``nvidia/cu13/lib/libcupti.so.13``; ``pip install pygpu[cupti]``) and ``nvidia-cuda-cupti-cu12``
on ``sys.path``, the toolkit (``$CUDA_PATH``, ``$CUDA_HOME``, ``/usr/local/cuda``), then the
system's library path. HIP raises until roctracer's records are built in:
``pygpu.capabilities().activity_records`` says which backends record. Outside a recording the
launch path pays one atomic load.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from pygpu import _pygpu

__all__: list[str] = ["Activity", "Profile", "SummaryRow", "find_cupti", "profile"]

#: The kinds of device work: the table's share of time is of these.
DEVICE_WORK = ("kernel", "memcpy_htod", "memcpy_dtoh", "memcpy_dtod", "memset")
#: Every kind of activity.
KINDS = (*DEVICE_WORK, "alloc", "free", "synchronize", "range")


class Activity(NamedTuple):
    """One recorded activity. Times are nanoseconds on one clock shared by the process."""

    #: 'kernel', 'memcpy_htod', 'memcpy_dtoh', 'memcpy_dtod', 'memset', 'alloc', 'free',
    #: 'synchronize' or 'range' (a ``pygpu.nvtx.range``).
    kind: str
    #: The kernel's or range's name; empty for the other kinds.
    name: str
    start_ns: int
    end_ns: int
    #: The stream's handle (0: the default stream); for ranges, the thread's native id.
    stream: int
    #: Bytes copied, set, allocated or freed; 0 where not known (kernels).
    bytes: int
    #: The launch's grid and block (kernels; zeros for the other kinds).
    grid: tuple[int, int, int]
    block: tuple[int, int, int]

    @property
    def duration_ns(self) -> int:
        """How long the activity took, in nanoseconds."""
        return self.end_ns - self.start_ns

    @property
    def label(self) -> str:
        """The kernel's or range's name, else the kind."""
        return self.name or self.kind

    @property
    def gb_per_s(self) -> float | None:
        """Bytes moved per nanosecond (GB/s), where the bytes are known and time passed."""
        if self.bytes == 0 or self.duration_ns <= 0 or self.kind not in DEVICE_WORK:
            return None
        return self.bytes / self.duration_ns


@dataclass(frozen=True)
class SummaryRow:
    """One line of ``Profile.summary()``: every activity of one kind and name together."""

    kind: str
    name: str
    calls: int
    total_ns: int
    min_ns: int
    max_ns: int
    #: Share of the device work's time (kernels, copies and fills); None for other kinds.
    share: float | None
    #: Bytes over time for all calls together (GB/s), where bytes are known.
    gb_per_s: float | None

    @property
    def mean_ns(self) -> float:
        """Mean time per call, in nanoseconds."""
        return self.total_ns / self.calls


class Profile:
    """A recording of the backend's activity: ``with pygpu.profile() as p:``, then read
    ``p.activities`` or call ``p.table()``, ``p.export_chrome_trace(path)`` or ``p.plot()``."""

    def __init__(self) -> None:
        #: What was recorded, in the order the activities started (empty until the block ends).
        self.activities: list[Activity] = []
        #: Activities not kept past the recorder's bound (1,048,576 per recording).
        self.dropped = 0
        self._token: int | None = None

    def __enter__(self) -> Profile:
        self._token = _pygpu.activity_start(find_cupti())
        return self

    def __exit__(self, *exc: object) -> None:
        if self._token is None:
            raise RuntimeError("this Profile's recording is not running: use it as `with pygpu.profile() as p:`")
        token, self._token = self._token, None
        records, self.dropped = _pygpu.activity_stop(token)
        self.activities = sorted((Activity(*record) for record in records), key=lambda a: (a.start_ns, a.end_ns))

    def kernels(self) -> list[Activity]:
        """The kernel launches, in the order they started."""
        return [a for a in self.activities if a.kind == "kernel"]

    def summary(self, kinds: Iterable[str] | None = None) -> list[SummaryRow]:
        """One row per kind and name (each kernel by name; copies and fills by kind), the
        longest total first. ``kinds`` (one kind or several, of ``KINDS``) limits the rows to
        those kinds (default: every kind but ranges and synchronisations)."""
        if isinstance(kinds, str):
            kinds = [kinds]
        wanted = set(kinds) if kinds is not None else set(DEVICE_WORK) | {"alloc", "free"}
        if not wanted <= set(KINDS):
            unknown = ", ".join(sorted(map(repr, wanted - set(KINDS))))
            raise ValueError(f"no activity kind {unknown}; the kinds are {', '.join(KINDS)}")
        groups: dict[tuple[str, str], list[Activity]] = {}
        for a in self.activities:
            if a.kind in wanted:
                groups.setdefault((a.kind, a.name), []).append(a)
        work = sum(a.duration_ns for a in self.activities if a.kind in DEVICE_WORK)
        rows = []
        for (kind, name), members in groups.items():
            durations = [a.duration_ns for a in members]
            total = sum(durations)
            moved = sum(a.bytes for a in members)
            rows.append(
                SummaryRow(
                    kind=kind,
                    name=name or kind,
                    calls=len(members),
                    total_ns=total,
                    min_ns=min(durations),
                    max_ns=max(durations),
                    share=(total / work if work else 0.0) if kind in DEVICE_WORK else None,
                    gb_per_s=moved / total if moved and total > 0 and kind in DEVICE_WORK else None,
                )
            )
        return sorted(rows, key=lambda r: (-r.total_ns, r.kind, r.name))

    def table(self, kinds: Iterable[str] | None = None, limit: int | None = None) -> str:
        """``summary()`` as text: per kernel (and per kind of copy, fill and allocation) the
        calls, total, mean, min and max time, the share of the device work's time and GB/s
        where bytes are known; ``limit`` keeps that many rows."""
        rows = self.summary(kinds)[:limit]
        header = ("name", "kind", "calls", "total", "mean", "min", "max", "share", "GB/s")
        lines = [header] + [
            (
                row.name,
                row.kind,
                str(row.calls),
                _time(row.total_ns),
                _time(row.mean_ns),
                _time(row.min_ns),
                _time(row.max_ns),
                "" if row.share is None else f"{100 * row.share:.1f} %",
                "" if row.gb_per_s is None else f"{row.gb_per_s:.2f}",
            )
            for row in rows
        ]
        widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
        text = [
            "  ".join(cell.ljust(w) if i < 2 else cell.rjust(w) for i, (cell, w) in enumerate(zip(line, widths)))
            for line in lines
        ]
        text.insert(1, "  ".join("-" * w for w in widths))
        if self.dropped:
            text.append(f"({self.dropped} activities past the recorder's bound were not kept)")
        return "\n".join(line.rstrip() for line in text)

    def chrome_trace(self) -> dict[str, Any]:
        """The recording in the Trace Event Format (what Perfetto and ``chrome://tracing``
        load): one row per stream, one per thread that marked ranges; times in µs."""
        pid = os.getpid()
        events: list[dict[str, Any]] = []
        rows: dict[tuple[bool, int], int] = {}
        for a in self.activities:
            key = (a.kind == "range", a.stream)
            if key not in rows:  # numbered in order of appearance: trace viewers want small ids
                rows[key] = len(rows) + 1
            tid = rows[key]
            args: dict[str, Any] = {}
            if a.bytes:
                args["bytes"] = a.bytes
            if a.gb_per_s is not None:
                args["GB/s"] = round(a.gb_per_s, 3)
            if a.kind == "kernel":
                args["grid"] = list(a.grid)
                args["block"] = list(a.block)
            events.append(
                {
                    "name": a.label,
                    "cat": a.kind,
                    "ph": "X",
                    "ts": a.start_ns / 1e3,
                    "dur": a.duration_ns / 1e3,
                    "pid": pid,
                    "tid": tid,
                    "args": args,
                }
            )
        for (is_range, stream), tid in rows.items():
            name = f"ranges, {_row_name(is_range, stream)}" if is_range else _row_name(is_range, stream)
            events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}})
        events.append(
            {"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": f"pygpu ({_pygpu.backend()})"}}
        )
        return {"traceEvents": events, "displayTimeUnit": "ns"}

    def export_chrome_trace(self, path: str | os.PathLike[str]) -> None:
        """Writes ``chrome_trace()`` as JSON to ``path`` (open it in https://ui.perfetto.dev
        or ``chrome://tracing``)."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.chrome_trace(), f)

    def plot(self, ax: Any = None) -> Any:
        """A timeline, one row per stream (and per thread that marked ranges), each activity a
        bar coloured by kind; draws on matplotlib's ``ax`` if given, else on a new figure.
        Returns the figure (needs matplotlib)."""
        try:
            from matplotlib.figure import Figure
        except ImportError as e:  # pragma: no cover - matplotlib is in the demo's and the tests' tools
            raise ImportError("Profile.plot() draws with matplotlib: pip install matplotlib") from e
        if ax is None:
            ax = Figure(figsize=(10, 3)).add_subplot()
        t0 = min((a.start_ns for a in self.activities), default=0)
        rows = sorted({(a.kind == "range", a.stream) for a in self.activities})
        colours = {kind: f"C{i}" for i, kind in enumerate(KINDS)}
        for y, (is_range, stream) in enumerate(rows):
            for kind in colours:
                spans = [
                    ((a.start_ns - t0) / 1e3, max(a.duration_ns / 1e3, 0.01))
                    for a in self.activities
                    if a.stream == stream and (a.kind == "range") == is_range and a.kind == kind
                ]
                if spans:
                    ax.broken_barh(spans, (y - 0.4, 0.8), color=colours[kind], label=kind, linewidth=0)
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([_row_name(is_range, s) for is_range, s in rows])
        ax.set_xlabel("µs from the first activity")
        handles, labels = ax.get_legend_handles_labels()
        unique = dict(zip(labels, handles))
        if unique:
            ax.legend(unique.values(), unique.keys(), loc="upper right", fontsize="small")
        return ax.figure


def profile() -> Profile:
    """A recording of the backend's activity for a ``with`` block (see the module's text);
    raises where the backend does not record or a recording already runs."""
    return Profile()


_CUPTI_WHEELS = (
    os.path.join("nvidia", "cu13", "lib", "libcupti.so.13"),
    os.path.join("nvidia", "cuda_cupti", "lib", "libcupti.so.12"),
)
_CUPTI_IN_TOOLKIT = (
    os.path.join("extras", "CUPTI", "lib64"),
    "lib64",
    os.path.join("targets", "x86_64-linux", "lib"),
    os.path.join("targets", "sbsa-linux", "lib"),
)


def find_cupti() -> str:
    """The CUPTI library ``pygpu.profile()`` loads on the cuda backend (other backends ignore
    it): a path, or a bare name for the dynamic loader to search (see the module's text for
    the order). Only files are looked at; nothing is loaded here."""
    env = os.environ.get("PYGPU_CUPTI")
    if env:
        return env
    for entry in sys.path:
        for rel in _CUPTI_WHEELS:
            path = os.path.join(entry or ".", rel)
            if os.path.isfile(path):
                return path
    for root in (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if not root:
            continue
        for sub in _CUPTI_IN_TOOLKIT:
            for name in ("libcupti.so.13", "libcupti.so.12", "libcupti.so"):
                path = os.path.join(root, sub, name)
                if os.path.isfile(path):
                    return path
    return "libcupti.so"


def _time(ns: float) -> str:
    """A duration for the table: ns, us, ms or s with three significant digits (ASCII, so that
    the table prints on any terminal)."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def _row_name(is_range: bool, row: int) -> str:
    """A timeline row's name: ranges by the thread that opened them, work by its stream's handle
    (in hex, as debuggers and CUDA's tools show handles; 0 is the default stream)."""
    if is_range:
        return f"thread {row}"
    return "default stream" if row == 0 else f"stream 0x{row:x}"
