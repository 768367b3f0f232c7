"""Graphs built node by node (issue 31): every node kind, dependencies, updates of an
instance's nodes, device-side loops (while/if nodes, pygpu.graphs.repeat), StepGraph's named
parameters, and the refusals that keep a graph from using what it must not. On every backend:
on the host the nodes run in the order they were added; on CUDA the driver's graph nodes (its
conditional nodes for while/if)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pygpu
import pygpu.graphs
from conftest import interrupt_python
from pygpu import gpuarray

BLOCK: dict[str, Any] = {"block": (128, 1, 1), "grid": (2, 1)}


@pytest.fixture(scope="module")
def testing() -> pygpu.Module:
    return pygpu.load_kernels("testing")


@pytest.fixture(scope="module")
def add(testing: pygpu.Module) -> pygpu.Function:
    return testing.get_function("add_scalar_f64")


@pytest.fixture(scope="module")
def fill(testing: pygpu.Module) -> pygpu.Function:
    return testing.get_function("fill_i32")


def test_kernel_nodes_run_in_dependency_order_at_each_launch(add: pygpu.Function, fill: pygpu.Function) -> None:
    x = gpuarray.zeros(256, np.float64)
    flags = gpuarray.zeros(4, np.int32)
    g = pygpu.Graph()
    first = g.add_kernel_node(add, x, x.size, 1.0, **BLOCK)
    second = g.add_kernel_node(add, x, x.size, 2.0, dependencies=[first], **BLOCK)
    join = g.add_empty_node(dependencies=[first, second])
    g.add_kernel_node(fill, flags, np.int32(4), np.int32(7), block=(4, 1, 1), dependencies=(join,))
    assert g.node_count == 4
    assert [n.kind for n in (first, join)] == ["kernel", "empty"]
    assert (x.get() == 0).all(), "building a graph runs nothing"
    runnable = g.instantiate()
    runnable.launch()
    runnable.launch(pygpu.cudaStream_t())
    pygpu.cudaDeviceSynchronize().check()
    assert (x.get() == 6.0).all()
    assert (flags.get() == 7).all()


def test_an_instance_does_not_change_with_later_nodes(add: pygpu.Function) -> None:
    x = gpuarray.zeros(256, np.float64)
    g = pygpu.Graph()
    g.add_kernel_node(add, x, x.size, 1.0, **BLOCK)
    early = g.instantiate()
    g.add_kernel_node(add, x, x.size, 100.0, **BLOCK)
    early.launch()
    assert (x.get() == 1.0).all()
    g.instantiate().launch()
    assert (x.get() == 102.0).all()


def test_kernel_node_update_changes_values_and_arrays(add: pygpu.Function) -> None:
    x = gpuarray.zeros(256, np.float64)
    y = gpuarray.zeros(256, np.float64)
    g = pygpu.Graph()
    node = g.add_kernel_node(add, x, x.size, 1.0, **BLOCK)
    runnable = g.instantiate()
    runnable.launch()
    runnable.set_kernel_node_params(node, add, x, x.size, 10.0)
    runnable.launch()
    assert (x.get() == 11.0).all()
    # Another array and a smaller grid: only y's first 128 values (grid-stride, one block).
    runnable.set_kernel_node_params(node, add, y, 128, 5.0, grid=(1, 1))
    runnable.launch()
    del y  # the instance keeps the array the node now uses
    assert (x.get() == 11.0).all()
    # The graph itself is unchanged: a new instance adds 1.0 to x.
    g.instantiate().launch()
    assert (x.get() == 12.0).all()


def test_kernel_node_update_refusals(add: pygpu.Function, fill: pygpu.Function) -> None:
    x = gpuarray.zeros(256, np.float64)
    g = pygpu.Graph()
    node = g.add_kernel_node(add, x, x.size, 1.0, **BLOCK)
    empty = g.add_empty_node()
    runnable = g.instantiate()
    with pytest.raises(ValueError, match="another kernel than fill_i32"):
        runnable.set_kernel_node_params(node, fill, gpuarray.zeros(1, np.int32), np.int32(1), np.int32(0))
    with pytest.raises(ValueError, match="empty node, not a kernel node"):
        runnable.set_kernel_node_params(empty, add, x, x.size, 1.0)
    other = pygpu.Graph()
    foreign = other.add_kernel_node(add, x, x.size, 1.0, **BLOCK)
    with pytest.raises(ValueError, match="belongs to another graph"):
        runnable.set_kernel_node_params(foreign, add, x, x.size, 1.0)
    with pytest.raises(ValueError, match="dependency is a node of another graph"):
        g.add_empty_node(dependencies=[foreign])
    with pytest.raises(ValueError, match="GraphNode objects"):
        g.add_empty_node(dependencies=[1])
    with pytest.raises(TypeError):
        runnable.set_kernel_node_params(node, add, x, x.size)  # a missing argument
    with pytest.raises(ValueError, match="In/Out/InOut"):
        g.add_kernel_node(add, pygpu.driver.InOut(np.zeros(256)), 256, 1.0, **BLOCK)
    runnable.launch()
    assert (x.get() == 1.0).all(), "no refused update changed the node"


def test_memcpy_and_memset_nodes_and_their_updates() -> None:
    src = gpuarray.to_gpu(np.arange(64, dtype=np.int32))
    dst = gpuarray.zeros(64, np.int32)
    g = pygpu.Graph()
    fill = g.add_memset_node(dst, 0x01020304, 64, element_size=4)
    copy = g.add_memcpy_node(dst, src, 32 * 4, dependencies=[fill])
    assert (fill.kind, copy.kind) == ("memset", "memcpy")
    runnable = g.instantiate()
    runnable.launch()
    expected = np.concatenate([np.arange(32), np.full(32, 0x01020304)]).astype(np.int32)
    assert (dst.get() == expected).all()
    runnable.set_memset_node_params(fill, dst, 0xFF, 64 * 4, element_size=1)
    runnable.set_memcpy_node_params(copy, dst[32:], src[:32])
    runnable.launch()
    assert (dst.get() == np.concatenate([np.full(32, -1), np.arange(32)]).astype(np.int32)).all()
    with pytest.raises(ValueError, match="do not fit"):
        g.add_memcpy_node(dst, src, 65 * 4)
    with pytest.raises(ValueError, match="do not fit"):
        g.add_memset_node(dst, 0, 65, element_size=4)
    with pytest.raises(ValueError, match="element_size must be 1, 2 or 4"):
        g.add_memset_node(dst, 0, 8, element_size=8)
    with pytest.raises((ValueError, OverflowError), match="value"):
        g.add_memset_node(dst, 256, 8, element_size=1)
    with pytest.raises(ValueError, match="memset node, not a memcpy node"):
        runnable.set_memcpy_node_params(fill, dst, src)


def test_event_nodes_record_and_wait(add: pygpu.Function) -> None:
    x = gpuarray.zeros(256, np.float64)
    start, end = pygpu.cudaEvent_t(), pygpu.cudaEvent_t()
    g = pygpu.Graph()
    began = g.add_event_record_node(start)
    work = g.add_kernel_node(add, x, x.size, 1.0, dependencies=[began], **BLOCK)
    g.add_event_record_node(end, dependencies=[work])
    waiter = pygpu.Graph()
    waited = waiter.add_event_wait_node(end)
    waiter.add_kernel_node(add, x, x.size, 1.0, dependencies=[waited], **BLOCK)
    stream = pygpu.cudaStream_t()
    g.instantiate().launch(stream)
    waiter.instantiate().launch(pygpu.cudaStream_t())
    pygpu.cudaDeviceSynchronize().check()
    ms, status = pygpu.cudaEventElapsedTime(start, end)
    status.check()
    assert ms >= 0.0
    assert (x.get() == 2.0).all()


def test_child_graph_node_is_a_copy(add: pygpu.Function) -> None:
    x = gpuarray.zeros(256, np.float64)
    child = pygpu.Graph()
    child.add_kernel_node(add, x, x.size, 1.0, **BLOCK)
    parent = pygpu.Graph()
    node = parent.add_child_graph_node(child)
    parent.add_child_graph_node(child, dependencies=[node])
    child.add_kernel_node(add, x, x.size, 1000.0, **BLOCK)  # after the copies: not in the parent
    parent.instantiate().launch()
    assert (x.get() == 2.0).all()


def test_while_node_runs_until_the_body_clears_its_flag(add: pygpu.Function, fill: pygpu.Function) -> None:
    x = gpuarray.zeros(256, np.float64)
    flag = gpuarray.to_gpu(np.array([1], np.int32))
    body = pygpu.Graph()
    step = body.add_kernel_node(add, x, x.size, 1.0, **BLOCK)
    body.add_kernel_node(fill, flag, np.int32(1), np.int32(0), block=(1, 1, 1), dependencies=[step])
    g = pygpu.Graph()
    assert g.add_while_node(body, flag).kind == "while"
    runnable = g.instantiate()
    runnable.launch()
    assert (x.get() == 1.0).all() and flag.get()[0] == 0
    runnable.launch()  # the flag is 0 now: the body does not run
    assert (x.get() == 1.0).all()


def test_if_node_runs_its_body_only_when_the_flag_is_set(add: pygpu.Function) -> None:
    x = gpuarray.zeros(256, np.float64)
    flag = gpuarray.zeros(1, np.int32)
    body = pygpu.Graph()
    body.add_kernel_node(add, x, x.size, 1.0, **BLOCK)
    g = pygpu.Graph()
    assert g.add_if_node(body, flag).kind == "if"
    runnable = g.instantiate()
    runnable.launch()
    assert (x.get() == 0.0).all()
    flag.fill(np.int32(5))
    runnable.launch()
    runnable.launch()
    assert (x.get() == 2.0).all()


def test_conditional_flag_must_be_an_int32_of_device_memory(add: pygpu.Function) -> None:
    body = pygpu.Graph()
    g = pygpu.Graph()
    with pytest.raises(ValueError, match="4 bytes of device memory aligned to 4"):
        g.add_while_node(body, gpuarray.zeros(2, np.int8))
    with pytest.raises(ValueError, match="aligned to 4"):
        g.add_if_node(body, int(gpuarray.zeros(4, np.int32).gpudata) + 2)


@pytest.mark.parametrize("count", [0, 1, 7])
def test_repeat_counts_on_the_device_at_every_launch(add: pygpu.Function, count: int) -> None:
    x = gpuarray.zeros(256, np.float64)
    body = pygpu.Graph()
    body.add_kernel_node(add, x, x.size, 1.0, **BLOCK)
    g = pygpu.Graph()
    loop = pygpu.graphs.repeat(g, body, count)
    g.add_kernel_node(add, x, x.size, 0.5, dependencies=[loop], **BLOCK)
    runnable = g.instantiate()
    runnable.launch()
    runnable.launch()
    assert (x.get() == 2 * (count + 0.5)).all()
    with pytest.raises(ValueError, match="count must be"):
        pygpu.graphs.repeat(g, body, -1)
    with pytest.raises(TypeError):
        pygpu.graphs.repeat(g, body, 2.5)
    with pytest.raises(TypeError, match="body must be a pygpu.Graph"):
        pygpu.graphs.repeat(g, add, 2)


def test_repeat_copies_each_turns_output_into_its_own_row(add: pygpu.Function) -> None:
    x = gpuarray.zeros(256, np.float64)
    rows = gpuarray.zeros((5, 256), np.float64)
    odd = pygpu.mem_alloc(5 * 3)  # 3-byte copies: the byte-wise path of the copy kernel
    body = pygpu.Graph()
    body.add_kernel_node(add, x, x.size, 1.0, **BLOCK)
    g = pygpu.Graph()
    pygpu.graphs.repeat(g, body, 5, turn_copies=[(rows, x, x.nbytes), (odd, int(x.ptr) + 5, 3)])
    runnable = g.instantiate()
    for launch in range(2):  # each launch counts its turns from 0 again
        x.fill(0)
        runnable.launch()
        assert (rows.get() == np.arange(1.0, 6.0)[:, None]).all()
    got = np.empty(15, np.uint8)
    pygpu.memcpy_dtoh(got, odd)
    want = np.concatenate([np.arange(1.0, 6.0)[k : k + 1].repeat(256).view(np.uint8)[5:8] for k in range(5)])
    assert (got == want).all()
    with pytest.raises(ValueError, match="dst holds 10240 bytes; 12288 are needed"):
        pygpu.graphs.repeat(g, body, 6, turn_copies=[(rows, x, x.nbytes)])
    with pytest.raises(ValueError, match="src holds 2048 bytes"):
        pygpu.graphs.repeat(g, body, 1, turn_copies=[(rows, x, 4096)])
    with pytest.raises(ValueError, match="must be contiguous"):
        pygpu.graphs.repeat(g, body, 5, turn_copies=[(rows[:, ::2], x, 8)])
    with pytest.raises(ValueError, match="must be positive"):
        pygpu.graphs.repeat(g, body, 5, turn_copies=[(rows, x, 0)])
    with pytest.raises(TypeError, match="triples"):
        pygpu.graphs.repeat(g, body, 5, turn_copies=[(rows, x)])
    with pytest.raises(TypeError, match="src must be a DeviceAllocation"):
        pygpu.graphs.repeat(g, body, 5, turn_copies=[(rows, "x", 8)])


def test_a_time_loop_whose_kernel_decides_when_to_stop() -> None:
    # The issue's `while t < T: step()`: the step kernel itself writes the loop's flag.
    source = """
    __global__ void advance(double* t, double dt, double t_final, int* more) {
        *t += dt;
        *more = *t < t_final;
    }
    """
    advance = pygpu.compiler.SourceModule(source).get_function("advance")
    t = gpuarray.zeros(1, np.float64)
    more = gpuarray.to_gpu(np.array([1], np.int32))
    body = pygpu.Graph()
    body.add_kernel_node(advance, t, 0.25, 2.0, more, block=(1, 1, 1))
    g = pygpu.Graph()
    g.add_while_node(body, more)
    g.instantiate().launch()
    assert t.get()[0] == 2.0 and more.get()[0] == 0


def test_a_freed_allocation_stops_the_launch(fill: pygpu.Function) -> None:
    memory = pygpu.driver.mem_alloc(64)
    g = pygpu.Graph()
    g.add_kernel_node(fill, int(memory), np.int32(16), np.int32(1), block=(16, 1, 1))
    runnable = g.instantiate()
    runnable.launch()
    memory.free()
    with pytest.raises(pygpu.CudaError, match="freed before the graph was launched"):
        runnable.launch()


def test_step_graph_parameters_change_between_launches(add: pygpu.Function) -> None:
    x = gpuarray.zeros(256, np.float64)
    sg = pygpu.graphs.StepGraph(dt=0.5, n=np.int64(256))
    first = sg.add_kernel_node(add, x, sg.n, sg.dt, **BLOCK)
    sg.add_kernel_node(add, x, x.size, 1.0, dependencies=[first], **BLOCK)
    sg.launch()
    assert (x.get() == 1.5).all()
    sg.launch(dt=2.0)
    sg.launch()
    assert (x.get() == 7.5).all()
    assert sg.values == {"dt": 2.0, "n": 256}
    sg.launch(n=np.int64(128), dt=0.0)  # half the array: +1.0 everywhere, +0.0 on the first half
    assert (x.get() == 8.5).all()
    with pytest.raises(TypeError, match="unknown parameter"):
        sg.launch(dx=1.0)
    with pytest.raises(AttributeError, match="no parameter 'dx'"):
        _ = sg.dx
    with pytest.raises(RuntimeError, match="before the first launch"):
        sg.add_kernel_node(add, x, x.size, sg.dt, **BLOCK)


def test_burgers_device_loop_matches_the_plain_loop() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "demos" / "burger"))
    import burger

    problem = burger.Problem()  # the seeds' run
    results = []
    for device_loop in (False, True):
        solver = burger.Solver(problem, 0, device_loop=device_loop)
        solver.run()
        solver.run()  # a second launch starts from u0 again
        results.append(solver.final())
    assert np.array_equal(results[0], results[1])
    assert round(float(results[1][10]), 7) == 0.0733873


@pytest.mark.parametrize("every", [1, 7])
def test_burgers_device_loop_keeps_the_plain_loops_snapshots(every: int) -> None:
    # Turns stage their snapshot rows; the loop copies turn k's rows into row block k (an index
    # read on the device); the steps and rows left over after the turns follow as plain nodes.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "demos" / "burger"))
    import burger

    problem = burger.Problem(t_final=0.45)  # 451 steps: two turns and steps left over, every=7 too
    runs = []
    for device_loop in (False, True):
        solver = burger.Solver(problem, every, device_loop=device_loop)
        solver.run()
        solver.run()  # a second launch overwrites the same rows
        rows = np.empty((solver.rows, solver.n_total))
        pygpu.memcpy_dtoh(rows, solver.snapshots)
        runs.append((solver.rows_done, rows, solver.final()))
    (plain_rows, plain, plain_final), (loop_rows, loop, loop_final) = runs
    assert loop_rows == plain_rows == problem.steps()[0] // every
    assert np.array_equal(loop, plain)
    assert np.array_equal(loop_final, plain_final)


def test_ctrl_c_stops_a_host_while_loop_that_never_ends(backend: str) -> None:
    # A flag nothing clears: on a GPU the loop would spin on the device; on the host the replay
    # runs in the calling thread, and Ctrl-C must end it (between turns: the body is a memset).
    if backend != "host":
        pytest.skip("on a GPU a launch returns at once; test_reliability covers Ctrl-C during a GPU wait")
    code = """
        import sys, numpy as np, pygpu
        from pygpu import gpuarray
        flag = gpuarray.to_gpu(np.array([1], np.int32))
        scratch = gpuarray.zeros(4, np.int32)
        body = pygpu.Graph()
        body.add_memset_node(scratch, 0, 16)
        loop = pygpu.Graph()
        loop.add_while_node(body, flag)
        runnable = loop.instantiate()
        print("ready", flush=True)
        try:
            runnable.launch()
        except KeyboardInterrupt:
            flag.fill(np.int32(0))
            runnable.launch()  # still usable: with its flag cleared the loop ends at once
            print("interrupted", flush=True)
            sys.exit(3)
        print("not interrupted", flush=True)
    """
    result = interrupt_python(code, after=0.5)
    assert result.returncode == 3 and "interrupted" in result.stdout, (result.stdout, result.stderr[-2000:])
