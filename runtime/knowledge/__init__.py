"""Knowledge bases, the parts with no database (docs/knowledge.md): how a prompt names a base
(``names``), how parsed text is split into chunks (``chunking``), and how keyword and vector
rankings are fused into one (``fusion``). Pure functions over the standard library; the
parsers, the embedding model and the tables live in ``agents_app/services/knowledge/``.
May import: ``runtime.core``.
"""
