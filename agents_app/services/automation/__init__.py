"""Automation that acts as its owner: schedules, triggers, webhook subscriptions and
deliveries, the owner rule (``owner_rights``) and offboarding.
May import: ``threads`` (a run posts a message), ``sessions``, ``access``, ``env``.
"""
