"""Threads and what they hold: creation checks and changes, message posts, branches and
forks, files, per-thread values, feedback, idempotency keys, batched deletes.
May import: ``sessions`` (a post requests a session), ``access`` (limits), ``env``.
"""
