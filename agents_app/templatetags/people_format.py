"""The template filters of ``agents_app.base.people_format``: ``{{ cost|usd }}``, ``{{ when|ago }}``."""

from __future__ import annotations

from django import template

from agents_app.base import people_format

register = template.Library()

for _name in (
    "usd",
    "ago",
    "whole",
    "money",
    "money_fine",
    "per_million",
    "worker",
    "duration",
    "local_time",
    "reason",
):
    register.filter(_name, getattr(people_format, _name))
