"""A person's own scope (spec 0.2.0's user scope): the user state that user endpoints and
thread code act through, user endpoints, the per-user event stream, credential grants and the
users admin API's rules.
May import: ``threads`` (a user lists and reaches their threads), ``sessions``, ``access``, ``env``.
"""
