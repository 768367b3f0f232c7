#!/usr/bin/env python3
"""The Burgers demo's --device-loop (the seeds' run, NX = 256, 2,001 steps, no snapshots) with
turns of different lengths, against the graph-batch loop, in one process: µs per step, median of
--reps runs after a warm-up. Shows what a turn of the device-side loop costs (a conditional node's
latch and countdown kernels) against a graph launch from the host.

    python3 bench/device_loop_turns.py --backend cuda
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "demos" / "burger"))

import burger  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default=None)
    p.add_argument("--reps", type=int, default=9)
    args = p.parse_args()
    import pygpu

    if args.backend:
        pygpu.set_backend(args.backend)
    default_turn = burger.DEVICE_LOOP_TURN
    for label, turn in [
        ("graph batches of 200", None),
        *((f"device loop, turns of {t}", t) for t in (200, 500, 1000, 2000)),
    ]:
        if turn is not None:
            burger.DEVICE_LOOP_TURN = turn
        solver = burger.Solver(burger.Problem(), 0, graph=turn is None, device_loop=turn is not None)
        solver.run()
        times = []
        for _ in range(args.reps):
            solver.run()
            times.append(solver.loop_seconds / solver.steps * 1e6)
        print(f"{label:28}: {statistics.median(times):7.3f} us/step  u[10] = {solver.final()[10]:.7f}", flush=True)
    burger.DEVICE_LOOP_TURN = default_turn


if __name__ == "__main__":
    main()
