"""OpenAI: the Chat Completions adapter (``chat_completions``, also the base of every
OpenAI-compatible vendor), the Responses API (``responses`` with its request and stream
halves), tool items and what its models offer.
"""
