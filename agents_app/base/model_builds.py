"""The API's pydantic models are built on first use, not as the routes are declared.

django-ninja wraps every response of every route in a model of its own (``NinjaResponseSchema``,
one per status code: 1,361 for our 162 operations, most of them the eight error codes each
route declares) and builds parameter models for each; pydantic compiles each one's validator
and serializer when the class is created. That was 0.6 s of the 2.2 s of CPU a web server, a
pytest worker or a checked ``manage.py`` command spends importing the URLconf on the test
machine, for models most processes never use. pydantic's ``defer_build`` (public
configuration, inherited by every subclass created afterwards) compiles a model when it first
validates or serializes: an endpoint's first request pays its own few, about a millisecond
each. ``tests/agents_app/api/test_deferred_models.py`` fails if the models stop being deferred
(a ninja or pydantic release that ignores the setting) and compares the OpenAPI document with
the one eager models give.
"""

from __future__ import annotations

import ninja


def defer_model_builds() -> None:
    """Every ``ninja.Schema`` class created from now on is built on first use."""
    ninja.Schema.model_config["defer_build"] = True
