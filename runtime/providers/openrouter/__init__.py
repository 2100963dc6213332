"""OpenRouter: the adapter over the Chat Completions base, its server tools and what its
models offer.
"""
