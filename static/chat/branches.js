// Conversations as trees (issue #41): under a message, the controls that try another direction
// without losing the first. Edit (a person's message), Regenerate (a reply), "‹ 2 / 3 ›" between
// the versions of a message, and "Continue in a new chat" (a fork up to that message).
//
// The server keeps the tree; this page only ever shows the active path. Every change of the
// path is announced on the thread's socket (`active_path_changed`, frames.js), so the page that
// made it and every other tab reload the same rows (docs/api.md, "Branches"). Text the person
// typed only ever goes into a textarea's value or textContent, never into markup.

import { api, threadPath } from './api.js';
import { el } from './dom.js';

// message id -> its `branch` ({index, count, sibling_ids, follows}) from the last page read.
// A socket's message_data rows carry no branch; a row replaced by one keeps the one it had.
const known = new Map();
// message id -> the draft being edited, so a re-render (a frame meanwhile) keeps the editor.
const drafts = new Map();

function branchOf(message) {
  if (message.branch) known.set(message.id, message.branch);
  return message.branch || known.get(message.id) || null;
}

// Runs one request; a refusal (409 while a reply is written, 403, …) shows under the message.
// Success needs no drawing here: the socket's active_path_changed frame reloads the rows.
async function act(bar, run) {
  bar.querySelector('.branch-error')?.remove();
  try {
    await run();
    return true;
  } catch (error) {
    bar.append(el('p', { className: 'branch-error', role: 'alert', text: error.message }));
    return false;
  }
}

const messagePath = (ctx, message, what) =>
  `${threadPath(ctx.threadId)}/messages/${encodeURIComponent(message.id)}/${what}`;

// Names avoid "message" and "continue": the composer's box and the Continue button keep
// their names unique on the page.
function button(className, text, label, onClick, title = label) {
  const b = el('button', { type: 'button', className: `branch-button ${className}`, 'aria-label': label, title, text });
  b.addEventListener('click', onClick);
  return b;
}

// "‹ 2 / 3 ›": the other versions of this message (the messages following the same one).
function versions(ctx, bar, branch) {
  const go = (step) => {
    const target = branch.sibling_ids[branch.index + step];
    if (!target) return;
    act(bar, () => api(`${threadPath(ctx.threadId)}/active`, { method: 'PUT', json: { message_id: target } }));
  };
  const previous = button('branch-prev', '‹', 'Previous version', () => go(-1));
  const next = button('branch-next', '›', 'Next version', () => go(1));
  previous.disabled = branch.index <= 0;
  next.disabled = branch.index >= branch.count - 1;
  const where = el('span', { className: 'branch-position', text: `${branch.index + 1} / ${branch.count}` });
  return el('span', { className: 'branch-versions', role: 'group', 'aria-label': `Version ${branch.index + 1} of ${branch.count}` }, previous, where, next);
}

function editor(ctx, bar, message) {
  const box = el('textarea', { className: 'branch-edit-input', rows: '3', 'aria-label': 'Edited text' });
  box.value = drafts.get(message.id) ?? message.content ?? '';
  box.addEventListener('input', () => drafts.set(message.id, box.value));
  const save = el('button', { type: 'submit', className: 'primary branch-edit-save', text: 'Save and send' });
  const cancel = el('button', { type: 'button', className: 'branch-edit-cancel', text: 'Cancel' });
  cancel.addEventListener('click', () => {
    drafts.delete(message.id);
    bar.querySelector('.branch-error')?.remove();
    form.remove();
  });
  const form = el('form', { className: 'branch-editor' }, box, el('div', { className: 'branch-edit-actions' }, save, cancel));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const content = box.value.trim();
    if (!content) {
      box.focus();
      return;
    }
    save.disabled = cancel.disabled = true;
    const done = await act(bar, () => api(messagePath(ctx, message, 'edit'), { method: 'POST', json: { content } }));
    if (done) {
      drafts.delete(message.id);
      form.remove();
    } else save.disabled = cancel.disabled = false;
  });
  box.addEventListener('keydown', (event) => {
    if (event.key === 'Escape') cancel.click();
    else if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  requestAnimationFrame(() => box.isConnected && box.focus());
  return form;
}

function fork(ctx, bar, message) {
  return act(bar, async () => {
    const answer = await api(`${threadPath(ctx.threadId)}/fork`, { method: 'POST', json: { message_id: message.id } });
    const embed = document.body.classList.contains('embed') ? '?embed=1' : '';
    location.assign(`/chat/t/${encodeURIComponent(answer.threadId)}${embed}`);
  });
}

// The bar under a top-level message, or null. `human`: the person's own message; `final`: a
// reply that ends a step with no tool calls (the one to ask again for).
export function branchBar(ctx, message, { human, streaming, final }) {
  if (message.depth || streaming || message.metadata?.queued || message.status === 'pending') return null;
  const branch = branchOf(message);
  const bar = el('div', { className: 'branch-bar', 'data-branch-for': message.id });
  if (branch && branch.count > 1) bar.append(versions(ctx, bar, branch));
  if (human) {
    bar.append(button('branch-edit', '✎ Edit', null, () => {
      if (bar.querySelector('.branch-editor')) return;
      drafts.set(message.id, message.content ?? '');
      bar.append(editor(ctx, bar, message));
    }, 'Change what you said and send it again (the first version is kept)'));
  } else if (final && message.role === 'assistant') {
    bar.append(button('branch-regenerate', '↻ Regenerate', null, () =>
      act(bar, () => api(messagePath(ctx, message, 'regenerate'), { method: 'POST' })), 'Ask for another reply (this one is kept)'));
  }
  bar.append(button('branch-fork', '↗ New chat from here', null, () => fork(ctx, bar, message), 'A new chat holding the conversation up to here'));
  // An edit under way survives the block being rebuilt (a frame for this row meanwhile).
  if (human && drafts.has(message.id)) bar.append(editor(ctx, bar, message));
  return bar;
}

// The active path moved (an `active_path_changed` frame, `path`: its top-level ids, root first):
// drop the rows of the path left behind, and what hangs under them, before the reload brings the
// new path's rows. A reload alone keeps held rows older than its window, and a new first
// message (an edit of the first question) starts the window after all of them.
export function followPath(transcript, path) {
  if (!Array.isArray(path)) return;
  const onPath = new Set(path);
  const gone = new Set();
  for (const m of transcript.messages.values()) {
    if (!m.depth && !m.metadata?.queued && !onPath.has(m.id)) gone.add(m.id);
  }
  let more = true;
  while (more) {
    more = false;
    for (const m of transcript.messages.values()) {
      if (m.depth && !gone.has(m.id) && gone.has(m.parent_id)) {
        gone.add(m.id);
        more = true;
      }
    }
  }
  for (const id of gone) transcript.remove(id);
}
