"""Graphs beyond stream capture: loops that run on the device, and step graphs whose scalar
parameters change between launches.

``pygpu.Graph()`` builds a graph node by node (``add_kernel_node``, ``add_memcpy_node``,
``add_memset_node``, event, child-graph, empty, ``add_while_node`` and ``add_if_node``), and
``GraphExec.set_*_node_params`` updates an instance's nodes; this module adds two helpers on top:

- ``repeat(graph, body, count)``: ``body`` run ``count`` times in one node, counted on the device
  (a while node whose flag a countdown kernel writes), so a time loop is one graph launch.
- ``StepGraph``: a graph whose kernel nodes take named scalar parameters (``dt``, a step
  counter...), given new values at each ``launch(stream, dt=...)`` without building or
  instantiating again.

Example (host backend)::

    >>> import numpy as np, pygpu, pygpu.graphs
    >>> import pygpu.gpuarray as gpuarray
    >>> add = pygpu.load_kernels("testing").get_function("add_scalar_f64")
    >>> x = gpuarray.zeros(256, np.float64)
    >>> body = pygpu.Graph()
    >>> _ = body.add_kernel_node(add, x, x.size, 0.5, block=(128, 1, 1), grid=(2, 1))
    >>> loop = pygpu.Graph()
    >>> _ = pygpu.graphs.repeat(loop, body, 10)
    >>> loop.instantiate().launch()
    >>> float(x.get()[0])
    5.0
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Any

import numpy as np

from pygpu import _pygpu
from pygpu._toolchain.bundled_kernels import load_kernels

__all__ = ["Parameter", "StepGraph", "repeat"]


def repeat(
    graph: _pygpu.Graph,
    body: _pygpu.Graph,
    count: int,
    dependencies: Iterable[_pygpu.GraphNode] | None = None,
    *,
    turn_copies: Iterable[tuple[Any, Any, int]] = (),
) -> _pygpu.GraphNode:
    """Adds to ``graph`` a node that runs a copy of ``body`` ``count`` times (0: never), counted
    on the device: every launch of the graph starts the count again. Returns the loop's node
    (the last of the three it adds: the counter's reset, the while node after it).

    ``turn_copies``: ``(dst, src, nbytes)`` triples; after each turn ``k`` (0, 1, ...) the loop
    copies ``nbytes`` from ``src`` to ``dst + k * nbytes``, e.g. the rows a turn staged into row
    block ``k`` of a snapshot matrix. ``dst`` must hold ``count * nbytes`` bytes and ``src``
    ``nbytes`` (checked where they are DeviceAllocations or GPUArrays; an int address is trusted,
    as everywhere in graphs)."""
    for name, value in (("graph", graph), ("body", body)):
        if not isinstance(value, _pygpu.Graph):
            raise TypeError(f"repeat's {name} must be a pygpu.Graph, not {type(value).__name__}")
    count = operator.index(count)  # a float count is a TypeError, not a truncated loop
    if not 0 <= count < 2**31:
        raise ValueError(f"count must be 0 to 2**31 - 1 turns, not {count}")
    copies = [_turn_copy(copy, count) for copy in turn_copies]
    kernels = load_kernels("graph_loops")
    # (turns left, flag) on the device, reset from `start` at each launch of the graph.
    start = _pygpu.mem_alloc(8)
    _pygpu.memcpy_htod(start, np.array([count, int(count > 0)], np.int32))
    state = _pygpu.mem_alloc(8)
    reset = graph.add_memcpy_node(state, start, 8, dependencies=dependencies)
    turn = _pygpu.Graph()
    after = [turn.add_child_graph_node(body)]
    for dst, src, nbytes in copies:
        blocks = max(1, min(1024, -(-nbytes // (16 * 256))))
        after.append(
            turn.add_kernel_node(
                kernels.get_function("graph_copy_turn"),
                state,
                np.int32(count),
                src,
                dst,
                np.uint64(nbytes),
                block=(256, 1, 1),
                grid=(blocks, 1),
                dependencies=after[:1],
            )
        )
    turn.add_kernel_node(kernels.get_function("graph_countdown"), state, block=(1, 1, 1), dependencies=after)
    return graph.add_while_node(turn, int(state) + 4, dependencies=[reset])


def _turn_copy(copy: Any, count: int) -> tuple[Any, Any, int]:
    """A ``turn_copies`` triple, checked: (dst, src, nbytes), int addresses as numpy.uintp."""
    try:
        dst, src, nbytes = copy
    except (TypeError, ValueError):
        raise TypeError(
            f"turn_copies takes (dst, src, nbytes) triples, not {type(copy).__name__} {copy!r:.60}"
        ) from None
    nbytes = operator.index(nbytes)
    if nbytes <= 0:
        raise ValueError(f"a turn copy's nbytes must be positive, not {nbytes}")
    dst = _copy_end("dst", dst, count * nbytes, f" ({count} turns of {nbytes})")
    return dst, _copy_end("src", src, nbytes, ""), nbytes


def _copy_end(what: str, where: Any, needed: int, why: str) -> Any:
    """``where`` as a turn copy's kernel takes it, checked to hold ``needed`` bytes where its
    size is known; an int address (trusted) as numpy.uintp."""
    held = _bytes_at(where)
    if held is None:
        try:
            return np.uintp(operator.index(where))
        except TypeError:
            raise TypeError(
                f"a turn copy's {what} must be a DeviceAllocation, a contiguous GPUArray or an int address, "
                f"not {type(where).__name__}"
            ) from None
    if held < needed:
        raise ValueError(f"a turn copy's {what} holds {held} bytes; {needed} are needed{why}")
    return where


def _bytes_at(where: Any) -> int | None:
    """The bytes from ``where``'s address to the end of its memory: a DeviceAllocation's size, a
    contiguous GPUArray's nbytes (a non-contiguous one is a ValueError); None for anything else."""
    if isinstance(where, _pygpu.DeviceAllocation):
        return int(where.nbytes)
    if hasattr(where, "gpudata"):
        if not (where.flags.c_contiguous or where.flags.f_contiguous):
            raise ValueError("a turn copy's GPUArray must be contiguous (it is copied as one span of bytes)")
        return int(where.nbytes)
    return None


class Parameter:
    """A named scalar of a ``StepGraph``: pass it where a kernel node takes the value; each
    ``StepGraph.launch(name=value)`` gives the nodes that take it the new value."""

    __slots__ = {"name": "The parameter's name, as given to StepGraph."}

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Parameter({self.name!r})"


class StepGraph:
    """A graph of one step (or several) whose kernel nodes take named scalar parameters.

    ``StepGraph(dt=np.float64(1e-3), step=np.int32(0))`` declares the parameters and their first
    values (numpy scalars of the kernels' types, or Python numbers where the kernels' declarations
    are known); ``add_kernel_node(func, u, v, sg.dt, ...)`` takes ``sg.<name>`` where a value
    goes; ``launch(stream, dt=...)`` updates the nodes whose parameters changed (no new
    instance) and launches. Other nodes go through ``graph`` (a ``pygpu.Graph``).
    """

    def __init__(self, **parameters: Any) -> None:
        self.graph = _pygpu.Graph()
        self._values = dict(parameters)
        # The kernel nodes that take parameters: (node, the parameters' names, func and args,
        # keyword arguments as given, dependencies left out: an update does not take them).
        self._nodes: list[tuple[_pygpu.GraphNode, frozenset[str], tuple[Any, ...], dict[str, Any]]] = []
        self._exec: _pygpu.GraphExec | None = None

    def __getattr__(self, name: str) -> Parameter:
        values = self.__dict__.get("_values", {})
        if name in values:
            return Parameter(name)
        raise AttributeError(f"this StepGraph has no parameter {name!r} (it has: {', '.join(values) or 'none'})")

    @property
    def values(self) -> dict[str, Any]:
        """The parameters' current values (those of the last launch)."""
        return dict(self._values)

    def _resolve(self, value: Any) -> Any:
        return self._values[value.name] if isinstance(value, Parameter) else value

    def add_kernel_node(self, func: _pygpu.Function, *args: Any, **kwargs: Any) -> _pygpu.GraphNode:
        """``Graph.add_kernel_node`` with ``Parameter`` objects (``sg.<name>``) allowed among the
        arguments; call before the first ``launch``."""
        if self._exec is not None:
            raise RuntimeError("this StepGraph was launched already: add nodes before the first launch")
        node = self.graph.add_kernel_node(
            func, *(self._resolve(a) for a in args), **{k: self._resolve(v) for k, v in kwargs.items()}
        )
        names = frozenset(p.name for p in (*args, *kwargs.values()) if isinstance(p, Parameter))
        if names:
            update_kwargs = {k: v for k, v in kwargs.items() if k != "dependencies"}
            self._nodes.append((node, names, (func, *args), update_kwargs))
        return node

    def launch(self, stream: _pygpu.cudaStream_t | None = None, **changes: Any) -> None:
        """Launches the graph on ``stream`` after giving the parameters in ``changes`` their new
        values (the nodes that take them are updated in place)."""
        unknown = set(changes) - set(self._values)
        if unknown:
            known = ", ".join(self._values) or "none"
            raise TypeError(f"unknown parameter(s) {', '.join(sorted(unknown))}: this StepGraph has {known}")
        changed = {k for k, v in changes.items() if v is not self._values[k]}
        self._values.update(changes)
        if self._exec is None:
            self._exec = self.graph.instantiate()
        elif changed:
            for node, names, (func, *args), kwargs in self._nodes:
                if names & changed:
                    plain = {k: self._resolve(v) for k, v in kwargs.items()}
                    self._exec.set_kernel_node_params(node, func, *(self._resolve(a) for a in args), **plain)
        self._exec.launch(stream)
