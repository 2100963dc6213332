"""Real MCP servers written with the SDK, run as child processes by the tests (``server.py``)."""
