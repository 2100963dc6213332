// The messages of one thread, merged by id from HTTP pages and socket frames.
//
// Socket frames and an HTTP reload can cross: a reload that started before a frame arrived may
// carry an older copy of the same row. A finished row never goes back to "pending", so the
// newer copy wins whichever way they cross; anything else with the same id simply replaces.

const finished = (m) => m && m.status !== 'pending';

export class Transcript {
  constructor() {
    this.messages = new Map();
    this.streaming = new Map(); // message id -> text streamed so far (chunks are never stored)
    this.reasoning = new Map(); // message id -> reasoning streamed so far
    this.images = new Map(); // message id -> generated images shown before the message completes
    this.events = []; // live-only activity (subagent events), shown in activity groups
    // tool call id -> the newest `tool_call_progress` of a running call (a remote A2A agent's
    // status updates). Live only: the server keeps none of it, so a reload shows none.
    this.progress = new Map();
    // message id -> what this page's rating controls hold (feedback.js): not part of the row.
    this.ratings = new Map();
    this.version = 0;
  }

  upsert(message) {
    const old = this.messages.get(message.id);
    if (finished(old) && !finished(message)) return false;
    const partial = message.role === 'assistant' && !message.metadata?.queued && !finished(message);
    if (partial && typeof message.content === 'string' && message.content) {
      // A reply joined mid-stream (the socket's catch-up, docs/api.md): its text so far is
      // what streamed; later chunks add to it.
      this.streaming.set(message.id, message.content);
      message = { ...message, content: null };
    }
    this.messages.set(message.id, message);
    if (finished(message) && message.role === 'tool') this.progress.delete(message.tool_call_id);
    if (finished(message)) {
      this.streaming.delete(message.id);
      this.reasoning.delete(message.id);
      this.images.delete(message.id);
    }
    this.version += 1;
    return true;
  }

  remove(id) {
    this.streaming.delete(id);
    this.version += 1;
    return this.messages.delete(id);
  }

  chunk(id, text, reasoning = false) {
    const map = reasoning ? this.reasoning : this.streaming;
    const current = this.messages.get(id);
    if (!reasoning && finished(current)) return false;
    map.set(id, (map.get(id) || '') + text);
    this.version += 1;
    return true;
  }

  image(id, attachment) {
    if (finished(this.messages.get(id)) || !attachment?.path) return false;
    this.images.set(id, [...(this.images.get(id) || []), attachment]);
    this.version += 1;
    return true;
  }

  // Merge one HTTP reload (the newest rows, oldest first). `known` are the ids held before the
  // reload started: one of those missing from the reloaded window was deleted meanwhile. Rows
  // that arrived by socket during the reload are not in `known` and stay.
  merge(rows, known) {
    const ids = new Set(rows.map((m) => m.id));
    const oldest = rows.length ? rows[0].created_at : Infinity;
    for (const id of known) {
      const m = this.messages.get(id);
      if (m && !ids.has(id) && m.created_at >= oldest) this.remove(id);
    }
    for (const row of rows) this.upsert(row);
  }

  // A late progress frame of a call whose result is already here says nothing new.
  toolProgress(data) {
    const id = data?.id;
    if (typeof id !== 'string' || !id) return false;
    const done = [...this.messages.values()].some((m) => m.role === 'tool' && m.tool_call_id === id && finished(m));
    if (done) return false;
    this.progress.set(id, { name: String(data.name ?? ''), state: String(data.state ?? ''), text: String(data.text ?? '') });
    this.version += 1;
    return true;
  }

  addEvent(event) {
    this.events.push(event);
    this.version += 1;
  }

  ordered() {
    return [...this.messages.values()].sort(
      (a, b) => a.created_at - b.created_at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
    );
  }

  last() {
    const all = this.ordered().filter((m) => !m.depth);
    return all[all.length - 1];
  }
}
