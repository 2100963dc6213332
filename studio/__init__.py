"""The Django project: settings, urls, asgi/wsgi, the Celery app and the admin site."""

from studio.celery import app as celery_app

__all__ = ("celery_app",)
