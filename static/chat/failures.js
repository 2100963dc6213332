// Why a reply failed or ended early, in words a person understands. The stored assistant row
// carries the provider's error in `metadata.error` ({code, message, status}, runtime
// ProviderError.describe) and a stop in `metadata.stopped_by_user`; the code stays in a tooltip.

import { el } from './dom.js';

const REASONS = {
  network: 'The AI service could not be reached, so there is no reply.',
  authentication: 'The AI service refused the API key, so there is no reply.',
  rate_limit: 'The AI service’s limit or credit is used up for now, so there is no reply.',
  overloaded: 'The AI service is overloaded right now, so there is no reply.',
  timeout: 'The AI service took too long to answer, so there is no reply.',
  context_too_long: 'This conversation is too long for the model. Start a new chat.',
  invalid_request: 'The AI service refused the request, so there is no reply.',
};
const FALLBACK = 'The AI service answered with an error, so there is no reply.';
// The platform's own refusals (runtime/core/egress.py, the egress key rule): nothing was sent.
const PLATFORM_REASONS = {
  egress_refused: 'The model’s address is not one this platform may connect to, so there is no reply.',
  key_withheld: 'The service’s API key may not be sent to this model’s address, so there is no reply.',
};

export const stoppedByUser = (m) => Boolean(m && m.metadata?.stopped_by_user && m.role !== 'system');
// A stop the agent's "interrupt" policy made for a newer message (services/sessions/lifecycle.py
// stop_cleanup marks it): the person sent a message, they did not press Stop.
export const interruptedByMessage = (m) => Boolean(m && m.metadata?.interrupted_by_message);

// What the stop notice (the system row a stop leaves) says.
export function stopNotice(message) {
  if (interruptedByMessage(message)) return 'You sent a new message, so the agent stopped its reply to read it.';
  return message.content || '';
}

// No key at all is not a refused key: the platform sent nothing (no HTTP status). Staff are told
// which env value to set; a person chatting is not shown the names of secret values.
function missingKey(error, staff) {
  if (!staff) return 'This agent’s AI service has no API key set up yet, so there is no reply. Ask an administrator to add it.';
  const name = /\bSet ([A-Z][A-Z0-9_]*)\b/.exec(error.message || '');
  const what = name ? `Set ${name[1]}` : 'Set the service’s API key';
  return `No API key is set for this agent’s AI service, so there is no reply. ${what} as an env value in the studio (Env values), for the instance or this agent.`;
}

// The sentence for a failed row: {text, code}. `staff` may be told what to configure.
export function failureReason(message, { staff = false } = {}) {
  const error = message?.metadata?.error;
  if (!error || typeof error !== 'object') return { text: 'This reply could not be finished, so there is no reply.', code: '' };
  if (PLATFORM_REASONS[error.vendor_code]) return { text: PLATFORM_REASONS[error.vendor_code], code: error.vendor_code };
  if (error.status === 402) return { text: 'The AI service account is out of credit, so there is no reply.', code: error.code || '' };
  if (error.code === 'authentication' && !error.status) return { text: missingKey(error, staff), code: 'missing_key' };
  return { text: REASONS[error.code] || FALLBACK, code: error.code || '' };
}

// What the state line says after a failed reply (the next message asks again).
export function failureState(message) {
  const { text, code } = failureReason(message);
  if (code === 'missing_key') return text; // it already says who can fix it
  const retry = message?.metadata?.error?.retryable ? ' Send a message to try again.' : ' Ask an administrator if it keeps happening.';
  return text + retry;
}

// The note under a failed or stopped assistant row. `logUrl` (staff only) links the request's log.
export function outcomeNote(message, { logUrl = null } = {}) {
  if (stoppedByUser(message)) {
    const words = interruptedByMessage(message)
      ? 'This reply stopped here because you sent a new message.'
      : message.content ? 'You stopped this reply here.' : 'You stopped this reply before it started.';
    return el('p', { className: 'msg-outcome stopped', role: 'note', text: words });
  }
  if (message.status !== 'failed') return null;
  const { text, code } = failureReason(message, { staff: Boolean(logUrl) });
  const note = el('p', { className: 'msg-outcome failure', role: 'note' }, el('span', { className: 'failure-reason', title: code ? `Error code: ${code}` : null, text }));
  if (logUrl && message.log_id) note.append(' ', el('a', { className: 'failure-log', href: logUrl(message.log_id), target: '_top', text: 'See the log' }));
  return note;
}
