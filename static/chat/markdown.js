// Markdown to safe DOM. marked parses; raw HTML in a message is shown as text (a model that
// writes <b> means the characters); DOMPurify then sanitizes the output anyway, and links keep
// only web, mail and in-page targets, so no script can run from message content.

import { Marked } from '../vendor/marked/marked.esm.js';
import DOMPurify from '../vendor/dompurify/purify.es.mjs';

const SAFE_LINK = /^(https?:|mailto:|#|\/(?!\/))/i;

const escapeHtml = (text) =>
  String(text).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

const parser = new Marked({
  gfm: true,
  breaks: true,
  async: false,
  renderer: {
    html({ text }) {
      return escapeHtml(text);
    },
  },
});

const purify = DOMPurify(window);
purify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    const href = node.getAttribute('href') || '';
    if (!SAFE_LINK.test(href.trim())) {
      node.removeAttribute('href');
    } else {
      node.setAttribute('target', '_blank');
      node.setAttribute('rel', 'noopener noreferrer nofollow');
    }
  }
  if (node.tagName === 'IMG') {
    // Images in replies load only from this site (thread files); outside URLs could track.
    const src = node.getAttribute('src') || '';
    if (!/^\/(?!\/)/.test(src)) node.removeAttribute('src');
    node.setAttribute('loading', 'lazy');
  }
});

const CONFIG = {
  RETURN_DOM_FRAGMENT: true,
  FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'iframe', 'object', 'embed', 'svg', 'math'],
  FORBID_ATTR: ['style', 'class', 'id'],
};

export function renderMarkdown(text) {
  let html;
  try {
    html = parser.parse(String(text ?? ''));
  } catch {
    html = `<p>${escapeHtml(text)}</p>`;
  }
  return purify.sanitize(html, CONFIG);
}
