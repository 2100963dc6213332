"""The keyword ranking where the database has no full-text search (a SQLite built without
FTS5; memories): how many of the query's words a chunk holds. PostgreSQL ranks with
``websearch_to_tsquery`` and ``ts_rank_cd`` instead (``agents_app/db/knowledge_search.py``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Words too common to say anything about a passage (English; other languages keep theirs).
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "our",
        "that",
        "the",
        "their",
        "there",
        "this",
        "to",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)


def terms(text: str) -> list[str]:
    """The words of ``text`` that count: lower-cased, without stop words."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


def term_overlap_ranking(query: str, texts: Sequence[str]) -> list[int]:
    """Indexes into ``texts`` of those holding at least one query word, best first: each
    query word found scores its rarity among ``texts`` (an idf), ties keep text order."""
    wanted = set(terms(query))
    if not wanted:
        return []
    holders = [set(terms(t)) & wanted for t in texts]
    df = {w: sum(1 for h in holders if w in h) for w in wanted}
    n = len(texts)
    scored = [
        (sum(math.log(1 + n / df[w]) for w in found), i) for i, found in enumerate(holders) if found
    ]
    scored.sort(key=lambda pair: (-pair[0], pair[1]))
    return [i for _, i in scored]
