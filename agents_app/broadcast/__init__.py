"""Live frames: what a running session or a service sends to the sockets watching a thread.

``events`` (the engine's event sink over the channel layer, and the ``send_*`` helpers
services call after a write), ``live_frames`` (a frame's one encoding), ``publisher`` (the
batched Redis ``PUBLISH`` writer), ``catch_up`` (the recent frames a reconnecting socket
reads back), ``listening`` (keeps a server's Redis Pub/Sub readers in their waiting read
between sockets).

Imports nothing of ``agents_app``: services, the orchestration and the sockets all build on
it, so it sits under them.
"""
