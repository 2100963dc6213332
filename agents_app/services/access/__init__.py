"""Who may do what, and how much: API keys, sign-in tokens and tickets, socket credentials,
OpenID Connect identities, SCIM provisioning, the audit log, rate limits and budgets.
Imports no other service package.
"""
