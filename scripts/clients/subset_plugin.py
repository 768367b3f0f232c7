"""pytest plugin (``-p subset_plugin``): ``--client-subset=ends-per-function`` keeps, of each test
function, its first and last collected parametrization (``one-per-function``: the first only), and
leaves out the tests marked ``perf``.

Why this rule for the host backend's fixed subset of a client's suite (scripts/client_suite.sh
run-host): every test file and every test function is represented, the selection depends only on
the client's pinned release (its files, functions and parametrization order, nothing of pygpu's),
so the same tests run every time, and it is small enough for CI (reikna's suite without its perf
tests takes about 10 minutes on the host backend on 2 cores, mostly parametrizations of a few
functions). The first and last parametrizations are usually the two ends of a function's range
(smallest and largest shape, single and double precision, real and complex). ``perf`` tests only
time large problems (no pass/fail content beyond running) and are what makes a CPU slow.
"""

import pytest


def pytest_addoption(parser):
    parser.addoption(
        "--client-subset",
        choices=["all", "one-per-function", "ends-per-function"],
        default="all",
        help="the first (and last) parametrization of each test function, no perf tests",
    )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    subset = config.getoption("client_subset")
    if subset == "all":
        return
    by_function: dict = {}
    for i, item in enumerate(items):
        if item.get_closest_marker("perf") is None:
            by_function.setdefault((str(item.path), getattr(item, "originalname", item.name)), []).append(i)
    chosen = {found[0] for found in by_function.values()}
    if subset == "ends-per-function":
        chosen |= {found[-1] for found in by_function.values()}
    keep = [item for i, item in enumerate(items) if i in chosen]
    drop = [item for i, item in enumerate(items) if i not in chosen]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
