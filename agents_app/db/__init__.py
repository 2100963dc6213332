"""Reads and bookkeeping written against the database directly, below the selectors.

``raw_sql`` (what the plain-SQL reads share), ``page_reads`` (the messages page's reads and
the engine's, in plain SQL), ``message_counts`` (the per-thread count kept by triggers, and
their installation), ``thread_records`` (the engine's ``ThreadRecord`` of a thread),
``thread_search`` (search over threads).

May import: ``models``, Django, ``runtime``'s plain types and the shared leaves; nothing
else of ``agents_app``.
"""
