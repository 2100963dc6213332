// What people see of an agent's tool calls (the agent's `tool_activity`, docs/chat.md "Tool
// activity"): `full` is each call's block with its arguments and result; `summary` one line
// per call in words, no arguments or results; `hidden` nothing but the answers. Unset: a line
// per call for people who are not staff, everything for staff.

export function toolActivityMode(agent, staff) {
  const mode = agent?.tool_activity;
  return mode === 'hidden' || mode === 'summary' || mode === 'full' ? mode : staff ? 'full' : 'summary';
}

const words = (name) => String(name || 'a tool').replace(/[_.-]+/g, ' ').trim();

function toolLine(call, result) {
  const name = words(call?.function?.name || result?.name);
  const state = !result || result.status === 'pending' ? 'running' : result.tool_status === 'error' ? 'error' : 'done';
  const text = { running: `Using ${name}…`, error: `${name} did not work`, done: `Used ${name}` }[state];
  return Object.assign(document.createElement('div'), { className: `tool-line tool-${state}`, textContent: text });
}

// The `.tools` block of one message's calls, or null when nothing is to be shown. A call
// waiting for the person's approval is always shown in full: they are asked about it.
export function toolsView(ctx, calls, results, fullBlock) {
  const mode = ctx.toolActivity || 'full';
  const waiting = (r) => r?.status === 'pending' && r.metadata?.tool_wait && !r.metadata.tool_wait.decision;
  const shown = calls
    .map((c) => {
      const result = results.get(c.id);
      if (mode === 'full' || waiting(result)) return fullBlock(ctx, c, result);
      return mode === 'summary' ? toolLine(c, result) : null;
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
