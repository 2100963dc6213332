// What people see of an agent's tool calls (the agent's `tool_activity`, docs/chat.md "Tool
// activity"): `full` is each call's block with its arguments and result; `summary` one line
// per call in words, no arguments or results; `hidden` nothing but the answers. Unset: a line
// per call for people who are not staff, everything for staff.

export function toolActivityMode(agent, staff) {
  const mode = agent?.tool_activity;
  return mode === 'hidden' || mode === 'summary' || mode === 'full' ? mode : staff ? 'full' : 'summary';
}

const words = (name) => String(name || 'a tool').replace(/[_.-]+/g, ' ').trim();

// A remote A2A agent's task states (A2A 0.3 names) as people say them.
const REMOTE_STATES = {
  submitted: 'waiting to start',
  working: 'working',
  'input-required': 'needs more input',
  'auth-required': 'needs to sign in',
  completed: 'finished',
  failed: 'failed',
  canceled: 'canceled',
  rejected: 'refused',
};

// The newest status update of a running call to a remote agent, in words: "working: Looking up
// flights". The text is the remote agent's and hostile: it only ever becomes textContent.
export function progressWords(progress) {
  const state = REMOTE_STATES[progress.state] || progress.state || 'working';
  const text = progress.text.replace(/\s+/g, ' ').trim();
  return text ? `${state}: ${text}` : state;
}

// Set only while the call runs: its result settles the line.
const liveProgress = (ctx, call, result) => (!result || result.status === 'pending' ? ctx.transcript?.progress?.get(call?.id) : null);

function toolLine(ctx, call, result) {
  const name = words(call?.function?.name || result?.name);
  const state = !result || result.status === 'pending' ? 'running' : result.tool_status === 'error' ? 'error' : 'done';
  const progress = liveProgress(ctx, call, result);
  const running = progress ? `Asking ${name}… ${progressWords(progress)}` : `Using ${name}…`;
  const text = { running, error: `${name} did not work`, done: `Used ${name}` }[state];
  const line = Object.assign(document.createElement('div'), { className: `tool-line tool-${state}`, textContent: text });
  if (progress) line.classList.add('tool-progress');
  return line;
}

// The full block's live line of a running call to a remote agent (render.js's toolBlock).
export function progressNote(ctx, call, result) {
  const progress = liveProgress(ctx, call, result);
  if (!progress) return null;
  return Object.assign(document.createElement('span'), { className: 'tool-progress', textContent: progressWords(progress) });
}

// The `.tools` block of one message's calls, or null when nothing is to be shown. A call
// waiting for the person's approval or answer is always shown in full: they are asked about
// it; so is one that needs them to connect an MCP server account (its Connect link).
export function toolsView(ctx, calls, results, fullBlock) {
  const mode = ctx.toolActivity || 'full';
  const waiting = (r) => r?.status === 'pending' && r.metadata?.tool_wait && !r.metadata.tool_wait.decision;
  // A call that failed because the person must connect an MCP server account: its link.
  const mustConnect = (r) => r?.tool_status === 'error' && /\/mcp-servers\/\d+\/connect/.test(String(r.content || ''));
  const shown = calls
    .map((c) => {
      const result = results.get(c.id);
      if (mode === 'full' || waiting(result) || mustConnect(result)) return fullBlock(ctx, c, result);
      return mode === 'summary' ? toolLine(ctx, c, result) : null;
    })
    .filter(Boolean);
  if (!shown.length) return null;
  const box = document.createElement('div');
  box.className = 'tools';
  box.append(...shown);
  return box;
}

// A step that only called tools says nothing to a person who is not shown tools.
export const hiddenStep = (ctx, message, calls) =>
  ctx.toolActivity === 'hidden' && calls.length > 0 && !message.content && message.status !== 'pending';
