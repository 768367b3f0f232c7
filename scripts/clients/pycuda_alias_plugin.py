"""pytest plugin (``-p pycuda_alias_plugin``): in this run ``import pycuda.X`` is ``pygpu.X``.

Loaded by scripts/client_suite.sh for a PyCUDA-based library's own suite. The alias is enabled
when pytest imports this plugin, before the suite's conftest.py (and the library) import
anything; with a real PyCUDA importable, the first ``import pycuda`` raises ImportError naming it,
so a run can never measure the real PyCUDA by mistake.
"""

import os

import pygpu.pycuda_alias as _alias

_alias.enable()


def pytest_report_header(config):
    import pygpu

    return f"pygpu {getattr(pygpu, '__version__', '?')} from {os.path.dirname(pygpu.__file__)} as pycuda; " + (
        f"PYGPU_BACKEND={os.environ.get('PYGPU_BACKEND', '(default)')}"
    )
