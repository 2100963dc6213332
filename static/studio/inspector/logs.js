// The inspector's log pane: every request and tool call of the thread, live from `log_data`
// frames of the logs socket, nested (retries and fallbacks under the request they repeat,
// sub-prompt work under the call that started it), and one log's detail on demand.

import { api, threadPath } from '../../chat/api.js';
import { el } from '../../chat/dom.js';
import { clock, count, duration, usd } from './format.js';

const MAX_LADDER = 50;
const VENDORS = { openai: 'OpenAI', anthropic: 'Anthropic', google: 'Google', openrouter: 'OpenRouter', test: 'Test' };
const vendor = (name) => VENDORS[name] || name;

// Rows of the API (`GET …/logs`) and of `log_data` frames differ in a few names over time;
// read both.
const modelOf = (log) => log.model || log.model_name || '';
// A request a person stopped is no failure (as on the Logs page). The API says so
// (`stopped_by_user`; a stop before any text stays `interrupted` in the data). Live frames
// do not: the engine closes the request as `interrupted` before the stop's tidy-up, so the
// pane also counts the requests a `stopped_by_user` frame followed.
const isStopped = (log, stopped) => log.error_type === 'stopped' || Boolean(log.stopped_by_user) || Boolean(stopped?.has(log.id));
const isError = (log, stopped) => !isStopped(log, stopped) && Boolean(log.error || log.error_type);

function statusBadge(log, stopped) {
  if (!log.is_complete) return el('span', { className: 'log-badge log-running', text: 'running…' });
  if (isStopped(log, stopped)) return el('span', { className: 'log-badge log-stopped', title: 'Stopped by a person', text: '■ Stopped' });
  if (isError(log, stopped)) return el('span', { className: 'log-badge log-error', text: log.error_type === 'interrupted' ? 'interrupted' : 'failed' });
  return el('span', { className: 'log-badge log-done', text: log.finish_reason || 'done' });
}

function summary(log) {
  if (log.kind === 'tool') return ['Tool ', el('code', { text: log.tool_name || '?' })];
  if (log.kind === 'system') return ['Runtime ', el('code', { text: log.tool_name || log.error_type || 'event' })];
  const parts = [el('strong', { text: modelOf(log) || 'model' })];
  if (log.prompt_name) parts.push(' · ', el('span', { text: log.prompt_name }));
  return parts;
}

function numbers(log) {
  if (!log.is_complete) return 'in progress: numbers come when it completes';
  const bits = [];
  if (log.kind === 'llm') {
    bits.push(`${count(log.input_tokens)} in`);
    if (log.cached_tokens) bits.push(`${count(log.cached_tokens)} cached`);
    // null: no price was known for the model (docs/providers.md "Cost"), never "$0.00".
    bits.push(`${count(log.output_tokens)} out`, log.cost_total === null ? 'cost unknown' : usd(log.cost_total));
  }
  if (log.latency_ms !== null && log.latency_ms !== undefined) bits.push(duration(log.latency_ms));
  return bits.join(' · ');
}

export class LogPane {
  constructor({ threadId, list, empty, countNode, listView, detailView, detailBody, back, logUrl, onDetail }) {
    Object.assign(this, { threadId, list, empty, countNode, listView, detailView, detailBody, logUrl, onDetail });
    this.logs = new Map();
    this.stopped = new Set(); // requests a person's stop cut short (see isStopped)
    this.cutShort = new Set(); // interrupted since the last request that went on: a stop's, if one follows
    this.openId = null;
    this.view = null; // "View as" provider of the detail shown
    this.queued = false;
    back.addEventListener('click', () => this.closeDetail());
  }

  async reload() {
    try {
      const data = await api(`${threadPath(this.threadId)}/logs?order=desc&limit=500`);
      for (const log of data.logs) this.logs.set(log.id, log);
      this.total = data.total;
    } catch (error) {
      this.empty.hidden = false;
      this.empty.textContent = `Could not load the requests: ${error.message}`;
    }
    this.render();
  }

  upsert(id, data) {
    const log = { ...(this.logs.get(id) || {}), ...data, id };
    this.logs.set(id, log);
    // A worker that died leaves its request `interrupted` too, but the session then goes on
    // with a new request; a stop ends it, and its `stopped_by_user` frame comes next.
    if (log.error_type === 'interrupted') this.cutShort.add(id);
    else if (!log.is_complete) this.cutShort.clear();
    this.render();
    if (id === this.openId && log.is_complete) this.open(id, { keepScroll: true });
  }

  // The session's stop frame: the requests it cut short are a person's stop, not a failure.
  stoppedByPerson() {
    for (const id of this.cutShort) this.stopped.add(id);
    this.cutShort.clear();
    this.render();
    if (this.openId && this.stopped.has(this.openId)) this.open(this.openId, { keepScroll: true });
  }

  // Ladders (attempt 1, its retries and fallbacks), each nested under the log of the call that
  // started its prompt; top level newest first, nested rows in the order they happened.
  tree() {
    const logs = [...this.logs.values()];
    const byId = this.logs;
    const ladderRoot = (log) => {
      let current = log;
      for (let i = 0; i < MAX_LADDER && current.retry_of_log_id && byId.has(current.retry_of_log_id); i += 1) {
        current = byId.get(current.retry_of_log_id);
      }
      return current.id;
    };
    const ladders = new Map();
    const ladderOf = new Map();
    for (const log of logs) {
      const root = ladderRoot(log);
      if (!ladders.has(root)) ladders.set(root, { id: root, rungs: [], children: [] });
      ladders.get(root).rungs.push(log);
      ladderOf.set(log.id, root);
    }
    const top = [];
    for (const ladder of ladders.values()) {
      ladder.rungs.sort((a, b) => a.created_at - b.created_at);
      ladder.at = ladder.rungs[0].created_at;
      const parent = ladders.get(ladderOf.get(ladder.rungs[0].parent_log_id));
      (parent && parent !== ladder ? parent.children : top).push(ladder);
    }
    for (const ladder of ladders.values()) ladder.children.sort((a, b) => a.at - b.at);
    top.sort((a, b) => b.at - a.at);
    return top;
  }

  render() {
    if (this.queued) return;
    this.queued = true;
    requestAnimationFrame(() => {
      this.queued = false;
      const top = this.tree();
      this.list.replaceChildren(...top.map((ladder) => this.item(ladder)));
      this.empty.hidden = this.logs.size > 0;
      this.countNode.textContent = this.logs.size ? String(this.logs.size) : '';
    });
  }

  item(ladder) {
    const last = ladder.rungs[ladder.rungs.length - 1];
    const row = el('button', { type: 'button', className: `log-row log-${last.kind}${isError(last, this.stopped) ? ' log-failed' : ''}${isStopped(last, this.stopped) ? ' log-stopped-row' : ''}`, 'data-log-id': last.id, 'aria-current': last.id === this.openId ? 'true' : null },
      el('span', { className: 'log-line' }, el('span', { className: 'log-what' }, ...summary(last)), statusBadge(last, this.stopped)),
      el('span', { className: 'log-line log-numbers' }, el('span', { text: numbers(last) }), el('time', { text: clock(last.created_at) })));
    row.addEventListener('click', () => this.open(last.id));
    const li = el('li', { className: 'log-item' }, row);
    if (ladder.rungs.length > 1) {
      li.append(el('ol', { className: 'log-attempts', 'aria-label': 'Attempts of this request' },
        ladder.rungs.map((rung, i) => {
          const fallback = i > 0 && modelOf(rung) !== modelOf(ladder.rungs[i - 1]);
          const what = i === 0 ? 'Attempt 1' : `${fallback ? 'Fallback' : 'Retry'}: attempt ${rung.attempt || i + 1}`;
          const button = el('button', { type: 'button', className: 'link-like', 'data-log-id': rung.id }, `${what} · ${modelOf(rung)} · `, statusBadge(rung, this.stopped));
          button.addEventListener('click', () => this.open(rung.id));
          return el('li', {}, button, rung.error ? el('span', { className: 'log-rung-error', text: ` ${rung.error.split('\n')[0].slice(0, 140)}` }) : null);
        })));
    }
    if (ladder.children.length) li.append(el('ol', { className: 'log-children', 'aria-label': 'Work inside this call' }, ladder.children.map((c) => this.item(c))));
    return li;
  }

  // The log before / after `id` in time (any kind, any depth): "Older" and "Newer" in the detail.
  neighbour(id, step) {
    const ordered = [...this.logs.values()].sort((a, b) => a.created_at - b.created_at || (a.id < b.id ? -1 : 1));
    const at = ordered.findIndex((l) => l.id === id);
    return at < 0 ? null : ordered[at + step] || null;
  }

  closeDetail() {
    this.openId = null;
    this.detailView.hidden = true;
    this.listView.hidden = false;
    this.render();
  }

  async open(id, { keepScroll = false } = {}) {
    if (id !== this.openId) this.view = null;
    this.openId = id;
    this.listView.hidden = true;
    this.detailView.hidden = false;
    if (!keepScroll) this.detailBody.replaceChildren(el('p', { className: 'inspector-help', text: 'Loading…' }));
    const url = this.logUrl.replace('00000000-0000-0000-0000-000000000000', encodeURIComponent(id)) + (this.view ? `?view=${encodeURIComponent(this.view)}` : '');
    let detail;
    try {
      detail = await api(url);
    } catch (error) {
      this.detailBody.replaceChildren(el('p', { className: 'inspector-error', text: `Could not open this log: ${error.message}` }));
      return;
    }
    if (id !== this.openId) return;
    this.detailBody.replaceChildren(...renderDetail(detail, this));
    this.onDetail?.(detail);
  }
}

function fact(label, value, name) {
  return [el('div', { className: 'log-fact' }, el('dt', { text: label }), el('dd', { 'data-fact': name, text: value }))];
}

function block(title, text, className, open = true) {
  const details = el('details', { className: `log-block ${className}`, open }, el('summary', { text: title }), el('pre', { className: 'log-json', text: text || '(none)' }));
  return details;
}

function renderDetail(d, pane) {
  const out = [];
  const nav = el('div', { className: 'log-nav' });
  for (const [label, step] of [['← Older', -1], ['Newer →', 1]]) {
    const other = pane.neighbour(d.id, step);
    const button = el('button', { type: 'button', className: 'button', text: label, disabled: !other });
    if (other) button.addEventListener('click', () => pane.open(other.id));
    nav.append(button);
  }
  out.push(nav);
  const what = d.kind === 'tool' ? `Tool call ${d.tool_name || ''}` : d.kind === 'system' ? 'Runtime event' : `Request to ${d.model || d.model_name || 'a model'}`;
  out.push(el('h3', { className: 'log-title' }, what, ' ', statusBadge(d, pane.stopped)));
  const sub = [d.provider && `provider ${vendor(d.provider)}`, d.model_name && `model id ${d.model_name}`, d.prompt_name && `prompt ${d.prompt_name}`, `attempt ${d.attempt || 1}`, clock(d.created_at)].filter(Boolean);
  out.push(el('p', { className: 'inspector-help', text: sub.join(' · ') }));
  const facts = el('dl', { className: 'log-facts' });
  if (d.kind === 'llm') {
    facts.append(
      ...fact('Tokens in', count(d.input_tokens), 'input_tokens'),
      ...fact('Cached', count(d.cached_tokens), 'cached_tokens'),
      ...fact('Tokens out', count(d.output_tokens), 'output_tokens'),
      ...(d.reasoning_tokens ? fact('Reasoning', count(d.reasoning_tokens), 'reasoning_tokens') : []),
      ...fact('Cost', d.cost.total, 'cost'),
      ...fact('Cost in / cached / out', `${d.cost.input} / ${d.cost.cached} / ${d.cost.output}`, 'cost_parts'),
      ...fact('Time to first token', duration(d.time_to_first_token_ms), 'ttft'),
    );
  }
  facts.append(
    ...fact('Latency', duration(d.latency_ms), 'latency'),
    ...fact('Finish reason', d.finish_reason || (d.is_complete ? '–' : 'still running'), 'finish_reason'),
    ...(d.status_code ? fact('HTTP status', String(d.status_code), 'status_code') : []),
  );
  out.push(facts);
  if (isStopped(d, pane.stopped)) out.push(el('p', { className: 'inspector-help log-stopped-text', text: 'Stopped by a person: no failure of the model’s.' }));
  else if (d.error) out.push(el('div', { className: 'inspector-error log-error-text' }, el('strong', { text: 'Error: ' }), d.error));
  if (d.ladder && d.ladder.length > 1) {
    const list = el('ol', { className: 'log-ladder' });
    for (const rung of d.ladder) {
      const label = rung.kind === 'first' ? 'First try' : rung.kind === 'fallback' ? 'Fallback' : 'Retry';
      const button = el('button', { type: 'button', className: 'link-like', disabled: rung.is_current }, `${label}: ${rung.model} (attempt ${rung.attempt})`);
      button.addEventListener('click', () => pane.open(rung.id));
      list.append(el('li', { className: rung.is_current ? 'current' : '' }, button, rung.error ? ` failed: ${rung.error.split('\n')[0].slice(0, 160)}` : rung.is_current ? ' (this one)' : ' succeeded'));
    }
    out.push(el('h4', { text: 'Retries and fallbacks, in order' }), list);
  }
  if (d.kind === 'llm') {
    const head = el('div', { className: 'log-request-head' }, el('h4', { text: d.shown_as ? `Request (${vendor(d.shown_as)} format)` : 'Request' }));
    if (d.views && d.views.length) {
      const select = el('select', { 'aria-label': 'Show the request as' }, d.views.map((v) => el('option', { value: v, selected: v === d.shown_as, text: vendor(v) })));
      select.addEventListener('change', () => {
        pane.view = select.value;
        pane.open(d.id, { keepScroll: true });
      });
      head.append(el('label', { className: 'log-view-as' }, 'View as ', select));
    }
    out.push(head);
    if (d.view_note) out.push(el('p', { className: 'inspector-help', text: d.view_note }));
  }
  out.push(block(d.kind === 'llm' ? 'Request body' : 'Arguments', d.request_json, 'log-request'));
  out.push(block(d.kind === 'llm' ? 'Response' : 'Result', d.response_json, 'log-response'));
  if (d.system_prompt) out.push(block('System prompt', d.system_prompt, 'log-system', false));
  if (d.curl) {
    const pre = el('pre', { className: 'log-json log-curl', text: d.curl });
    const status = el('span', { className: 'inspector-help', role: 'status' });
    const copy = el('button', { type: 'button', className: 'button', text: 'Copy as cURL' });
    copy.addEventListener('click', async () => {
      try {
        await navigator.clipboard.writeText(d.curl);
        status.textContent = ' Copied. Export your key as the variable it names before running it.';
      } catch {
        const range = document.createRange();
        range.selectNodeContents(pre);
        getSelection().removeAllRanges();
        getSelection().addRange(range);
        status.textContent = ' Selected: press Ctrl+C (⌘C) to copy.';
      }
    });
    out.push(el('details', { className: 'log-block log-curl-block' }, el('summary', { text: 'cURL (the key is a placeholder)' }), el('div', {}, copy, status), pre));
  }
  if (d.children) out.push(el('p', { className: 'inspector-help', text: `${d.children} log${d.children === 1 ? '' : 's'} nested under this one (see the list).` }));
  return out;
}
