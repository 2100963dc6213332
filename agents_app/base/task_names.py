"""The Celery task names other modules send by name (``current_app.send_task``), so a
module that dispatches never imports the task modules, which import the runners: the
orchestration's imports point one way (docs/architecture.md)."""

RUN_SESSION = "agents_app.run_session"
WEBHOOK_DELIVER = "agents_app.webhook_deliver"
KNOWLEDGE_INGEST = "agents_app.knowledge_ingest"
