// The HTTP API as the page uses it: session cookie + CSRF header, {error} bodies as messages.

let csrfToken = null;

export class ApiError extends Error {
  constructor(message, status) {
    super(message);
    this.status = status;
  }
}

// The CSRF token for a POST outside the API (the studio's own JSON views).
export async function csrf() {
  if (!csrfToken) {
    const data = await request('/api/auth/csrf');
    csrfToken = data.csrfToken;
  }
  return csrfToken;
}

async function request(path, { method = 'GET', body, headers = {} } = {}) {
  let response;
  try {
    response = await fetch(path, {
      method,
      headers: { Accept: 'application/json', ...headers },
      body,
      credentials: 'same-origin',
    });
  } catch {
    throw new ApiError('Cannot reach the server. Check your connection; the page keeps trying.', 0);
  }
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) {
    throw new ApiError(describe(response.status, data), response.status);
  }
  return data;
}

function describe(status, data) {
  if (status === 401) return 'You are signed out. Reload the page to sign in again.';
  if (status === 413) return 'That is too large to send. Try a smaller image.';
  if (data && typeof data.error === 'string') return data.error;
  if (status >= 500) return 'The server had a problem. Try again in a moment.';
  return `The server refused the request (${status}).`;
}

export async function api(path, { method = 'GET', json } = {}) {
  if (method === 'GET') return request(path);
  const headers = { 'X-CSRFToken': await csrf() };
  let body;
  if (json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(json);
  }
  return request(path, { method, body, headers });
}

export const threadPath = (threadId) => `/api/threads/${encodeURIComponent(threadId)}`;

export function fileUrl(threadId, path) {
  const parts = String(path || '').split('/').filter(Boolean).map(encodeURIComponent);
  return `${threadPath(threadId)}/fs/${parts.join('/')}`;
}
