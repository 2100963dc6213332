"""Other protocols' doors onto the same threads (the OpenAI-compatible API, A2A, AG-UI):
turning their requests into posts and their answers into our reads. May import every other
service package; nothing imports them but the API and the doors' orchestration
(``openai_turns``, ``ag_ui_runs``).
"""
