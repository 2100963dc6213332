// Images picked in the composer, read as base64 for POST …/messages `attachments`.

const MAX_FILES = 6;
const MAX_BYTES = 10 * 1024 * 1024;

function readAsBase64(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).split(',', 2)[1] || '');
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

export async function readAttachments(fileList, already) {
  const files = [];
  const errors = [];
  for (const file of fileList) {
    if (!file.type.startsWith('image/')) errors.push(`${file.name} is not an image.`);
    else if (file.size > MAX_BYTES) errors.push(`${file.name} is larger than 10 MB.`);
    else if (already + files.length >= MAX_FILES) errors.push(`You can attach up to ${MAX_FILES} images.`);
    else files.push({ name: file.name, mimeType: file.type, data: await readAsBase64(file), preview: URL.createObjectURL(file) });
  }
  return { files, errors: [...new Set(errors)] };
}

export function renderAttachmentChips(container, files, onRemove) {
  container.replaceChildren(
    ...files.map((file, index) => {
      const chip = document.createElement('span');
      chip.className = 'chip';
      const img = document.createElement('img');
      img.src = file.preview;
      img.alt = '';
      const name = document.createElement('span');
      name.textContent = file.name;
      const remove = document.createElement('button');
      remove.type = 'button';
      remove.className = 'chip-remove';
      remove.textContent = '×';
      remove.setAttribute('aria-label', `Remove ${file.name}`);
      remove.addEventListener('click', () => onRemove(index));
      chip.append(img, name, remove);
      return chip;
    }),
  );
}
