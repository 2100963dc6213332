"""Read-only queries behind studio pages and API views (dashboard, inspector panels, the
agent structure, previews, diffs, examples). They read through ``selectors`` and services'
read functions and never write; services never import them.
"""
