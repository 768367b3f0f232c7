"""PyCUDA's ``pycuda.debug``: ``python -m pygpu.debug SCRIPT [ARGUMENTS]`` runs a script with
kernels compiled for debugging (``pygpu.driver.set_debugging()``: device debug information,
files kept, no cache), for instance under ``cuda-gdb``. Importing this module turns debugging
on for the rest of the process."""

from __future__ import annotations

import os
import runpy
import sys

from pygpu import driver

__all__: list[str] = []

driver.set_debugging()


def _main(argv: list[str] | None = None) -> int:
    """Runs ``argv[0]`` (a script path) as ``__main__`` with ``argv`` as its ``sys.argv``;
    returns 2 without a script, 1 when it does not exist."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print("usage: python -m pygpu.debug SCRIPT-TO-RUN [SCRIPT-ARGUMENTS]", file=sys.stderr)
        return 2
    if not os.path.exists(args[0]):
        print(f"Error: {args[0]} does not exist", file=sys.stderr)
        return 1
    sys.argv = list(args)
    runpy.run_path(args[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(_main())
