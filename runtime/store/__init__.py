"""What the engine reads and writes: the store protocol (``protocol``), the in-memory store
(``memory``), the write path (``recorder``: one commit, then frames), the live frames
(``events``), thread files and what is made storable.

May import: ``runtime.core`` only.
"""
