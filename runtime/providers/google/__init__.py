"""Google's Gemini API: the adapter (``provider``), its server tools and what its models offer."""
