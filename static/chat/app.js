// The chat page: agent picker, thread list, one thread's live transcript and the composer.

import { api, threadPath } from './api.js';
import { ThreadStream } from './stream.js';
import { Transcript } from './transcript.js';
import { TranscriptView } from './render.js';
import { ACCEPT_ATTRIBUTE, readAttachments, renderAttachmentChips } from './attachments.js';
import { renderThreadList } from './threads.js';
import { StateBar } from './state.js';
import { History } from './history.js';
import { applyFrame } from './frames.js';
import { toolActivityMode } from './tool_activity.js';

const $ = (id) => document.getElementById(id);
const boot = (id) => JSON.parse($(id).textContent);
const query = new URLSearchParams(location.search);
const embed = document.body.classList.contains('embed');
const REASONING_KEY = 'chat.showReasoning';

const page = {
  threadId: boot('boot-thread-id') || null,
  agents: [],
  agent: null, // the chosen agent (new chat) or the thread's agent
  transcript: new Transcript(),
  view: new TranscriptView($('transcript'), $('history-edge')),
  stream: null,
  open: new Set(),
  pendingFiles: [],
  showReasoning: localStorage.getItem(REASONING_KEY) === '1',
  renderQueued: false,
};

const state = new StateBar($('state'), $('stop-button'), $('continue-button'));
page.history = new History({ container: $('transcript'), edge: $('history-edge'), transcript: page.transcript, onChange: render });
const SEARCH_DELAY_MS = 250;

function chatUrl(threadId) {
  const base = threadId ? `/chat/t/${encodeURIComponent(threadId)}` : '/chat/';
  return embed ? `${base}?embed=1` : base;
}

function showError(message) {
  const box = $('page-error');
  box.hidden = !message;
  box.textContent = message || '';
}

function sideLabel(side) {
  const a = page.agent || {};
  return side === 'b' ? a.side_b_label || 'Side B' : a.side_a_label || 'Side A';
}

const isDual = (agent) => agent && agent.side_a_backing === 'prompt' && agent.side_b_backing === 'prompt';

function render() {
  if (page.renderQueued) return;
  page.renderQueued = true;
  requestAnimationFrame(() => {
    page.renderQueued = false;
    state.toolActivity = toolActivityMode(page.agent, boot('boot-is-staff'));
    page.view.render({
      transcript: page.transcript,
      threadId: page.threadId,
      open: page.open,
      showReasoning: page.showReasoning,
      dual: isDual(page.agent),
      sideLabel,
      agentTitle: page.agent?.title,
      logUrl: staffLogUrl(),
      feedbackReasons: page.agent?.feedback_reasons || [],
      toolActivity: state.toolActivity,
      rerender: render,
    });
    showReasoningOption();
    page.history.show();
    page.history.maybeLoad(); // a short first page does not fill the view: keep going up
  });
}

// Staff who may read logs in the studio get a link from a failed reply to its log.
function staffLogUrl() {
  if (!boot('boot-can-view-logs')) return null;
  return (logId) => `/admin/agents_app/log/${encodeURIComponent(logId)}/change/`;
}

// "Show reasoning" only where there is reasoning to show: the server says whether the agent's
// prompts return it; a model that reasons unasked shows it in its stored rows.
function showReasoningOption() {
  const stored = [...page.transcript.messages.values()].some((m) => m.reasoning_content);
  $('reasoning-option').hidden = !(page.agent?.reasoning || stored);
}

// --- the thread list ---------------------------------------------------------------------

let threadsAsked = 0; // answers to an older search that arrive late are dropped

async function loadThreads() {
  if (embed) return;
  const status = $('threads-status');
  const words = $('thread-search').value.trim();
  const asked = ++threadsAsked;
  const params = new URLSearchParams({ limit: '50', sort: 'activity' });
  // Your chats are your own: staff, who may list everyone's, find others' in the studio.
  params.set('user_id', String(boot('boot-user-id')));
  if (words) params.set('q', words);
  try {
    const data = await api(`/api/threads?${params}`);
    if (asked !== threadsAsked) return;
    const none = words ? `No chats match “${words}”.` : 'No chats yet. Pick an agent and say hello.';
    status.textContent = data.threads.length ? '' : none;
    renderThreadList($('thread-list'), data.threads, page.threadId, chatUrl);
  } catch (error) {
    if (asked === threadsAsked) status.textContent = `Could not load your chats: ${error.message}`;
  }
}

function wireSearch() {
  const box = $('thread-search');
  if (!box) return;
  let timer = null;
  box.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(loadThreads, SEARCH_DELAY_MS);
  });
}

// --- one thread ----------------------------------------------------------------------------

// ``withActivity``: also ask whether a session runs now (on each socket open: what the
// socket says from then on keeps the state right, so the flag is never stale for long).
async function reload({ withActivity = false } = {}) {
  const known = [...page.transcript.messages.keys()];
  try {
    const [data, detail] = await Promise.all([
      api(`${threadPath(page.threadId)}/messages?limit=200&order=desc&depth=8`),
      withActivity ? api(threadPath(page.threadId)) : null,
    ]);
    page.transcript.merge(data.messages, known);
    page.history.newestLoaded(data.hasMore);
    state.fromTranscript(page.transcript, Boolean(detail?.thread?.executing));
    if (page.loadFailed) showError('');
    page.loadFailed = false;
  } catch (error) {
    page.loadFailed = true;
    showError(`Could not load the messages: ${error.message}`);
  }
  render();
}

function onFrame(frame) {
  const settle = () => {
    reload();
    loadThreads();
  };
  if (applyFrame(frame, { transcript: page.transcript, state, onSettle: settle, onResync: reload })) render();
}

let opened = null;

function openStream() {
  page.stream?.close();
  let resolveOpen;
  opened = new Promise((resolve) => (resolveOpen = resolve));
  page.stream = new ThreadStream(page.threadId, {
    reasoning: page.showReasoning,
    onFrame,
    onOpen: () => {
      resolveOpen();
      state.connected();
      reload({ withActivity: true }); // catches up on whatever happened while the socket was away
    },
    onState: (s) => {
      if (s.kind === 'connecting') state.connecting();
      else if (s.kind === 'reconnecting') state.reconnecting(s.delay);
      else if (s.kind === 'fatal') {
        state.set('error', s.message);
        showError(s.message);
      }
    },
  });
  page.stream.start();
  if (query.get('test_hooks') === '1') window.chatTest = { drop: (ms) => page.stream.drop(ms) };
}

async function openThread(threadId) {
  page.threadId = threadId;
  page.history.open(threadId);
  const inspect = $('inspect-link'); // staff only: the studio's live inspector of this thread
  if (inspect) {
    inspect.href = `/admin/agents_app/thread/${encodeURIComponent(threadId)}/inspect/`;
    inspect.hidden = false;
  }
  $('agent-picker').hidden = true;
  try {
    const detail = await api(threadPath(threadId));
    page.agent = detail.agent;
    setTitle(detail.agent);
    state.setDual(isDual(detail.agent));
  } catch (error) {
    showError(error.status === 404 || error.status === 403 ? `${error.message}. Pick another chat or start a new one.` : error.message);
    state.set('error', 'This chat could not be opened.');
    $('composer').hidden = true;
    return;
  }
  openStream();
}

function setTitle(agent) {
  const dual = isDual(agent);
  $('conversation-title').textContent = agent.title || agent.id || agent.name;
  $('agent-description').textContent = dual
    ? `${sideLabel('a')} and ${sideLabel('b')} talk to each other. Send a message to start; press Continue for more.`
    : agent.description || '';
  document.title = `${agent.title || agent.name} · Agents`;
}

// --- a new chat ----------------------------------------------------------------------------

async function loadAgents() {
  const select = $('agent-select');
  try {
    page.agents = (await api('/api/agents')).agents;
  } catch (error) {
    showError(`Could not load the agents: ${error.message}`);
    return;
  }
  if (!page.agents.length) {
    showError('No agents are available yet. Ask an administrator to create one in the studio.');
    return;
  }
  // Agents with primary: false (spec 0.2.0) are reached through other agents, not picked.
  select.replaceChildren(
    ...page.agents.filter((a) => a.primary !== false).map((a) => {
      const option = document.createElement('option');
      option.value = a.name;
      option.textContent = a.type === 'dual_ai' ? `${a.title} (two AIs)` : a.title;
      return option;
    }),
  );
  const wanted = boot('boot-agent') || localStorage.getItem('chat.agent');
  if (page.agents.some((a) => a.name === wanted)) select.value = wanted;
  chooseAgent(select.value);
  select.addEventListener('change', () => chooseAgent(select.value, true));
}

function chooseAgent(name, byUser = false) {
  page.agent = page.agents.find((a) => a.name === name) || null;
  if (!page.agent) return;
  $('agent-select-description').textContent = page.agent.description || '';
  render(); // the reasoning toggle follows the chosen agent
  $('conversation-title').textContent = 'New chat';
  $('agent-description').textContent = '';
  state.setDual(page.agent.type === 'dual_ai');
  if (byUser) {
    localStorage.setItem('chat.agent', name);
    const params = new URLSearchParams(location.search);
    params.set('agent', name);
    history.replaceState(null, '', `/chat/?${params}`);
  }
}

async function startThread() {
  const data = await api('/api/threads', { method: 'POST', json: { agent_id: page.agent.name } });
  localStorage.setItem('chat.agent', page.agent.name);
  history.pushState(null, '', chatUrl(data.threadId));
  await openThread(data.threadId);
  // Wait (briefly) for the socket so the first reply streams live; the reload catches up anyway.
  await Promise.race([opened, new Promise((resolve) => setTimeout(resolve, 5000))]);
  loadThreads();
}

// --- the composer --------------------------------------------------------------------------

async function send() {
  const input = $('composer-input');
  const content = input.value.trim();
  const files = page.pendingFiles;
  if (!content && !files.length) {
    input.focus();
    return;
  }
  showError('');
  const button = $('send-button');
  button.disabled = true;
  let startedHere = false;
  try {
    if (!page.threadId) {
      await page.agentsLoaded;
      if (!page.agent) throw new Error('Choose an agent first.');
      await startThread();
      startedHere = true;
    }
    // A person on side A (spec 0.2.0) writes as side A, whose stored role is "assistant".
    const role = page.agent?.side_a_backing === 'human' ? 'assistant' : 'user';
    const json = { role, content };
    if (files.length) json.attachments = files.map(({ name, mimeType, data }) => ({ name, mimeType, data }));
    input.value = '';
    page.pendingFiles = [];
    renderAttachmentChips($('attachments'), page.pendingFiles, removeFile);
    showAttachError('');
    state.set('sending');
    await api(`${threadPath(page.threadId)}/messages`, { method: 'POST', json });
    // Frames may already have moved on (the reply can start before the 202 arrives).
    if (state.kind === 'sending') state.set('thinking');
    loadThreads(); // the list's preview shows this message rather than "No messages yet"
  } catch (error) {
    // A chat whose first message was refused (a budget, a rate) would stay in the list
    // empty: remove it, so trying again starts clean.
    if (startedHere && page.threadId && !page.transcript.messages.size) await abandonThread();
    if (!input.value) input.value = content;
    showError(`Your message was not sent: ${error.message}`);
    state.set('error', 'Message not sent.');
  } finally {
    button.disabled = false;
    input.focus();
  }
}

async function abandonThread() {
  try {
    await api(threadPath(page.threadId), { method: 'DELETE' });
  } catch (error) {
    return; // keeping an empty chat is better than hiding the refusal behind another error
  }
  if (page.stream) page.stream.close();
  page.stream = null;
  page.threadId = null;
  page.history.open(null);
  const inspect = $('inspect-link');
  if (inspect) inspect.hidden = true;
  // The thread's agent (`id`) is the one picked: back to the picker's own entry (`name`), its
  // description shown once, under the picker, and the address naming it.
  const name = page.agent?.name || page.agent?.id;
  chooseAgent(page.agents.some((a) => a.name === name) ? name : $('agent-select').value);
  $('agent-picker').hidden = false;
  document.title = 'New chat · Agents';
  history.replaceState(null, '', `/chat/?agent=${encodeURIComponent(page.agent?.name || name || '')}`);
  loadThreads();
}

async function addFiles(fileList) {
  const { files, errors } = await readAttachments(fileList, page.pendingFiles);
  page.pendingFiles.push(...files);
  renderAttachmentChips($('attachments'), page.pendingFiles, removeFile);
  showAttachError(errors.join(' '));
}

function showAttachError(text) {
  const node = $('attach-error');
  node.textContent = text;
  node.hidden = !text;
}

function removeFile(index) {
  page.pendingFiles.splice(index, 1);
  renderAttachmentChips($('attachments'), page.pendingFiles, removeFile);
  $('attach-button').focus();
}

async function postAction(path, json) {
  showError('');
  try {
    return await api(`${threadPath(page.threadId)}/${path}`, { method: 'POST', json: json || {} });
  } catch (error) {
    showError(error.message);
    return null;
  }
}

function wireComposer() {
  const input = $('composer-input');
  $('composer').addEventListener('submit', (event) => {
    event.preventDefault();
    send();
  });
  input.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send();
    }
  });
  $('file-input').setAttribute('accept', ACCEPT_ATTRIBUTE);
  $('attach-button').addEventListener('click', () => $('file-input').click());
  $('file-input').addEventListener('change', async (event) => {
    await addFiles(event.target.files);
    event.target.value = '';
  });
  // Drag and drop anywhere on the composer; paste of images copied to the clipboard.
  const composer = $('composer');
  composer.addEventListener('dragover', (event) => {
    if (![...(event.dataTransfer?.types || [])].includes('Files')) return;
    event.preventDefault();
    composer.classList.add('dropping');
  });
  composer.addEventListener('dragleave', () => composer.classList.remove('dropping'));
  composer.addEventListener('drop', async (event) => {
    composer.classList.remove('dropping');
    if (!event.dataTransfer?.files?.length) return;
    event.preventDefault();
    await addFiles(event.dataTransfer.files);
  });
  input.addEventListener('paste', async (event) => {
    const files = [...(event.clipboardData?.files || [])];
    if (!files.length) return; // plain text pastes as usual
    event.preventDefault();
    await addFiles(files);
  });
  $('stop-button').addEventListener('click', async () => {
    state.set('stopping');
    if (await postAction('stop')) state.set('stopped');
  });
  $('continue-button').addEventListener('click', async () => {
    state.set('thinking');
    if (!(await postAction('continue'))) state.set('error', 'Could not continue.');
  });
  const toggle = $('reasoning-toggle');
  toggle.checked = page.showReasoning;
  toggle.addEventListener('change', () => {
    page.showReasoning = toggle.checked;
    localStorage.setItem(REASONING_KEY, toggle.checked ? '1' : '0');
    if (page.threadId) openStream(); // reasoning chunks only flow on a socket opened with reasoning=1
    render();
  });
  const lightbox = $('lightbox');
  lightbox.addEventListener('click', (event) => {
    if (event.target === lightbox) lightbox.close(); // a click on the backdrop
  });
  const drawer = $('threads-toggle');
  if (drawer) {
    drawer.addEventListener('click', () => {
      const open = drawer.getAttribute('aria-expanded') !== 'true';
      drawer.setAttribute('aria-expanded', String(open));
      document.body.classList.toggle('sidebar-open', open);
    });
  }
}

window.addEventListener('popstate', () => location.reload());

wireComposer();
wireSearch();
loadThreads();
if (page.threadId) {
  openThread(page.threadId);
} else {
  $('agent-picker').hidden = false;
  state.set('idle', 'Choose an agent and send a message to start.');
  page.agentsLoaded = loadAgents();
}
