#!/usr/bin/env python3
"""The same chain of Burgers steps (NX = 256, 2,000 steps of the demo's kernel) under different
graph shapes, in one process: µs per step, median of --reps launches after a warm-up. Shows
what a step costs inside a child graph or a conditional node's body against a flat graph and
against batches launched from the host (what C++'s graph loop does).

    python3 bench/graph_shapes.py --backend cuda
    python3 bench/graph_shapes.py --placements   # host batches with the two rows at other addresses
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "demos" / "burger"))

import burger  # noqa: E402

STEPS = 2000
BATCH = 200


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default=None)
    p.add_argument("--reps", type=int, default=15)
    p.add_argument(
        "--placements",
        action="store_true",
        help="only batches of 200 from the host, the rows at offsets 0 B to 8 MiB into an allocation of their own",
    )
    args = p.parse_args()
    import pygpu
    import pygpu.graphs

    if args.backend:
        pygpu.set_backend(args.backend)
    solver = burger.Solver(burger.Problem(), 0)
    c1, c2 = (np.float64(c) for c in solver.problem.coefficients())
    n = np.int32(solver.n_total)
    shape = {"block": solver.block, "grid": solver.grid}

    def steps(graph: Any, count: int, after: list[Any], rows: tuple[Any, Any] = (solver.a, solver.b)) -> list[Any]:
        src = rows[0]
        for _ in range(count):
            dst = rows[1] if src is rows[0] else rows[0]
            after = [graph.add_kernel_node(solver.kernel, src, dst, n, c1, c2, dependencies=after, **shape)]
            src = dst
        return after

    def chain(count: int, rows: tuple[Any, Any] = (solver.a, solver.b)) -> Any:
        g = pygpu.Graph()
        steps(g, count, [], rows)
        return g

    stream = solver.stream

    def launches(graph: Any, times: int) -> Callable[[], None]:
        exec_ = graph.instantiate()

        def run() -> None:
            for _ in range(times):
                exec_.launch(stream)

        return run

    def children(count: int) -> Any:
        g = pygpu.Graph()
        after: list[Any] = []
        for _ in range(count):
            after = [g.add_child_graph_node(chain(STEPS // count), dependencies=after)]
        return g

    def repeated(turn: int) -> Any:
        g = pygpu.Graph()
        pygpu.graphs.repeat(g, chain(turn), STEPS // turn)
        return g

    variants: list[tuple[str, Callable[[], Callable[[], None]]]] = [
        *((f"batches of {b} from the host", lambda b=b: launches(chain(b), STEPS // b)) for b in (50, 100, 200)),
        (f"one flat graph of {STEPS}", lambda: launches(chain(STEPS), 1)),
        (f"one child graph of {STEPS}", lambda: launches(children(1), 1)),
        (f"{STEPS // BATCH} child graphs of {BATCH} in a chain", lambda: launches(children(STEPS // BATCH), 1)),
        *((f"repeat, turns of {t}", lambda t=t: launches(repeated(t), 1)) for t in (50, 100, 200, 400, 1000)),
    ]
    if args.placements:
        # Two allocations, the rows at the same offset into each (as C++'s BURGERS_ROW_OFFSET).
        span = 8 << 20
        arenas = (pygpu.mem_alloc(span + solver.row_bytes), pygpu.mem_alloc(span + solver.row_bytes))
        variants = []
        for offset in (0, 256, 4096, 65536, 1 << 20, 3 << 20, 5 << 20, span):
            rows = (int(arenas[0]) + offset, int(arenas[1]) + offset)
            for row in rows:
                pygpu.memcpy_dtod(row, int(solver.a), solver.row_bytes)
            label = f"batches of {BATCH}, rows at +{offset} B"
            variants.append((label, lambda rows=rows: launches(chain(BATCH, rows), STEPS // BATCH)))
    for label, make in variants:
        run = make()
        run()
        pygpu.cudaStreamSynchronize(stream)
        times = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            run()
            pygpu.cudaStreamSynchronize(stream)
            times.append((time.perf_counter() - t0) / STEPS * 1e6)
        print(f"{label:36}: {statistics.median(times):7.3f} us/step (min {min(times):.3f})", flush=True)


if __name__ == "__main__":
    main()
