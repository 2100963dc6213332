// Citations of a reply (the message's `citations`: {url, title, start, end, cited_text}, with
// start/end character offsets into its text): a numbered link after each cited span and a
// numbered list of the sources under the message. Only http(s) URLs become links (a vendor's
// `javascript:` URL stays inert text); links open in a new tab without referrer or opener.

const MARK = '\u2063'; // invisible separator: survives markdown, never typed by a model
const MARK_RE = new RegExp(`${MARK}(\\d+(?:,\\d+)*)${MARK}`, 'g');

export function safeUrl(url) {
  try {
    const parsed = new URL(String(url));
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.href : null;
  } catch {
    return null;
  }
}

// The sources in order of first citation, numbered from 1, and the text with a marker after
// each cited span (offsets count characters, i.e. code points, as the server stores them).
export function markCitations(text, citations) {
  const list = Array.isArray(citations) ? citations.filter((c) => c && (c.url || passageHref(c))) : [];
  const sources = [];
  const numbers = new Map();
  for (const c of list) {
    const key = c.url || passageHref(c);
    if (!numbers.has(key)) {
      numbers.set(key, sources.length + 1);
      sources.push(c.url ? { url: c.url, title: c.title || null } : { passage: passageHref(c), title: c.title || null, quote: c.cited_text || '' });
    }
  }
  const chars = Array.from(String(text ?? ''));
  const at = new Map();
  for (const c of list) {
    if (!Number.isInteger(c.end) || c.end < 0 || c.end > chars.length) continue;
    const set = at.get(c.end) || new Set();
    set.add(numbers.get(c.url || passageHref(c)));
    at.set(c.end, set);
  }
  for (const end of [...at.keys()].sort((a, b) => b - a)) {
    chars.splice(end, 0, `${MARK}${[...at.get(end)].sort((a, b) => a - b).join(',')}${MARK}`);
  }
  return { text: chars.join(''), sources };
}

// A knowledge passage (docs/knowledge.md, "Citations"): the chat's own page for it, built
// from its numeric id only, so nothing in a citation chooses where the link goes.
export function passageHref(c) {
  return c && c.kind === 'knowledge' && Number.isInteger(c.passage) && c.passage > 0 ? `/chat/passages/${c.passage}/` : null;
}

function sourceHref(source) {
  return source.passage || safeUrl(source.url);
}

function citeLink(n, source) {
  const href = source ? sourceHref(source) : null;
  const sup = document.createElement('sup');
  sup.className = 'cite';
  const label = `[${n}]`;
  if (!href) {
    sup.textContent = label;
    return sup;
  }
  const a = document.createElement('a');
  a.href = href;
  a.target = '_blank';
  a.rel = 'noopener noreferrer nofollow';
  a.textContent = label;
  a.title = source.title || href;
  sup.append(a);
  return sup;
}

// Replace the markers in a rendered fragment by numbered links to the sources.
export function linkCitations(fragment, sources) {
  const walker = document.createTreeWalker(fragment, NodeFilter.SHOW_TEXT);
  const nodes = [];
  while (walker.nextNode()) if (walker.currentNode.nodeValue.includes(MARK)) nodes.push(walker.currentNode);
  for (const node of nodes) {
    const parts = node.nodeValue.split(MARK_RE);
    const out = document.createDocumentFragment();
    parts.forEach((part, i) => {
      if (i % 2 === 0) {
        if (part) out.append(document.createTextNode(part.replaceAll(MARK, '')));
        return;
      }
      for (const n of part.split(',').map(Number)) out.append(citeLink(n, sources[n - 1]));
    });
    node.replaceWith(out);
  }
  return fragment;
}

// The numbered list of sources shown under a reply.
export function sourcesList(sources) {
  const box = document.createElement('aside');
  box.className = 'msg-sources';
  const head = document.createElement('p');
  head.className = 'msg-sources-head';
  head.textContent = 'Sources';
  const ol = document.createElement('ol');
  for (const source of sources) {
    const li = document.createElement('li');
    const href = sourceHref(source);
    const label = source.title || source.url || 'Passage';
    if (source.passage) {
      const a = document.createElement('a');
      a.href = href;
      a.target = '_blank';
      a.rel = 'noopener noreferrer';
      a.className = 'source-passage';
      a.textContent = label;
      if (source.quote) a.title = source.quote;
      li.append(a);
    } else if (href) {
      const a = document.createElement('a');
      a.href = href;
      a.target = '_blank';
      a.rel = 'noopener noreferrer nofollow';
      a.textContent = label;
      li.append(a);
    } else {
      li.textContent = `${label} (not a web link)`;
    }
    ol.append(li);
  }
  box.append(head, ol);
  return box;
}
