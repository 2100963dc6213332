"""Sessions in the database: request, claim, heartbeat, release, stop and continue;
scheduled effects, subagent bookkeeping, tool waits (and the variables requests among them) and
client-side tool answers.
May import: ``access`` (budgets), ``env``.
"""
