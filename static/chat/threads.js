// The signed-in user's threads, newest activity first, with the last message preview.

function ago(seconds) {
  if (!seconds) return '';
  const delta = Date.now() / 1000 - seconds;
  if (delta < 60) return 'just now';
  if (delta < 3600) return `${Math.floor(delta / 60)} min ago`;
  if (delta < 86400) return `${Math.floor(delta / 3600)} h ago`;
  return new Date(seconds * 1000).toLocaleDateString();
}

export function renderThreadList(list, threads, currentId, chatUrl) {
  list.replaceChildren(
    ...threads.map((thread) => {
      const item = document.createElement('li');
      const link = document.createElement('a');
      link.href = chatUrl(thread.id);
      link.className = 'thread-link';
      link.dataset.threadId = thread.id;
      if (thread.id === currentId) link.setAttribute('aria-current', 'page');
      const head = document.createElement('span');
      head.className = 'thread-head';
      const title = document.createElement('span');
      title.className = 'thread-agent';
      title.textContent = thread.agent?.title || thread.agent_id;
      const when = document.createElement('span');
      when.className = 'thread-time';
      when.textContent = thread.executing ? 'working…' : ago(thread.last_activity_at);
      head.append(title, when);
      const preview = document.createElement('span');
      preview.className = 'thread-preview';
      // While searching, the words that matched (when a message matched) rather than the last ones.
      preview.textContent = thread.match_preview || thread.last_message_preview || 'No messages yet';
      link.append(head, preview);
      item.append(link);
      return item;
    }),
  );
}
