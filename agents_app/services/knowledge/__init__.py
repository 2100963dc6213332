"""Knowledge bases: documents parsed, split into chunks, embedded and indexed, and the hybrid
search agents call; long-term memory per person.
May import: ``access`` (budgets, limits), ``env`` (embedding keys).
"""
