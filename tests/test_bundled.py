"""The bundled kernel modules (kernels/*.cu): each loaded once per process, on first use, and
each kernel looked up once (arith's module alone holds hundreds of kernels)."""

from __future__ import annotations

import json

from conftest import run_python


def test_each_bundled_module_loads_once_and_only_when_needed() -> None:
    out = run_python(
        """
        import collections, json
        import numpy as np
        import pygpu.gpuarray as ga
        from pygpu import _bundled

        loads, lookups = collections.Counter(), collections.Counter()
        real_load = _bundled.load_kernels

        class Counting:
            def __init__(self, module):
                self.module = module

            def get_function(self, name):
                lookups[name] += 1
                return self.module.get_function(name)

        def load(source):
            loads[source] += 1
            return Counting(real_load(source))

        _bundled.load_kernels = load
        a = ga.to_gpu(np.arange(1000.0))
        before = dict(loads)
        for _ in range(3):
            (a + a).get(); (a * 2.0).get(); ga.sum(a).get(); (a.astype(np.float32) + 1).get()
        print(json.dumps({"before": before, "loads": loads, "lookups": lookups}))
        """
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen["before"] == {}, "to_gpu loaded a kernel module it does not need"
    assert set(seen["loads"]) == {"arith", "reduce", "cast"}
    assert all(count == 1 for count in seen["loads"].values()), seen["loads"]
    assert {"add_f64", "mul_f64", "add_f32", "cast_f64_f32"} <= set(seen["lookups"])
    assert all(count == 1 for count in seen["lookups"].values()), seen["lookups"]
