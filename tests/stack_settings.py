"""The settings of the processes the integration and browser stacks start (Daphne, Celery,
``manage.py``): production's own (``studio.settings``), with one change.

A fast password hasher comes first. PBKDF2's 1,000,000 iterations, Django's default, take
about a second a password on a 2-core test machine, and the browser suite alone signs in
about ninety times (a failed sign-in runs the hasher too). Django's own advice for test
suites; no test here is about the stored hash's strength. The default hashers stay in the
list, so a hash stored with them (a seeded template database made before this module)
still verifies.
"""

from django.conf import global_settings

from studio.settings import *  # noqa: F403

FAST_HASHER = "django.contrib.auth.hashers.MD5PasswordHasher"
PASSWORD_HASHERS = [FAST_HASHER, *global_settings.PASSWORD_HASHERS]
