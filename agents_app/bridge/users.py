"""Django accounts as the engine's ``ThreadUser`` (spec 0.2.0): the owner ``state.user()``
returns, the caller a thread endpoint receives. Lives in ``services/users/identity.py``
(a person's scope needs it too); kept here under its old name."""

from __future__ import annotations

from agents_app.services.users.identity import thread_user

__all__ = ["thread_user"]
