// Rating a reply: 👍 / 👎 under each finished answer, a reason from the agent's list and a
// comment after a 👎 (or on request), pressing the same thumb again withdraws the rating.
// POST|DELETE /api/threads/{id}/messages/{message_id}/feedback (docs/observability.md).

import { api, threadPath } from './api.js';
import { el } from './dom.js';


// The thumb is drawn by CSS (a mask over currentColor, chat.css): no emoji font needed, and no
// SVG element in the transcript, where the safety check treats any <svg> as hostile.
function thumb(down) {
  return el('span', { className: `thumb-icon${down ? ' thumb-down' : ''}`, 'aria-hidden': 'true' });
}

export const rateable = (message, streaming) =>
  message.role === 'assistant' && !streaming && message.status !== 'failed' && !message.metadata?.queued && Boolean(message.content);

// What the rating controls hold for one reply, by message id on the transcript: the server's
// answer to this page's last rating, whether the reason form is open, the last error. Kept off
// the row itself: a reload that was fetched before the rating replaces the row with a copy
// that does not have it yet, and the person's 👍 must not vanish under them.
// Reading makes no entry: the transcript view's signature of a message includes its entry,
// and one made by a first draw would redraw every reply once more.
const NONE = Object.freeze({ open: false, error: null });
const held = (ctx, message) => ctx.transcript.ratings.get(message.id) || NONE;

function controls(ctx, message) {
  const all = ctx.transcript.ratings;
  if (!all.has(message.id)) all.set(message.id, { open: false, error: null });
  return all.get(message.id);
}

const ratingOf = (ctx, message) => {
  const state = held(ctx, message);
  return 'feedback' in state ? state.feedback : message.feedback;
};

async function send(ctx, message, body) {
  const url = `${threadPath(ctx.threadId)}/messages/${encodeURIComponent(message.id)}/feedback`;
  const state = controls(ctx, message);
  try {
    const answer = body ? await api(url, { method: 'POST', json: body }) : await api(url, { method: 'DELETE' });
    state.feedback = answer.feedback;
    state.error = null;
  } catch (error) {
    state.error = error.message;
  }
  ctx.rerender();
}

function reasonForm(ctx, message) {
  const current = ratingOf(ctx, message) || {};
  const form = el('form', { className: 'feedback-form' });
  const reasons = ctx.feedbackReasons || [];
  let select = null;
  if (reasons.length) {
    select = el('select', { name: 'reason', 'aria-label': 'Reason' }, el('option', { value: '', text: 'Choose a reason (optional)' }));
    for (const reason of reasons) select.append(el('option', { value: reason, text: reason, selected: current.reason === reason }));
    form.append(select);
  }
  const comment = el('textarea', { name: 'comment', rows: 2, maxlength: 2000, placeholder: 'What should it have said? (optional)', 'aria-label': 'Comment' });
  comment.value = current.comment || '';
  form.append(comment, el('button', { type: 'submit', className: 'feedback-save', text: 'Send feedback' }));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    controls(ctx, message).open = false;
    send(ctx, message, { score: current.score || -1, reason: select?.value || null, comment: comment.value.trim() || null });
  });
  return form;
}

export function feedbackBar(ctx, message) {
  const rating = ratingOf(ctx, message);
  const state = held(ctx, message);
  const score = rating?.score || 0;
  const bar = el('div', { className: 'feedback', role: 'group', 'aria-label': 'Rate this reply' });
  for (const [value, label] of [[1, 'Good reply'], [-1, 'Bad reply']]) {
    const pressed = score === value;
    const name = pressed ? `${label} (press again to withdraw)` : label;
    const button = el('button', { type: 'button', className: `feedback-thumb${pressed ? ' pressed' : ''}`, 'aria-pressed': pressed ? 'true' : 'false', 'aria-label': name, title: name, 'data-score': value }, thumb(value === -1));
    button.addEventListener('click', () => {
      if (pressed) {
        controls(ctx, message).open = false;
        send(ctx, message, null);
        return;
      }
      controls(ctx, message).open = value === -1;
      send(ctx, message, { score: value, reason: null, comment: null });
    });
    bar.append(button);
  }
  if (score) {
    const more = el('button', { type: 'button', className: 'feedback-more', text: rating.reason || rating.comment ? 'Edit feedback' : 'Add a reason' });
    more.addEventListener('click', () => {
      controls(ctx, message).open = !state.open;
      ctx.rerender();
    });
    bar.append(more);
  }
  if (state.error) bar.append(el('span', { className: 'feedback-error', role: 'alert', text: state.error }));
  if (score && state.open) bar.append(reasonForm(ctx, message));
  return bar;
}
