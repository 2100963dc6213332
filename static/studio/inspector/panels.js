// The inspector's side panels (state bar, waiting tool calls, files, values, effects,
// subagents), drawn from the studio's `panels.json`. User files are only ever shown as an
// <img> or as text in a <pre>: nothing a user or a model stored is rendered as HTML here.

import { el } from '../../chat/dom.js';
import { bytes } from './format.js';

const MAX_TEXT_PREVIEW = 100_000;

const $ = (id) => document.getElementById(id);

function showCount(name, n) {
  $(`count-${name}`).textContent = n ? String(n) : '';
  $(`${name}-empty`).hidden = n > 0;
}

export function renderState(data, { canAct }) {
  const state = data.state;
  const node = $('inspector-state');
  node.dataset.state = state.kind;
  node.textContent = state.label + (state.session?.side && state.kind !== 'idle' ? ` (side ${state.session.side.toUpperCase()})` : '');
  $('inspector-cost').textContent = `Cost ${data.cost.total} over ${data.cost.requests} request${data.cost.requests === 1 ? '' : 's'}`;
  $('inspector-cost').title = data.cost.models.map((m) => `${m.name}: ${m.total} (${m.requests})`).join('\n');
  $('inspector-stop').hidden = !(canAct && state.can_stop);
  $('inspector-continue').hidden = !(canAct && state.can_continue);
}

export function renderPending(data, { canAct, decide }) {
  const list = $('pending-list');
  $('inspector-pending').hidden = !data.pending.length;
  list.replaceChildren(
    ...data.pending.map((call) => {
      const status = el('p', { className: 'inspector-help', role: 'status' });
      const item = el('li', { className: 'pending-call', 'data-tool-call-id': call.tool_call_id },
        el('p', {}, el('code', { text: call.tool }), ` waits for ${call.kind === 'approval' ? 'approval' : 'the client'}`),
        el('pre', { className: 'log-json', text: call.args }));
      if (canAct && call.kind === 'approval') {
        const reason = el('input', { type: 'text', placeholder: 'Reason (needed to reject)', 'aria-label': `Reason for rejecting ${call.tool}` });
        const approve = el('button', { type: 'button', className: 'button default', text: 'Approve' });
        const reject = el('button', { type: 'button', className: 'button', text: 'Reject' });
        const send = async (yes) => {
          if (!yes && !reason.value.trim()) {
            status.textContent = 'Give a reason to reject this call: the model reads it.';
            reason.focus();
            return;
          }
          approve.disabled = reject.disabled = true;
          status.textContent = yes ? 'Approving…' : 'Rejecting…';
          const outcome = await decide(call.tool_call_id, yes, reason.value.trim());
          status.textContent = outcome.error || outcome.message;
          if (outcome.error) approve.disabled = reject.disabled = false;
        };
        approve.addEventListener('click', () => send(true));
        reject.addEventListener('click', () => send(false));
        item.append(el('div', { className: 'pending-actions' }, approve, reject, reason));
      }
      item.append(status);
      return item;
    }),
  );
}

export function renderFiles(data) {
  const list = $('file-list');
  const files = data.files.filter((f) => !f.is_dir);
  showCount('files', files.length);
  list.replaceChildren(
    ...files.map((f) => {
      const open = el('button', { type: 'button', className: 'link-like file-open', 'data-path': f.path, text: f.path });
      open.addEventListener('click', () => preview(f));
      return el('li', {}, open, el('span', { className: 'inspector-help', text: ` ${f.mime_type || 'unknown type'} · ${bytes(f.size)}` }));
    }),
  );
}

async function preview(f) {
  const box = $('file-preview');
  box.hidden = false;
  const head = el('p', { className: 'file-preview-head' }, el('strong', { text: f.name || f.path }), ' ',
    el('a', { href: f.url, target: '_blank', rel: 'noopener noreferrer', text: f.preview ? 'Open' : 'Download' }));
  if (f.preview === 'image') {
    box.replaceChildren(head, el('img', { src: f.url, alt: f.name || f.path, className: 'file-image' }));
  } else if (f.preview === 'text') {
    box.replaceChildren(head, el('p', { className: 'inspector-help', text: 'Loading…' }));
    try {
      const response = await fetch(f.url, { credentials: 'same-origin' });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const text = await response.text();
      const cut = text.length > MAX_TEXT_PREVIEW ? `${text.slice(0, MAX_TEXT_PREVIEW)}\n… (cut; open the file for the rest)` : text;
      box.replaceChildren(head, el('pre', { className: 'log-json file-text', text: cut }));
    } catch (error) {
      box.replaceChildren(head, el('p', { className: 'inspector-error', text: `Could not read the file: ${error.message}` }));
    }
  } else {
    box.replaceChildren(head, el('p', { className: 'inspector-help', text: 'No preview for this type of file.' }));
  }
}

export function renderValues(data) {
  showCount('values', data.values.length);
  $('value-list').replaceChildren(
    ...data.values.flatMap((v) => [
      el('dt', {}, el('code', { text: v.key }), v.updated ? el('span', { className: 'inspector-help', title: v.updated.iso, text: ` updated ${v.updated.text}` }) : null),
      el('dd', {}, el('pre', { className: 'log-json', text: v.value })),
    ]),
  );
}

export function renderEffects(data, { canAct, act }) {
  showCount('effects', data.effects.length);
  $('effect-list').replaceChildren(
    ...data.effects.map((e) => {
      const item = el('li', { className: `effect effect-${e.status}`, 'data-effect-id': e.id },
        el('p', {}, el('strong', { text: e.name }), ' ', el('span', { className: `log-badge effect-status-${e.status}`, text: e.status_label })),
        el('p', { className: 'inspector-help' }, e.due ? el('span', { title: e.due.iso, text: `due ${e.due.text}` }) : '',
          e.attempts ? ` · tried ${e.attempts} of ${e.max_attempts} times` : ` · not run yet (up to ${e.max_attempts} tries)`));
      if (e.error) item.append(el('p', { className: 'inspector-error', text: e.error }));
      if (canAct) {
        const buttons = el('div', { className: 'effect-actions' });
        if (e.can_cancel) buttons.append(actionButton('Cancel', () => act(`${e.id}/cancel/`)));
        if (e.can_run) buttons.append(actionButton(e.run_label, () => act(`${e.id}/run/`)));
        item.append(buttons);
      }
      return item;
    }),
  );
}

function actionButton(label, onClick) {
  const button = el('button', { type: 'button', className: 'button', text: label });
  button.addEventListener('click', async () => {
    button.disabled = true;
    await onClick();
    button.disabled = false;
  });
  return button;
}

export function renderSubagents(data, { inspectUrl }) {
  let total = 0;
  const node = (child) => {
    total += 1;
    return el('li', { className: 'subagent', 'data-thread-id': child.id },
      el('a', { href: inspectUrl(child.id), text: child.name }), ' ',
      el('span', { className: 'inspector-help', text: child.agent }), ' ',
      el('span', { className: `log-badge subagent-${child.status}`, text: child.stopped ? `${child.status}, stopped` : child.status }),
      child.children.length ? el('ul', {}, child.children.map(node)) : null);
  };
  const items = data.subagents.map(node);
  $('subagent-tree').replaceChildren(...items);
  showCount('subagents', total);
}
