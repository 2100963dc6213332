"""One step of a session: the LLM half (``llm_half``: build the request, open the step, get
the response through the attempt ladder) and the tool half (``tool_half``: run the calls,
store each result), with what the model sees (history, media, prompting) and structured
output checks.

May import: ``runtime.state``, ``runtime.effects``, ``runtime.deps`` and every layer below.
"""
