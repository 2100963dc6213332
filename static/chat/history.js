// Older messages, paged in when the reader scrolls to the top of the transcript.
//
// The page first holds the newest rows (app.js's reload). Older pages come from the same API
// (`order=desc`, `offset` = rows held): new rows that arrived meanwhile shift the window
// towards the newest, so pages are asked with some overlap; the transcript merges by id, so an
// overlap is never shown twice.

import { api, threadPath } from './api.js';

export const PAGE_SIZE = 100;
const OVERLAP = 20;
const NEAR_TOP_PX = 300;

export class History {
  constructor({ container, edge, transcript, onChange }) {
    this.container = container;
    this.edge = edge;
    this.transcript = transcript;
    this.onChange = onChange;
    this.threadId = null;
    this.more = false; // older rows exist on the server
    this.pagedIn = 0; // older pages fetched so far (a reload of the newest then keeps `more`)
    this.loading = false;
    this.error = '';
    container.addEventListener('scroll', () => this.maybeLoad(), { passive: true });
  }

  open(threadId) {
    Object.assign(this, { threadId, more: false, pagedIn: 0, loading: false, error: '' });
    this.show();
  }

  // After a reload of the newest rows: until an older page was fetched, it says whether more exist.
  newestLoaded(hasMore) {
    if (!this.pagedIn) this.more = hasMore;
    this.show();
  }

  maybeLoad() {
    if (this.container.scrollTop < NEAR_TOP_PX && this.more && !this.loading && !this.error) this.load();
  }

  async load() {
    if (!this.threadId || this.loading || !this.more) return;
    this.loading = true;
    this.error = '';
    this.show();
    const offset = Math.max(0, this.transcript.messages.size - OVERLAP);
    try {
      const data = await api(`${threadPath(this.threadId)}/messages?limit=${PAGE_SIZE}&offset=${offset}&order=desc&depth=8`);
      this.pagedIn += 1;
      this.more = data.hasMore;
      this.transcript.merge(data.messages, []);
    } catch (error) {
      this.error = error.message;
    } finally {
      this.loading = false;
      this.show();
      this.onChange();
    }
  }

  show() {
    const edge = this.edge;
    const empty = !this.threadId || !this.transcript.messages.size;
    edge.hidden = empty;
    const state = this.loading ? 'loading' : this.error ? 'error' : this.more ? 'more' : 'start';
    edge.dataset.state = state;
    const text = {
      loading: 'Loading older messages…',
      error: `Could not load older messages: ${this.error}`,
      more: '',
      start: 'Beginning of the conversation',
    }[state];
    const children = text ? [document.createTextNode(text)] : [];
    if (state === 'more' || state === 'error') {
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'link-button';
      button.textContent = state === 'error' ? 'Try again' : 'Load older messages';
      button.addEventListener('click', () => {
        this.error = '';
        this.load();
      });
      if (text) children.push(' ');
      children.push(button);
    }
    edge.replaceChildren(...children);
  }
}
