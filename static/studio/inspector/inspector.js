// The studio's live thread inspector: the conversation streaming (the chat page's own
// transcript, socket and frame handling), the request logs live from the logs socket, and
// the thread's state, waiting tool calls, files, values, effects and subagents.

import { api, csrf, threadPath } from '../../chat/api.js';
import { ThreadStream } from '../../chat/stream.js';
import { Transcript } from '../../chat/transcript.js';
import { TranscriptView } from '../../chat/render.js';
import { History } from '../../chat/history.js';
import { StateBar } from '../../chat/state.js';
import { applyFrame } from '../../chat/frames.js';
import { LogPane } from './logs.js';
import { renderEffects, renderFiles, renderPending, renderState, renderSubagents, renderValues } from './panels.js';

const $ = (id) => document.getElementById(id);
const boot = JSON.parse($('inspector-boot').textContent);
const PANEL_DELAY_MS = 400;
// Frames that change nothing the side panels show.
const QUIET = new Set(['message_chunk', 'reasoning_chunk', 'message_image', 'stream_pong', 'pong']);

const transcript = new Transcript();
const view = new TranscriptView($('transcript'), $('history-edge'));
const open = new Set();
// The conversation pane's own state line: what the session is doing right now, from frames.
// The chat page's words, except where they speak to the person chatting (there is no composer).
const STUDIO_WORDS = {
  idle: 'Idle.',
  stopped: 'Stopped.',
  waiting: 'Waiting for a decision on a tool call.',
};
class InspectorState extends StateBar {
  set(kind, detail) {
    super.set(kind, detail || STUDIO_WORDS[kind]);
  }
}
const streamState = new InspectorState($('stream-state'), document.createElement('button'), document.createElement('button'));
let agent = null;
let renderQueued = false;
let loaded = false; // the first page of messages arrived (before it, "no messages" would be a guess)

function render() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    view.render({
      transcript,
      threadId: boot.threadId,
      open,
      showReasoning: true,
      dual: boot.dual,
      sideLabel: (side) => (side === 'b' ? agent?.side_b_label || 'Side B' : agent?.side_a_label || 'Side A'),
      agentTitle: agent?.title,
    });
    history.show();
    history.maybeLoad();
    $('transcript-empty').hidden = transcript.messages.size > 0 || !loaded;
  });
}

const history = new History({ container: $('transcript'), edge: $('history-edge'), transcript, onChange: render });

function flash(text, isError = false) {
  const node = $('inspector-flash');
  node.hidden = !text;
  node.textContent = text || '';
  node.classList.toggle('is-error', isError);
}

// --- the conversation ------------------------------------------------------------------------

async function reloadMessages() {
  const known = [...transcript.messages.keys()];
  try {
    const data = await api(`${threadPath(boot.threadId)}/messages?limit=200&order=desc&depth=8&includeSilent=true`);
    transcript.merge(data.messages, known);
    loaded = true;
    history.newestLoaded(data.hasMore);
    streamState.fromTranscript(transcript);
  } catch (error) {
    flash(`Could not load the messages: ${error.message}`, true);
  }
  render();
}

function onStreamFrame(frame) {
  const settle = () => {
    reloadMessages();
    schedulePanels();
  };
  if (applyFrame(frame, { transcript, state: streamState, onSettle: settle, onResync: reloadMessages })) render();
  if (!QUIET.has(frame.type)) schedulePanels();
}

function socketState(node) {
  return (s) => {
    if (s.kind === 'connecting') node.textContent = 'connecting…';
    else if (s.kind === 'reconnecting') node.textContent = `reconnecting in ${Math.max(1, Math.round(s.delay / 1000))} s…`;
    else if (s.kind === 'fatal') {
      node.textContent = 'not connected';
      flash(s.message, true);
    }
  };
}

const stream = new ThreadStream(boot.threadId, {
  reasoning: true,
  onFrame: onStreamFrame,
  onOpen: () => {
    streamState.connected();
    reloadMessages();
  },
  onState: (s) => {
    if (s.kind === 'connecting') streamState.connecting();
    else if (s.kind === 'reconnecting') streamState.reconnecting(s.delay);
    else if (s.kind === 'fatal') flash(s.message, true);
  },
});

// --- the logs ----------------------------------------------------------------------------------

const logs = new LogPane({
  threadId: boot.threadId,
  list: $('log-list'),
  empty: $('logs-empty'),
  countNode: $('count-logs'),
  listView: $('log-list-view'),
  detailView: $('log-detail'),
  detailBody: $('log-detail-body'),
  back: $('log-back'),
  logUrl: boot.logUrl,
});

const logsLive = document.createElement('span');
const logStream = new ThreadStream(boot.threadId, {
  channel: 'logs',
  onFrame: (frame) => {
    if (frame.type === 'log_data') {
      logs.upsert(frame.log_id || frame.data?.id, frame.data || {});
      schedulePanels(); // the cost and the session's state move with the requests
    } else if (frame.type === 'stopped_by_user') {
      logs.stoppedByPerson();
      schedulePanels();
    } else if (frame.type === 'kv_data') schedulePanels();
  },
  onOpen: () => {
    logsLive.textContent = 'live';
    logs.reload(); // whatever happened while the socket was away
  },
  onState: socketState(logsLive),
});

// --- side panels and actions ---------------------------------------------------------------

let panelsTimer = null;
let panelsAsked = 0;

function schedulePanels() {
  clearTimeout(panelsTimer);
  panelsTimer = setTimeout(loadPanels, PANEL_DELAY_MS);
}

async function loadPanels() {
  const asked = ++panelsAsked;
  let data;
  try {
    data = await api(boot.panelsUrl);
  } catch (error) {
    flash(`Could not load the thread's state: ${error.message}`, true);
    return;
  }
  if (asked !== panelsAsked) return; // a later answer is on its way
  const ctx = { canAct: boot.canAct, decide, act: effectAction, inspectUrl };
  renderState(data, ctx);
  renderPending(data, ctx);
  renderFiles(data);
  renderValues(data);
  renderEffects(data, ctx);
  renderSubagents(data, ctx);
}

const inspectUrl = (id) => boot.inspectUrl.replace(boot.threadId, encodeURIComponent(id));

// The studio's own action views (they check the change permission) answer JSON when asked.
async function post(url, fields = {}) {
  const body = new URLSearchParams(fields);
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { Accept: 'application/json', 'X-CSRFToken': await csrf() },
      body,
      credentials: 'same-origin',
    });
    const data = await response.json().catch(() => ({ error: `The server answered ${response.status}.` }));
    if (!response.ok) return { error: data.error || `The server answered ${response.status}.` };
    return data;
  } catch {
    return { error: 'Cannot reach the server. Check your connection.' };
  } finally {
    schedulePanels();
  }
}

async function act(url, fields) {
  const outcome = await post(url, fields);
  flash(outcome.error || outcome.message, Boolean(outcome.error));
  return outcome;
}

const decide = (toolCallId, approve, reason) =>
  post(boot.actions.decide, { tool_call_id: toolCallId, approve: approve ? 'true' : 'false', reason });

const effectAction = (path) => act(`${boot.actions.effects}${path}`);

function wireActions() {
  $('inspector-stop').addEventListener('click', () => act(boot.actions.stop));
  $('inspector-continue').addEventListener('click', () => act(boot.actions.continue, { side: $('inspector-side')?.value || 'a' }));
}

// --- tabs ----------------------------------------------------------------------------------------

function wireTabs() {
  const tabs = [...document.querySelectorAll('[role=tab]')];
  const select = (tab) => {
    for (const t of tabs) {
      const on = t === tab;
      t.setAttribute('aria-selected', String(on));
      t.tabIndex = on ? 0 : -1;
      $(t.getAttribute('aria-controls')).hidden = !on;
    }
  };
  tabs.forEach((tab, i) => {
    tab.addEventListener('click', () => select(tab));
    tab.addEventListener('keydown', (event) => {
      const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
      if (!step) return;
      const next = tabs[(i + step + tabs.length) % tabs.length];
      select(next);
      next.focus();
    });
  });
}

async function loadAgent() {
  try {
    agent = (await api(threadPath(boot.threadId))).agent;
    render();
  } catch {
    // the transcript still shows; names fall back to "Assistant" / "Side A"
  }
}

const lightbox = $('lightbox');
lightbox.addEventListener('click', (event) => {
  if (event.target === lightbox) lightbox.close();
});

wireTabs();
wireActions();
history.open(boot.threadId);
$('tab-logs').append(' ', logsLive);
logsLive.className = 'pane-live';
loadAgent();
loadPanels();
stream.start();
logStream.start();
