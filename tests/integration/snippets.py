"""One long-lived Django process per stack that runs tests' Python snippets.

Tests set up and read a stack's database with snippets of Python (``Site.python``,
``Stack.python``). Each used to be ``manage.py shell -c``: a new process paying
``django.setup()`` (about 1.4 s of CPU here) for a few milliseconds of work, some hundred times
a run. This process sets Django up once, with the stack's environment, and runs each snippet
the way ``shell -c`` does: in a namespace of the shell's automatic imports, its standard output
returned (the shell's "N objects imported automatically" line first, as before), an exception
an error with its traceback. Database connections are closed after each snippet, so nothing
is held between them (a test may kill connections or restart the server).

Run as ``python -m tests.integration.snippets``; requests and answers are JSON lines on its
standard input and on a file descriptor of its own (the snippet's prints go to a buffer).
"""

from __future__ import annotations

import io
import json
import os
import select
import subprocess
import sys
import traceback
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any


class SnippetError(RuntimeError):
    """A snippet raised: its output and traceback, as ``Stack.run`` reports a failed command."""


class Snippets:
    """The client: starts the process on first use, again when the environment changed.

    The process's own stderr (Django's log lines, warnings) goes to ``log``, not to a pipe:
    nobody reads a pipe between snippets, and a full one would stop the process mid-snippet.
    ``preexec`` runs in the child before it starts (the stack's ``die_with_parent``)."""

    def __init__(
        self, root: Path, python: str, log: Path, preexec: Callable[[], None] | None = None
    ) -> None:
        self.root = root
        self.python = python
        self.log = log
        self.preexec = preexec
        self.popen: subprocess.Popen[bytes] | None = None
        self.answers: Any = None
        self.env: dict[str, str] = {}

    def run(self, code: str, env: dict[str, str], timeout: float = 180) -> str:
        if self.popen is None or self.popen.poll() is not None or env != self.env:
            self.close()
            self._start(env)
        assert self.popen is not None and self.popen.stdin is not None
        self.popen.stdin.write(json.dumps({"code": code}).encode() + b"\n")
        self.popen.stdin.flush()
        ready, _, _ = select.select([self.answers], [], [], timeout)
        line = self.answers.readline() if ready else b""
        if not line:
            self._stop()
            raise SnippetError(
                f"the snippet process gave no answer within {timeout} s:\n{code}\n{self._tail()}"
            )
        answer = json.loads(line)
        if not answer["ok"]:
            raise SnippetError(f"snippet failed:\n{code}\n{answer['stdout']}\n{answer['stderr']}")
        return str(answer["stdout"])

    def _start(self, env: dict[str, str]) -> None:
        read, write = os.pipe()
        with self.log.open("ab") as log:
            self.popen = subprocess.Popen(
                [self.python, "-m", "tests.integration.snippets", str(write)],
                cwd=self.root,
                env=env,
                stdin=subprocess.PIPE,
                stderr=log,
                pass_fds=(write,),
                start_new_session=True,
                preexec_fn=self.preexec,
            )
        os.close(write)
        self.answers = os.fdopen(read, "rb")
        self.env = dict(env)

    def _stop(self) -> None:
        if self.popen is None:
            return
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait(10)
        for stream in (self.popen.stdin, self.answers):
            if stream is not None:
                stream.close()
        self.popen = None

    def _tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""

    def close(self) -> None:
        if self.popen is not None and self.popen.stdin is not None:
            try:
                self.popen.stdin.close()  # end of input: the process returns
                self.popen.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._stop()


def _serve(answers_fd: int) -> None:
    import django

    django.setup()
    from django.core.management.commands import shell
    from django.db import connections

    answers = os.fdopen(answers_fd, "w")
    for line in sys.stdin:
        code = json.loads(line)["code"]
        out, err = io.StringIO(), io.StringIO()
        ok = True
        with redirect_stdout(out), redirect_stderr(err):
            try:
                command = shell.Command(stdout=out, stderr=err)
                exec(code, {**vars(shell), **command.get_namespace(verbosity=1)})  # noqa: S102
            except SystemExit as exit_:
                ok = exit_.code in (None, 0)
            except BaseException:  # noqa: BLE001 - reported to the test as the shell would
                ok = False
                traceback.print_exc(file=err)
            finally:
                connections.close_all()
        answers.write(json.dumps({"ok": ok, "stdout": out.getvalue(), "stderr": err.getvalue()}))
        answers.write("\n")
        answers.flush()


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
