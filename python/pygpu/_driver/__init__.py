"""Floor 1: the driver-facing Python over the compiled core ``pygpu._pygpu``.

Devices and contexts (``contexts``), which device is current and copies between devices
(``devices``), the driver's enumerations (``enums``), copies and memsets beyond the compiled
calls (``memcpy``), memory pools (``mempool``), page-locked and managed memory (``pinned``,
``managed``), streams and events (``streams``), PyCUDA's texture references (``texrefs``), the C
type names of numpy dtypes (``c_types``, ``vector_types``) and caches kept per context
(``context_caches``). Imports only ``pygpu._pygpu``: docs/architecture.md has the floors.
"""

__all__: list[str] = []
