"""The session loop: one session of an agent on a thread, step after step, until a stop
condition (``session``, ``stops``).

May import: ``runtime.delegation`` and every layer below; only ``runtime.engine`` imports it.
"""
