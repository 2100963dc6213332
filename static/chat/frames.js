// What a message stream frame does to a transcript and to the state line. Shared by the chat
// page and the studio's live inspector, so both read the same frames the same way.

import { followPath } from './branches.js';

const SUBAGENT_INNER = new Set(['message_data', 'tool_started', 'stopped']);

// Applies `frame`; returns true when the transcript view should render again.
// `onSettle` runs when a session ended (a cheap moment to reload the stored rows: frames from
// the web process and from the worker travel separately and may cross); `onResync` when frames
// were lost between the worker and the socket.
export function applyFrame(frame, { transcript: t, state, onSettle, onResync }) {
  switch (frame.type) {
    case 'message_data':
      t.upsert(frame.data);
      if (!frame.depth) state.fromMessage(frame.data);
      break;
    case 'message_chunk':
      t.chunk(frame.message_id, frame.chunk);
      if (!frame.depth) state.set('writing');
      break;
    case 'reasoning_chunk':
      t.chunk(frame.message_id, frame.chunk, true);
      break;
    case 'message_image':
      t.image(frame.message_id, frame.attachment);
      break;
    case 'step_started':
    case 'llm_request':
      state.set('thinking');
      break;
    case 'tool_started':
      state.set('tool', frame.tool);
      break;
    case 'tool_completed':
      state.set('thinking');
      break;
    case 'stopped':
      t.progress.clear(); // no call runs past its session's end, whatever its last update said
      state.sessionEnded(frame.reason, t);
      onSettle();
      break;
    case 'stopped_by_user':
      state.set('stopped');
      onSettle();
      break;
    case 'resync':
      onResync();
      return false;
    case 'event':
      // Another version became the active path (issue #41): the rows shown are another set.
      if (frame.eventType === 'active_path_changed') {
        followPath(t, frame.data?.path);
        onResync();
        return false;
      }
      applyEvent(t, frame);
      break;
    default:
      return false;
  }
  return true;
}

function applyEvent(t, frame) {
  const type = frame.eventType || '';
  if (type === 'message_deleted') t.remove(frame.data?.id);
  else if (type === 'tool_call_progress' && !frame.depth) t.toolProgress(frame.data);
  else if (type === 'subagent_start' || type === 'subagent_end') t.addEvent(frame);
  else if (type === 'subagent_event' && SUBAGENT_INNER.has(frame.data?.innerEvent?.type)) {
    const inner = frame.data.innerEvent;
    if (inner.type !== 'message_data' || inner.data?.status !== 'pending') t.addEvent(frame);
  }
}
