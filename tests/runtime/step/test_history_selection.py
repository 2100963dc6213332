"""A session's request selects its rows incrementally (issue #39): ``select_from`` re-reads
the transcript only from the first row changed since the last request, and always returns
what ``select_rows`` over the whole transcript returns, whatever the changes between
(new rows, a pending row completed or failed, rows deleted, a row arriving out of order,
the window moving)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.core.messages import Message
from runtime.core.transcript import Transcript
from runtime.step.history import Selected, Window, select_from, select_rows

STATUSES = ["completed", "pending", "failed"]

ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.sampled_from(STATUSES)),
        st.tuples(st.just("replace"), st.sampled_from(STATUSES)),
        st.tuples(st.just("remove"), st.integers(0, 50)),
        st.tuples(st.just("insert_early"), st.integers(0, 50)),
        st.tuples(st.just("select"), st.tuples(st.booleans(), st.integers(0, 60))),
    ),
    max_size=60,
)


def window(include_chat: bool, session_start: int) -> Window:
    return Window(
        include_chat=include_chat,
        include_past_tools=True,
        session_start=session_start,
        turn_start=0,
        side="a",
        perspective=False,
    )


@settings(max_examples=300, deadline=None)
@given(ops)
def test_the_incremental_selection_is_the_whole_selection(operations: list) -> None:  # type: ignore[type-arg]
    transcript = Transcript()
    selected = Selected()
    clock = 100
    current = window(True, 0)
    for kind, arg in operations:
        if kind == "append":
            clock += 10
            transcript.upsert(Message(id=f"m{clock}", role="user", status=arg, created_at=clock))
        elif kind == "replace" and transcript.messages:
            old = transcript.messages[-1]
            transcript.upsert(old.copy(status=arg))
        elif kind == "remove" and transcript.messages:
            transcript.remove(transcript.messages[arg % len(transcript.messages)].id)
        elif kind == "insert_early" and transcript.messages:
            at = transcript.messages[arg % len(transcript.messages)].created_at - 1
            transcript.upsert(Message(id=f"e{clock}-{arg}", role="user", created_at=at))
            clock += 10
        elif kind == "select":
            current = window(arg[0], 100 + arg[1] * 10)
        got = select_from(transcript, current, selected)
        assert [m.id for m in got] == [m.id for m in select_rows(transcript.messages, current)]
        assert all(
            a is b for a, b in zip(got, select_rows(transcript.messages, current), strict=True)
        )


def test_a_request_after_one_new_row_reads_only_the_rows_changed() -> None:
    transcript = Transcript([Message(id=f"m{i}", role="user", created_at=i) for i in range(1, 201)])
    selected = Selected()
    select_from(transcript, window(True, 0), selected)
    reply = Message(id="r", role="assistant", status="pending", created_at=1000)
    transcript.upsert(reply)
    transcript.upsert(reply.copy(status="completed"))
    assert transcript.changed_since(selected.revision) == 200  # only the reply's place
    assert [m.id for m in select_from(transcript, window(True, 0), selected)][-2:] == ["m200", "r"]
