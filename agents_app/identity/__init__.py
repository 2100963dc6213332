"""Sign-in with the organisation's identity provider and provisioning from it
(docs/identity.md): ``oidc.py`` (the OpenID Connect redirect flow at ``/oidc/``),
``scim.py`` (SCIM 2.0 at ``/scim/v2/``), ``context.py`` (what the sign-in pages show).

An edge like ``web/`` and ``api/``: imports services, the models and the leaves, never its
sibling edges. The decisions (which account, which groups) live in ``services.access.identity`` and
``services.access.scim``; this package checks the protocols and shapes the answers.
"""
