// The visible state of the thread (connecting, thinking, running a tool, stopped, error) and
// the Stop and Continue buttons that go with it.

import { fromHuman } from './render.js';
import { failureState, stoppedByUser } from './failures.js';

const BUSY = new Set(['thinking', 'writing', 'tool', 'waiting']);
const TEXT = {
  connecting: 'Connecting…',
  idle: 'Ready. Send a message.',
  thinking: 'Thinking…',
  waiting: 'Waiting for your answer (or for the client) before a tool goes on.',
  writing: 'Writing a reply…',
  sending: 'Sending…',
  stopping: 'Stopping…',
  stopped: 'Stopped. Press Continue to resume, or send a new message.',
  error: 'Something went wrong.',
};
// The state line says no more of a running tool than the transcript shows of it.
function toolText(mode, name) {
  if (mode === 'hidden') return 'Working on it…';
  if (mode === 'summary') return `Using ${String(name || 'a tool').replace(/[_.-]+/g, ' ').trim()}…`;
  return `Running the tool ${name || ''}…`;
}

const FAILED = new Set(['step_error', 'hook_blocked', 'repeated_tool_error']);
// A tool call parked until someone approves, rejects or answers it (runtime/core/waits.py).
const waits = (m) => m.role === 'tool' && m.status === 'pending' && m.metadata?.tool_wait && !m.metadata.tool_wait.decision;

export class StateBar {
  constructor(node, stopButton, continueButton) {
    this.node = node;
    this.stopButton = stopButton;
    this.continueButton = continueButton;
    this.kind = null;
    this.dual = false;
    this.hasMessages = false;
    this.fatal = false;
    this.toolActivity = 'full'; // what the person is shown of tools (tool_activity.js)
  }

  setDual(dual) {
    this.dual = dual;
    this.update();
  }

  set(kind, detail) {
    if (this.fatal && kind !== 'error') return;
    if (kind === 'error' && detail && /access|does not exist|signed out/.test(detail)) this.fatal = true;
    this.kind = kind;
    let text = detail || TEXT[kind] || '';
    if (kind === 'tool') text = toolText(this.toolActivity, detail);
    if (kind === 'idle' && !detail && this.dual && this.hasMessages) text = 'Ready. Press Continue for another round, or send a message.';
    this.node.textContent = text;
    this.node.dataset.state = kind;
    this.update();
  }

  update() {
    this.stopButton.hidden = !BUSY.has(this.kind);
    this.continueButton.hidden = !(this.kind === 'stopped' || (this.kind === 'idle' && this.dual && this.hasMessages));
  }

  connecting() {
    if (!this.kind || this.kind === 'idle') this.set('connecting');
  }

  reconnecting(delayMs) {
    this.set('connecting', `Connection lost. Reconnecting in ${Math.max(1, Math.round(delayMs / 1000))} s…`);
  }

  connected() {
    if (this.kind === 'connecting') this.set('idle');
  }

  // ``executing``: the thread's session is queued or running (the thread's own flag, read
  // once the socket is open), so a page opened mid-reply shows it working with Stop even
  // when the newest row says nothing of it (a tool call running, a session just queued).
  fromTranscript(transcript, executing = false) {
    const top = transcript.ordered().filter((m) => !m.depth);
    this.hasMessages = top.length > 0;
    if (top.some(waits)) {
      this.set('waiting');
      return;
    }
    const working = top.find((m) => !fromHuman(m) && m.role !== 'system' && m.status === 'pending' && !m.metadata?.queued);
    if (working) {
      this.set(transcript.streaming.get(working.id) ? 'writing' : 'thinking');
      return;
    }
    const settled = top.filter((m) => !m.metadata?.queued);
    const last = settled[settled.length - 1];
    if (!last) this.set(top.length ? 'thinking' : 'idle');
    else if (last.role === 'system' && last.metadata?.stopped_by_user) this.set('stopped');
    else if (fromHuman(last) || top.length > settled.length) this.set('thinking');
    else if (stoppedByUser(last)) this.set('stopped');
    else if (last.status === 'failed') this.set('error', failureState(last));
    else this.set(executing ? 'thinking' : 'idle');
  }

  fromMessage(message) {
    this.hasMessages = true;
    if (message.role === 'system' && message.metadata?.stopped_by_user) this.set('stopped');
    else if (waits(message)) this.set('waiting');
    else if (message.role === 'user' && message.metadata?.queued && this.kind !== 'writing') this.set('thinking');
    else if (!fromHuman(message) && message.status === 'pending' && this.kind !== 'writing') this.set('thinking');
    else if (stoppedByUser(message)) this.set('stopped');
    else if (!fromHuman(message) && message.status === 'failed') this.set('error', failureState(message));
    else this.update();
  }

  // The reason of the newest failed reply, else a general sentence.
  failedText(transcript) {
    const failed = transcript.ordered().filter((m) => !m.depth && m.status === 'failed' && !fromHuman(m) && !stoppedByUser(m));
    const last = failed[failed.length - 1];
    return last ? failureState(last) : 'The agent stopped because of an error. Send a message to try again.';
  }

  sessionEnded(reason, transcript) {
    if (reason === 'aborted_by_user') this.set('stopped');
    else if (FAILED.has(reason)) this.set('error', this.failedText(transcript));
    else if (transcript.ordered().some((m) => m.metadata?.queued)) this.set('thinking');
    else this.set('idle');
  }
}
