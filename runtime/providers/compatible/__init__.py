"""OpenAI-compatible providers: ``define_provider`` definitions (``definition.py``), the six
first-party vendors (``builtin.py``), the adapter that serves a definition (``adapter.py``)
and where defined providers are kept and discovered (``catalog.py``)."""
