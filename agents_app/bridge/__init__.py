"""The one place where the engine meets Django's database: the engine's store over the ORM
(``store``, its one-statement commit ``fast_commit``, the loop's commit connection
``async_commit``), the thread file system (``files``) and the definitions a session is pinned
to (``pinned``). Each store method is one sync function (one transaction) wrapped in
``sync_to_async``, because Django transactions do not work in async mode.

May import: ``services``, ``selectors``, ``broadcast``, ``db``, ``models``, the shared leaves
and ``runtime``. Services never import it back; the orchestration builds the engine on it.
The live frames the engine emits go out through ``agents_app.broadcast``.
"""
