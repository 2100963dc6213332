from django.apps import AppConfig


class AgentsAppConfig(AppConfig):
    name = "agents_app"
    # "Studio", not "Agents": the breadcrumbs read "Home › Studio › Agents" (issue #40).
    verbose_name = "Studio"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.contrib.auth import get_user_model
        from django.contrib.auth.signals import user_logged_out
        from django.db.models.signals import post_migrate, post_save

        from agents_app import checks  # noqa: F401  (registers the start-up checks)
        from agents_app.db import message_counts
        from agents_app.services.access import socket_credentials
        from agents_app.services.automation import offboarding

        self._install_session_starter()
        self._configure_egress()
        # Provider names in definitions are checked against agents/providers/ too: the
        # rules ask for the code registry (discovered lazily) before they read the names.
        from agents_app.base.code_registry import get_registry
        from runtime.providers.compatible import catalog as provider_catalog

        provider_catalog.set_loader(get_registry)
        # Traces, when the operator points OTEL_EXPORTER_OTLP_ENDPOINT somewhere: before the
        # first request builds the middleware chain, so the Django instrumentation is in it.
        from agents_app.base import telemetry

        telemetry.configure()
        post_migrate.connect(
            message_counts.install_after_migrate,
            sender=self,
            dispatch_uid="agents_app.db.message_counts",
        )
        # Knowledge's FTS5 triggers on SQLite, which a table rebuild drops.
        from agents_app.db import knowledge_search

        post_migrate.connect(
            knowledge_search.install_after_migrate,
            sender=self,
            dispatch_uid="agents_app.db.knowledge_search",
        )
        # Signing out (the API's cookie logout, the studio's) closes the session's sockets.
        user_logged_out.connect(
            socket_credentials.on_logged_out, dispatch_uid="agents_app.socket_credentials"
        )
        # Deactivating an account stops what it left running (schedules, triggers, webhooks)
        # and closes its sockets.
        post_save.connect(
            offboarding.on_user_saved,
            sender=get_user_model(),
            dispatch_uid="agents_app.offboarding",
        )
        # The audit log: every change to configuration, access and accounts (docs/identity.md).
        from agents_app.services.access import audit

        audit.connect()

    @staticmethod
    def _configure_egress() -> None:
        """The egress policy of this process (runtime/core/egress.py) from the operator's list."""
        from django.conf import settings
        from django.core.exceptions import ImproperlyConfigured

        from runtime.core import egress

        try:
            egress.configure(settings.STUDIO_EGRESS_ALLOW)
        except ValueError as exc:
            raise ImproperlyConfigured(f"STUDIO_EGRESS_ALLOW: {exc}") from None

    @staticmethod
    def _install_session_starter() -> None:
        from agents_app.base import dispatch
        from agents_app.orchestration import executor

        # Services say which session should run; the executor runs it (agents_app/base/dispatch.py).
        dispatch.install(executor.dispatch)
