"""Floor 5: collectives across devices and processes, behind ``pygpu.nccl``.

``nccl_library`` finds and loads libnccl at run time, ``nccl_cuda`` calls it on the cuda
backend, ``nccl_mpi`` runs the same collectives over MPI on the host backend.
docs/architecture.md has the floors.
"""

__all__: list[str] = []
