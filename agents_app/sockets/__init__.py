"""The WebSocket side: what serves a socket.

``routing`` (the routes ``studio.asgi`` mounts), ``consumers`` (the thread message stream,
the logs stream, registry events, and the ticket auth), ``bridge_consumer`` (the reference's
client bridge), ``consumer_loop`` (a receive loop without a task per message), ``socket_db``
(the consumers' small database pool).

May import: ``orchestration``, ``bridge``, ``services``, ``selectors``, ``db``, ``models``,
the shared leaves (``wire``, ``permissions``, ...) and ``runtime``. Nothing below imports it.
"""
