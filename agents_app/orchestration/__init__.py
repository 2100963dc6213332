"""The orchestration: what claims and runs sessions and effects.

Here live the executor (Celery workers or this process), the session runner and the engine
builder, the effect, schedule and webhook runners, trigger firing, thread creation (the
engine runs the agent's hooks), eval runs, agent calls for ``/mcp``, turns of ``/v1``
(``openai_turns``), the start gate, the embedded sweepers, the warm-up and the
database-retry helpers of long-lived async code.

May import: ``bridge`` (the engine's Django store), ``services``, ``selectors``, ``db``,
``models``, the shared leaves at the top of ``agents_app`` and ``runtime``. Never the task
modules (``agents_app.tasks``: a dispatch sends its task by name, ``task_names``), nor
``api``, ``admin``, ``web`` or ``sockets``.
"""
