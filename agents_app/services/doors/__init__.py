"""Other protocols' doors onto the same threads (the OpenAI-compatible API, A2A, AG-UI):
turning their requests into posts and their answers into our reads; and one door out, the A2A
client (``a2a_client``: remote A2A agents as ``a2a:<name>`` tools). May import every other
service package; nothing imports them but the API, the admin (fetching an A2A card) and the
orchestration (the doors' turns, and ``engines`` handing the engine the A2A client).
"""
