// The transcript as DOM. Each block (a message, or a group of behind-the-scenes activity) keeps
// its element between renders and is rebuilt only when its data changed, so streaming a reply
// touches one element and open/closed blocks stay as the user left them.

import { api, fileUrl, threadPath } from './api.js';
import { el } from './dom.js';
import { renderMarkdown } from './markdown.js';
import { linkCitations, markCitations, sourcesList } from './citations.js';
import { interruptedByMessage, outcomeNote, stopNotice, stoppedByUser } from './failures.js';
import { feedbackBar, rateable } from './feedback.js';
import { branchBar } from './branches.js';
import { hiddenStep, progressNote, toolsView } from './tool_activity.js';


// Today's messages show the time; older ones the date too (a thread can span days), and the
// full date and time on hover.
const time = (us) => {
  const date = new Date(Number(us) / 1000);
  const clock = date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  const today = date.toDateString() === new Date().toDateString();
  const day = date.toLocaleDateString([], { day: 'numeric', month: 'short', year: date.getFullYear() === new Date().getFullYear() ? undefined : 'numeric' });
  return el('time', { datetime: date.toISOString(), title: date.toLocaleString(), text: today ? clock : `${day}, ${clock}` });
};

function parseCalls(message) {
  if (!message.tool_calls) return [];
  try {
    const calls = typeof message.tool_calls === 'string' ? JSON.parse(message.tool_calls) : message.tool_calls;
    return Array.isArray(calls) ? calls : [];
  } catch {
    return [];
  }
}

function pretty(text) {
  if (text === null || text === undefined || text === '') return '(empty)';
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return String(text);
  }
}

// A details element whose open state survives re-renders (keyed in ctx.open).
function details(ctx, key, className, summary, ...body) {
  const node = el('details', { className, 'data-key': key, open: ctx.open.has(key) }, el('summary', {}, summary), ...body);
  node.addEventListener('toggle', () => (node.open ? ctx.open.add(key) : ctx.open.delete(key)));
  return node;
}

// A call waiting for the user's approval (requiresApproval): the tool, its arguments, and
// Approve / Reject (with a reason) that answer POST …/tool-result.
function approvalPanel(ctx, name, result) {
  const wait = result.metadata.tool_wait;
  const callId = result.tool_call_id;
  const status = el('p', { className: 'approval-status', role: 'status' });
  const reason = el('input', { type: 'text', className: 'approval-reason', placeholder: 'Reason (required to reject)', 'aria-label': `Reason for rejecting ${name}` });
  const approve = el('button', { type: 'button', className: 'primary approve-button', text: 'Approve' });
  const reject = el('button', { type: 'button', className: 'danger reject-button', text: 'Reject' });
  const send = async (body, what) => {
    approve.disabled = reject.disabled = true;
    status.textContent = `${what}…`;
    try {
      await api(`${threadPath(ctx.threadId)}/tool-result`, { method: 'POST', json: { tool_call_id: callId, ...body } });
      status.textContent = `${what}. The agent continues.`;
    } catch (error) {
      status.textContent = error.message;
      approve.disabled = reject.disabled = false;
    }
  };
  approve.addEventListener('click', () => send({ approve: true }, 'Approved'));
  reject.addEventListener('click', () => {
    if (!reason.value.trim()) {
      status.textContent = 'Give a reason to reject this call.';
      reason.focus();
      return;
    }
    send({ approve: false, reason: reason.value.trim() }, 'Rejected');
  });
  const args = JSON.stringify(wait.arguments ?? {}, null, 2);
  return el('section', { className: 'approval', 'data-tool-call-id': callId, 'aria-label': `Approve or reject ${name}` },
    el('p', { className: 'approval-question' }, 'The agent wants to run ', el('code', { text: name }), '. Allow it?'),
    el('pre', { className: 'tool-args', text: args }),
    el('div', { className: 'approval-actions' }, approve, reject, reason),
    status);
}

// A remote MCP server's question to the person (elicitation): its message and the fields of
// its requested schema as a form; Send / Decline / Cancel answer POST …/inputs/{requestId}.
function inputField(name, spec, required) {
  const id = `mcp-input-${name}`;
  const label = el('label', { for: id, text: `${spec.title || name}${required ? ' (required)' : ''}` });
  let input;
  if (Array.isArray(spec.enum)) {
    input = el('select', { id, name }, ...spec.enum.map((v) => el('option', { value: String(v), text: String(v) })));
  } else if (spec.type === 'boolean') {
    input = el('input', { id, name, type: 'checkbox', checked: spec.default === true });
  } else {
    const numeric = spec.type === 'number' || spec.type === 'integer';
    input = el('input', { id, name, type: numeric ? 'number' : 'text', required, step: spec.type === 'integer' ? '1' : 'any' });
    if (spec.default !== undefined) input.value = String(spec.default);
  }
  const read = () => {
    if (spec.type === 'boolean') return input.checked;
    if (input.value === '') return undefined;
    if (spec.type === 'number') return Number(input.value);
    if (spec.type === 'integer') return Number.parseInt(input.value, 10);
    return input.value;
  };
  const hint = spec.description ? el('small', { text: spec.description }) : null;
  return { node: el('div', { className: 'mcp-input-field' }, label, input, hint), read };
}

function inputPanel(ctx, name, result) {
  const questions = result.metadata.tool_wait.input?.questions || [];
  const question = questions[0] || { message: 'The server asks for your input.', schema: {} };
  const schema = question.schema || {};
  const required = new Set(schema.required || []);
  const fields = Object.entries(schema.properties || {}).map(([key, spec]) => [key, inputField(key, spec || {}, required.has(key))]);
  const status = el('p', { className: 'approval-status', role: 'status' });
  const sendButton = el('button', { type: 'submit', className: 'primary', text: 'Send' });
  const decline = el('button', { type: 'button', className: 'danger', text: 'Decline' });
  const cancel = el('button', { type: 'button', text: 'Cancel' });
  const buttons = [sendButton, decline, cancel];
  const send = async (body, what) => {
    buttons.forEach((b) => (b.disabled = true));
    status.textContent = `${what}…`;
    try {
      await api(`${threadPath(ctx.threadId)}/inputs/${encodeURIComponent(result.id)}`, { method: 'POST', json: body });
      status.textContent = `${what}. The agent continues.`;
    } catch (error) {
      status.textContent = error.message;
      buttons.forEach((b) => (b.disabled = false));
    }
  };
  const form = el('form', { className: 'mcp-input-form' }, ...fields.map(([, f]) => f.node), el('div', { className: 'approval-actions' }, ...buttons));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const content = {};
    for (const [key, f] of fields) {
      const value = f.read();
      if (value !== undefined) content[key] = value;
    }
    send({ action: 'accept', content }, 'Sent');
  });
  decline.addEventListener('click', () => send({ action: 'decline' }, 'Declined'));
  cancel.addEventListener('click', () => send({ action: 'cancel' }, 'Cancelled'));
  return el('section', { className: 'approval mcp-input', 'data-tool-call-id': result.tool_call_id, 'aria-label': `Answer the question of ${name}` },
    // The model's name of the tool is <server>__<tool>: the person reads the server's name.
    el('p', { className: 'approval-question' }, 'The MCP server ', el('code', { text: name.split('__')[0] }), ' asks: ', question.message || ''),
    form,
    status);
}

// A tool result saying the person must connect their account to an MCP server: its link.
// Only this site's own path is linked (the text may come from a server).
const CONNECT = /\/mcp-servers\/(\d+)\/connect/;
function connectLink(result) {
  const found = result && result.tool_status === 'error' ? CONNECT.exec(String(result.content || '')) : null;
  return found ? el('a', { href: `/mcp-servers/${found[1]}/connect`, className: 'button mcp-connect', target: '_blank', rel: 'noopener', text: 'Connect your account' }) : null;
}

const waitingFor = (result) => result && result.status === 'pending' && result.metadata?.tool_wait && !result.metadata.tool_wait.decision ? result.metadata.tool_wait.kind : null;

function toolBlock(ctx, call, result) {
  const name = call?.function?.name || result?.name || 'tool';
  const waiting = waitingFor(result);
  if (waiting === 'approval') return approvalPanel(ctx, name, result);
  if (waiting === 'input') return inputPanel(ctx, name, result);
  const state = waiting ? 'waiting' : !result || result.status === 'pending' ? 'running' : result.tool_status === 'error' ? 'error' : 'done';
  const label = { running: 'running…', error: 'failed', done: 'done', waiting: waiting === 'variables' ? 'waiting for variables (answer through the API)' : 'waiting for the client' }[state];
  const summary = [el('span', { className: 'tool-icon', 'aria-hidden': 'true', text: '⚙' }), ' Tool ', el('code', { text: name }), ' ', el('span', { className: `badge ${state}`, text: label })];
  const progress = call ? progressNote(ctx, call, result) : null;
  if (progress) summary.push(' ', progress);
  const body = el('div', { className: 'tool-body' });
  if (call) body.append(el('h4', { text: 'Arguments' }), el('pre', { className: 'tool-args', text: pretty(call.function?.arguments) }));
  if (result && result.status !== 'pending') body.append(el('h4', { text: state === 'error' ? 'Error' : 'Result' }), el('pre', { className: 'tool-result', text: pretty(result.content) }));
  const connect = connectLink(result);
  if (connect) return el('div', { className: 'tool-with-connect' }, details(ctx, `tool:${call?.id || result?.id}`, `tool tool-${state}`, summary, body), connect);
  return details(ctx, `tool:${call?.id || result?.id}`, `tool tool-${state}`, summary, body);
}

// Images open larger in the page's lightbox (a plain click; a middle click still opens a tab).
function imageLink(ctx, a) {
  const url = fileUrl(ctx.threadId, a.path);
  const label = a.name || 'attached image';
  const link = el('a', { href: url, target: '_blank', rel: 'noopener', className: 'msg-image', title: `${label} (click to enlarge)` },
    el('img', { src: url, alt: a.generated ? `Generated image ${label}` : label, loading: 'lazy' }));
  link.addEventListener('click', (event) => {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
    event.preventDefault();
    openLightbox(url, label);
  });
  return link;
}

export function openLightbox(url, caption) {
  const dialog = document.getElementById('lightbox');
  if (!dialog) return;
  dialog.querySelector('img').src = url;
  dialog.querySelector('img').alt = caption;
  dialog.querySelector('figcaption').textContent = caption;
  dialog.querySelector('a.lightbox-open').href = url;
  dialog.showModal();
}

const sizeText = (bytes) => (typeof bytes === 'number' ? ` (${bytes < 1048576 ? `${Math.max(1, Math.round(bytes / 1024))} KB` : `${(bytes / 1048576).toFixed(1)} MB`})` : '');

function attachments(ctx, message, extra = []) {
  const list = [...(message.attachments || []), ...extra].filter((a) => a && a.path);
  if (!list.length) return null;
  return el(
    'div',
    { className: 'msg-attachments' },
    list.map((a) =>
      String(a.mimeType || '').startsWith('image/') && a.mimeType !== 'image/svg+xml'
        ? imageLink(ctx, a)
        : el('a', { href: fileUrl(ctx.threadId, a.path), target: '_blank', rel: 'noopener', className: 'msg-file', text: `${a.name || a.path}${sizeText(a.size)}` }),
    ),
  );
}

// In dual_ai threads side B's replies are stored with role "user" (the reference's view from
// side A); what a person typed is the user row that no prompt wrote.
export const fromHuman = (m) => m.role === 'user' && !m.prompt_name && !m.log_id;

function author(ctx, message) {
  if (fromHuman(message)) return 'You';
  if (ctx.dual && message.side) return ctx.sideLabel(message.side);
  return ctx.agentTitle || 'Assistant';
}

function messageBlock(ctx, message, results) {
  const t = ctx.transcript;
  const streamed = t.streaming.get(message.id);
  const human = fromHuman(message);
  const role = human ? 'user' : 'assistant';
  const streaming = message.status === 'pending' && !human && !message.metadata?.queued;
  if (message.role === 'system') {
    const stopped = message.metadata?.stopped_by_user;
    // A newer message that cut the reply short is no alarm: the neutral notice, not the red one.
    const kind = stopped ? (interruptedByMessage(message) ? ' notice-interrupted' : ' notice-stopped') : '';
    return el('div', { className: `notice${kind}`, 'data-message-id': message.id, role: 'note' }, stopped ? stopNotice(message) : message.content || '');
  }
  if (message.role === 'tool') return el('div', { className: 'msg msg-tool', 'data-message-id': message.id }, toolBlock(ctx, null, message));
  const side = ctx.dual && message.side && !human ? ` side-${message.side}` : '';
  const queued = message.metadata?.queued;
  const node = el('article', {
    className: `msg msg-${role}${side}${message.status === 'failed' && !stoppedByUser(message) ? ' msg-failed' : ''}`,
    'data-message-id': message.id,
    'data-role': message.role,
    'data-status': message.status || 'completed',
    'data-streaming': streaming ? 'true' : null,
  });
  const head = el('header', { className: 'msg-head' }, el('span', { className: 'author', text: author(ctx, message) }), ' ', time(message.created_at));
  if (queued) head.append(' ', el('span', { className: 'badge queued', text: 'queued' }));
  if (stoppedByUser(message)) head.append(' ', el('span', { className: 'badge stopped', text: 'stopped' }));
  else if (message.status === 'failed') head.append(' ', el('span', { className: 'badge error', text: 'failed' }));
  node.append(head);
  const reasoning = message.reasoning_content || t.reasoning.get(message.id);
  if (ctx.showReasoning && reasoning) {
    node.append(details(ctx, `reasoning:${message.id}`, 'reasoning', 'Reasoning', el('div', { className: 'reasoning-body', text: reasoning })));
  }
  const text = message.content ?? streamed ?? '';
  const body = el('div', { className: `msg-body${streaming ? ' streaming' : ''}` });
  const cited = !human && !streaming && Array.isArray(message.citations) ? markCitations(text, message.citations) : null;
  if (human) body.append(el('p', { className: 'plain', text }));
  else if (cited && cited.sources.length) body.append(linkCitations(renderMarkdown(cited.text), cited.sources));
  else if (text) body.append(renderMarkdown(text));
  else if (streaming && !parseCalls(message).length) body.append(el('span', { className: 'typing', 'aria-label': 'writing', text: '…' }));
  if (body.childNodes.length) node.append(body);
  const outcome = outcomeNote(message, { logUrl: ctx.logUrl });
  if (outcome) node.append(outcome);
  if (cited && cited.sources.length) node.append(sourcesList(cited.sources));
  const calls = parseCalls(message);
  const tools = calls.length ? toolsView(ctx, calls, results, toolBlock) : null;
  if (tools) node.append(tools);
  const files = attachments(ctx, message, message.attachments?.length ? [] : t.images.get(message.id) || []);
  if (files) node.append(files);
  // Final answers only: a step that calls tools is on the way to one.
  if (!human && ctx.rerender && !calls.length && rateable(message, streaming)) node.append(feedbackBar(ctx, message));
  const branch = ctx.rerender ? branchBar(ctx, message, { human, streaming, final: !calls.length }) : null;
  if (branch) node.append(branch);
  return node;
}

function activityBlock(ctx, key, items) {
  const count = items.length;
  const list = el('ol', { className: 'activity-list' });
  for (const item of items) {
    if (item.kind === 'event') {
      list.append(el('li', { className: 'activity-event' }, el('code', { text: item.event.eventType }), ' ', describeEvent(item.event)));
    } else {
      const m = item.message;
      const li = el('li', { className: 'activity-msg', 'data-message-id': m.id });
      li.append(el('span', { className: 'activity-role', text: `${m.role}${m.depth ? ` · level ${m.depth}` : ''}` }), ' ');
      const calls = parseCalls(m);
      if (m.content) li.append(el('span', { className: 'activity-text', text: m.content.length > 400 ? `${m.content.slice(0, 400)}…` : m.content }));
      for (const c of calls) li.append(' ', el('code', { text: `${c.function?.name}(${c.function?.arguments || ''})` }));
      list.append(li);
    }
  }
  const words = count === 1 ? '1 step' : `${count} steps`;
  return details(ctx, key, 'activity', [el('span', { className: 'activity-icon', 'aria-hidden': 'true', text: '↳' }), ` Behind the scenes: ${words} by helpers`], list);
}

function describeEvent(event) {
  const d = event.data || {};
  const who = d.subagentType || d.name || d.agent || '';
  if (event.eventType === 'subagent_event') return `${who}: ${d.innerEvent?.type || ''}${d.innerEvent?.eventType ? ` ${d.innerEvent.eventType}` : ''}`;
  return who;
}

// Blocks in order: [{key, sig, build}] where sig changes whenever the block's content does.
function layout(ctx) {
  const t = ctx.transcript;
  const ordered = t.ordered();
  const results = new Map();
  const called = new Set();
  for (const m of ordered) for (const c of parseCalls(m)) called.add(c.id);
  for (const m of ordered) if (m.role === 'tool' && m.tool_call_id) results.set(m.tool_call_id, m);
  const items = [];
  for (const m of ordered) {
    if (m.role === 'tool' && !m.depth && called.has(m.tool_call_id)) continue;
    if (hiddenStep(ctx, m, parseCalls(m))) continue;
    items.push({ kind: 'message', at: m.created_at, message: m });
  }
  for (const e of t.events) items.push({ kind: 'event', at: e.timestamp * 1000, event: e });
  items.sort((a, b) => a.at - b.at);
  const blocks = [];
  let group = null;
  for (const item of items) {
    const deep = item.kind === 'event' || item.message.depth > 0;
    if (deep) {
      if (!group) {
        group = { items: [], key: `g:${item.kind === 'event' ? `e${item.at}` : item.message.id}` };
        blocks.push(group);
      }
      group.items.push(item);
      continue;
    }
    group = null;
    const m = item.message;
    const calls = parseCalls(m).map((c) => [results.get(c.id) || null, t.progress.get(c.id) || null]);
    blocks.push({ key: `m:${m.id}`, message: m, sig: JSON.stringify([m, t.streaming.get(m.id), t.reasoning.get(m.id), t.ratings.get(m.id), calls, ctx.showReasoning, ctx.dual, ctx.toolActivity]) });
  }
  return blocks.map((b) =>
    b.message
      ? { key: b.key, sig: b.sig, build: () => messageBlock(ctx, b.message, results) }
      : { key: b.key, sig: JSON.stringify(b.items.map((i) => i.message || i.event)), build: () => activityBlock(ctx, b.key, b.items) },
  );
}

export class TranscriptView {
  // `head` (optional) stays the container's first child: the history edge above the rows.
  constructor(container, head = null) {
    this.container = container;
    this.head = head;
    this.nodes = new Map(); // key -> {sig, node}
  }

  // The first block visible at the top, and where it is: rows added or rebuilt above it
  // (older history paged in) must not move what the reader is looking at.
  anchor() {
    const top = this.container.getBoundingClientRect().top;
    const keyOf = new Map([...this.nodes].map(([key, entry]) => [entry.node, key]));
    for (const node of this.container.children) {
      const box = node.getBoundingClientRect();
      if (keyOf.has(node) && box.bottom > top) return { key: keyOf.get(node), top: box.top };
    }
    return null;
  }

  render(ctx) {
    const nearBottom = this.container.scrollHeight - this.container.scrollTop - this.container.clientHeight < 80;
    const anchor = nearBottom ? null : this.anchor();
    const blocks = layout(ctx);
    const keep = new Set();
    let previous = null;
    for (const block of blocks) {
      keep.add(block.key);
      let entry = this.nodes.get(block.key);
      if (!entry || entry.sig !== block.sig) {
        const node = block.build();
        if (entry) entry.node.replaceWith(node);
        entry = { sig: block.sig, node };
        this.nodes.set(block.key, entry);
      }
      const expected = previous ? previous.nextSibling : this.head ? this.head.nextSibling : this.container.firstChild;
      if (expected !== entry.node) this.container.insertBefore(entry.node, expected);
      previous = entry.node;
    }
    for (const [key, entry] of this.nodes) {
      if (!keep.has(key)) {
        entry.node.remove();
        this.nodes.delete(key);
      }
    }
    if (nearBottom) this.container.scrollTop = this.container.scrollHeight;
    else if (anchor && this.nodes.has(anchor.key)) {
      this.container.scrollTop += this.nodes.get(anchor.key).node.getBoundingClientRect().top - anchor.top;
    }
  }

  clear() {
    this.container.replaceChildren(...(this.head ? [this.head] : []));
    this.nodes.clear();
  }
}
