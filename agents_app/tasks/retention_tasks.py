"""The retention beat task (thin: the work is in ``agents_app.services.operations.retention``).

Beat sends it every ``STUDIO_RETENTION_INTERVAL_SECONDS``; a run stops after
``STUDIO_RETENTION_MAX_SECONDS`` and the next one continues. A duplicated or
overlapping run is harmless: both delete by primary key in short transactions.
"""

from __future__ import annotations

import logging

from celery import shared_task

logger = logging.getLogger(__name__)


@shared_task(name="agents_app.apply_retention", acks_late=False, ignore_result=True)
def apply_retention() -> str:
    """Apply the retention policy once; returns the run's summary."""
    from agents_app.orchestration.periodic import retention_tick

    summary = retention_tick()
    logger.info("retention: %s", summary)
    return summary
