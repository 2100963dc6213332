"""Template rendering without the test runner's instrumentation, for tests that read only a
response's status and content.

Django's test environment replaces ``Template._render`` so that every template rendered sends
``template_rendered``, and the test client copies each one's context into
``response.context``. A studio change form renders some 660 templates (a widget, an error
list, a label each), and that bookkeeping took half of its CPU (measured: 145–165 ms a post
of the prompt form instead of 86 ms). The fuzzing tests post such a form hundreds of times and
never read the context.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.template.base import Template
from django.test import utils as test_utils


def django_s_own_render() -> object:
    """``Template._render`` as Django defines it, which ``setup_test_environment`` saved before
    installing its instrumented one (``tests/test_plain_templates.py`` fails if a Django
    release changes where it keeps it)."""
    return test_utils._TestState.saved_data.template_render  # type: ignore[attr-defined]


@contextmanager
def plain_templates() -> Iterator[None]:
    """Render templates as production does: no ``template_rendered`` signal, no
    ``response.context`` or ``response.templates``."""
    instrumented = Template._render
    Template._render = django_s_own_render()  # type: ignore[method-assign]
    try:
        yield
    finally:
        Template._render = instrumented  # type: ignore[method-assign]
