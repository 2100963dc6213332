"""Where the time went in a py-spy recording (``py-spy record --format raw``).

    .venv/bin/python bench/profile_summary.py FILE [--top 25] [--match TEXT]

Prints the functions with the most samples on top of the stack (self) and on the stack
at all (inclusive), as shares of all samples of the file. ``--match`` keeps only the
inclusive rows whose ``function (file)`` contains TEXT (e.g. ``consumers``).
"""

from __future__ import annotations

import argparse
import collections
import re
from pathlib import Path

FRAME = re.compile(r"^(?P<name>.*?) \((?P<file>[^)]*?)(?::\d+)?\)$")


def frame_key(frame: str) -> str:
    found = FRAME.match(frame.strip())
    if not found:
        return frame.strip()
    path = found["file"]
    short = "/".join(path.split("/")[-2:])
    return f"{found['name']} ({short})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("file", type=Path)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--match", default="")
    args = parser.parse_args()
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in args.file.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [frame_key(f) for f in stack.split(";")]
        # The first element is the process/thread name py-spy prepends.
        frames = [f for f in frames[1:] if f]
        total += count
        if frames:
            own[frames[-1]] += count
        for key in set(frames):
            inclusive[key] += count
    print(f"{args.file.name}: {total} samples")
    print("self:")
    for key, count in own.most_common(args.top):
        print(f"  {100 * count / total:5.1f}%  {key}")
    print("inclusive:")
    rows = [(k, c) for k, c in inclusive.most_common() if args.match in k]
    for key, count in rows[: args.top]:
        print(f"  {100 * count / total:5.1f}%  {key}")


if __name__ == "__main__":
    main()
