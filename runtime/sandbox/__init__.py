"""``run_code``: JavaScript and TypeScript in a disposable, capability-free sandbox.

See docs/run-code.md for the guarantees. ``runner`` is the host side
(``run_code``, ``CodeExecution``), ``child`` the process each run gets,
``typescript`` the type eraser, ``options`` and ``result`` the spec's shapes.
This package file imports nothing: the child process imports the package on
every run, and the host side's imports would only slow its start.
"""
