// The message stream socket of one thread: a single-use ticket per connection, reconnects with
// exponential backoff (and jitter, so many tabs do not reconnect in step), ping to keep it open.
// `channel: 'logs'` opens the thread's logs socket instead (the studio's live inspector).

import { api, threadPath } from './api.js';

const FIRST_DELAY_MS = 500;
const MAX_DELAY_MS = 15000;
const PING_MS = 25000;
// Close codes after which retrying cannot help (4000 + HTTP status, see docs/api.md).
const FATAL = {
  4403: 'You do not have access to this chat.',
  4404: 'This chat does not exist (it may have been deleted).',
};

export class ThreadStream {
  constructor(threadId, { reasoning = false, channel = 'stream', onFrame, onOpen, onState }) {
    this.threadId = threadId;
    this.channel = channel;
    this.reasoning = reasoning;
    this.onFrame = onFrame;
    this.onOpen = onOpen;
    this.onState = onState;
    this.socket = null;
    this.attempt = 0;
    this.closed = false;
    this.holdUntil = 0;
    this.timer = null;
    this.pinger = null;
  }

  start() {
    this.closed = false;
    this.connect();
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    clearInterval(this.pinger);
    if (this.socket) this.socket.close(1000);
    this.socket = null;
  }

  // Test hook (only wired up behind ?test_hooks=1): drop the socket as a network failure would,
  // and stay away for holdMs so frames are missed and must be caught up over HTTP.
  drop(holdMs = 0) {
    this.holdUntil = Date.now() + holdMs;
    if (this.socket) this.socket.close(4000);
  }

  async connect() {
    if (this.closed) return;
    this.onState({ kind: 'connecting', attempt: this.attempt });
    const path = `${threadPath(this.threadId)}/${this.channel}`;
    let ticket;
    try {
      ticket = (await api('/api/auth/websocket-ticket', { method: 'POST', json: { pathname: path } })).ticket;
    } catch (error) {
      if (error.status === 401 || error.status === 403) {
        this.onState({ kind: 'fatal', message: error.message });
        return;
      }
      this.retry();
      return;
    }
    if (this.closed) return;
    const params = new URLSearchParams({ ticket, depth: '8' });
    if (this.reasoning) params.set('reasoning', '1');
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const socket = new WebSocket(`${scheme}//${location.host}${path}?${params}`);
    this.socket = socket;
    let refused = null;
    socket.onopen = () => {
      this.attempt = 0;
      clearInterval(this.pinger);
      this.pinger = setInterval(() => socket.readyState === 1 && socket.send('stream_ping'), PING_MS);
      this.onOpen();
    };
    socket.onmessage = (event) => {
      if (typeof event.data !== 'string' || !event.data.startsWith('{')) return; // stream_pong
      let frame;
      try {
        frame = JSON.parse(event.data);
      } catch {
        return;
      }
      if (frame.type === 'error') {
        refused = frame.error;
        return;
      }
      this.onFrame(frame);
    };
    socket.onclose = (event) => {
      clearInterval(this.pinger);
      if (this.socket !== socket || this.closed) return;
      this.socket = null;
      if (FATAL[event.code]) {
        this.onState({ kind: 'fatal', message: FATAL[event.code] });
        return;
      }
      if (refused && event.code !== 4401) {
        this.onState({ kind: 'fatal', message: refused });
        return;
      }
      this.retry();
    };
  }

  retry() {
    const backoff = Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** this.attempt);
    const delay = Math.max(backoff * (0.5 + Math.random() / 2), this.holdUntil - Date.now());
    this.attempt += 1;
    this.onState({ kind: 'reconnecting', delay, attempt: this.attempt });
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.connect(), delay);
  }
}
