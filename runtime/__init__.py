"""The Standard Agents execution engine.

Nothing in this package imports Django, Channels, Celery, ninja or ``agents_app``
(an import-linter contract in CI keeps it so). It talks to storage through the
store protocol and to live listeners through an event sink.
"""
