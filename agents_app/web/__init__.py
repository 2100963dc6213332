"""The chat web page: sign-in, the thread list and a thread, for any signed-in user.

The views only render shells; the page gets its data from the HTTP API and the message
stream socket (``static/chat/``), like any other client.
"""
