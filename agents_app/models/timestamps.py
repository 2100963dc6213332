"""Clock helpers shared by models whose columns hold integer microseconds."""

from __future__ import annotations

import time


def now_us() -> int:
    return time.time_ns() // 1000
