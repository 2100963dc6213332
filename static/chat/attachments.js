// Files picked, dropped or pasted into the composer, read as base64 for POST …/messages
// `attachments`. What the server and the models take is checked here, before sending, so a
// refusal is explained while the user can still do something about it.

const MAX_FILES = 6;
const MAX_BYTES = 10 * 1024 * 1024; // per file
const MAX_TOTAL = 18 * 1024 * 1024; // base64 grows by a third; the request body limit is 25 MB
export const ACCEPTED = ['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/bmp', 'application/pdf'];
export const ACCEPT_ATTRIBUTE = ACCEPTED.join(',');

export function formatSize(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(bytes < 10 * 1024 ? 1 : 0)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

function readAsBase64(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).split(',', 2)[1] || '');
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

// Why `file` cannot be attached next to `already` (files held), or null when it can.
export function refusal(file, already) {
  const type = file.type || 'unknown type';
  if (!ACCEPTED.includes(file.type)) {
    return `${file.name} (${type}) can't be attached: attach images (PNG, JPEG, GIF, WebP, BMP) or PDFs.`;
  }
  if (file.size > MAX_BYTES) return `${file.name} is ${formatSize(file.size)}: the limit is ${formatSize(MAX_BYTES)} per file.`;
  if (already.length >= MAX_FILES) return `You can attach up to ${MAX_FILES} files to one message.`;
  const total = already.reduce((sum, f) => sum + f.size, 0) + file.size;
  if (total > MAX_TOTAL) return `${file.name} would bring this message to ${formatSize(total)}: at most ${formatSize(MAX_TOTAL)} together. Send it in another message.`;
  return null;
}

export async function readAttachments(fileList, already) {
  const files = [];
  const errors = [];
  for (const file of fileList) {
    const why = refusal(file, [...already, ...files]);
    if (why) {
      errors.push(why);
      continue;
    }
    const preview = file.type.startsWith('image/') ? URL.createObjectURL(file) : null;
    files.push({ name: file.name || 'pasted-image.png', mimeType: file.type, size: file.size, data: await readAsBase64(file), preview });
  }
  return { files, errors: [...new Set(errors)] };
}

export function renderAttachmentChips(container, files, onRemove) {
  container.replaceChildren(
    ...files.map((file, index) => {
      const chip = document.createElement('span');
      chip.className = 'chip';
      chip.dataset.name = file.name;
      let thumb;
      if (file.preview) {
        thumb = document.createElement('img');
        thumb.src = file.preview;
        thumb.alt = '';
      } else {
        thumb = document.createElement('span');
        thumb.className = 'chip-doc';
        thumb.textContent = 'PDF';
        thumb.setAttribute('aria-hidden', 'true');
      }
      const name = document.createElement('span');
      name.className = 'chip-name';
      name.textContent = file.name;
      const size = document.createElement('span');
      size.className = 'chip-size';
      size.textContent = formatSize(file.size);
      const remove = document.createElement('button');
      remove.type = 'button';
      remove.className = 'chip-remove';
      remove.textContent = '×';
      remove.setAttribute('aria-label', `Remove ${file.name}`);
      remove.addEventListener('click', () => onRemove(index));
      chip.append(thumb, name, size, remove);
      return chip;
    }),
  );
}
