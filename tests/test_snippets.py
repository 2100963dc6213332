"""The stacks' snippet process (tests/integration/snippets.py) behaves as ``manage.py shell -c``:
the shell's automatic imports, its stdout, a failure raised with its traceback, and one process
for many snippets until the environment changes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.integration.snippets import SnippetError, Snippets
from tests.integration.stack import BIN, ROOT

pytestmark = pytest.mark.integration  # each test starts the snippet process


@pytest.fixture
def snippets(tmp_path: Path) -> Snippets:
    return Snippets(ROOT, str(BIN / "python"), tmp_path / "snippets.log")


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "studio.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "STUDIO_VAR_DIR": str(tmp_path / "var"),
        **extra,
    }


def test_a_snippet_runs_as_the_shell_runs_it_in_one_process(
    snippets: Snippets, tmp_path: Path
) -> None:
    env = _env(tmp_path)
    try:
        out = snippets.run("print(Agent.__name__, Thread.__name__)", env)
        # The shell's own first line, then what the snippet printed (auto-imported names).
        assert out.splitlines()[0].endswith("imported automatically (use -v 2 for details).")
        assert out.rstrip().endswith("Agent Thread")
        first = snippets.popen.pid if snippets.popen else None
        with pytest.raises(SnippetError) as raised:
            snippets.run("print('before'); raise ValueError('planted failure')", env)
        assert "before" in str(raised.value)
        assert "ValueError: planted failure" in str(raised.value)
        assert "Traceback" in str(raised.value)
        # A failure does not end the process; the next snippet runs in the same one.
        assert snippets.run("import os; print(os.getpid())", env).split()[-1] == str(first)
        # Another environment is another process, with that environment.
        changed = _env(tmp_path, STUDIO_SNIPPET_PROBE="two")
        out = snippets.run("import os; print(os.environ['STUDIO_SNIPPET_PROBE'])", changed)
        assert out.split()[-1] == "two"
        assert snippets.popen is not None and snippets.popen.pid != first
        # Its own stderr goes to the log, never to a pipe nobody reads: a snippet that writes
        # far more than a pipe holds still gets its answer.
        loud = "import os\nfor _ in range(300): os.write(2, b'x' * 1000)\nprint('done')"
        assert snippets.run(loud, changed).split()[-1] == "done"
        assert (tmp_path / "snippets.log").stat().st_size >= 300_000
    finally:
        snippets.close()
    assert snippets.popen is None
