"""The Celery task modules, thin: each hands its work to the orchestration.

``session_tasks`` (sessions, the sweep, purges, evals), ``effect_tasks`` (scheduled effects,
schedules, webhooks), ``retention_tasks`` (the retention beat), ``knowledge_tasks`` (knowledge documents). Task names are explicit
(``name=`` on each task, the shared ones in ``agents_app.base.task_names``), so moving a module
never renames a task.

May import: ``orchestration`` and everything below it. Nothing imports a task module back.
This package imports its modules so that ``app.autodiscover_tasks()`` (``studio/celery.py``),
which imports ``agents_app.tasks``, registers every task.
"""

from agents_app.tasks import effect_tasks, knowledge_tasks, retention_tasks, session_tasks

__all__ = ["effect_tasks", "knowledge_tasks", "retention_tasks", "session_tasks"]
