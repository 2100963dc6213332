"""The shared types and small rules every layer of the engine speaks: messages, definitions as
the spec writes them (``spec``), their faults, a session's progress and outcome, the
transcript, tool results, waits, redaction, egress, tracing.

May import: nothing of ``runtime`` outside ``runtime.core`` (the bottom layer).
"""
