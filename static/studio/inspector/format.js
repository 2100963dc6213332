// Numbers as people read them, the same rules as the studio's server-side filters
// (agents_app/templatetags/people_format.py): dollars to the cent, "< $0.01" for a cost under
// half a cent that is not zero.

export function usd(value) {
  const amount = Number(value || 0);
  if (amount > 0 && amount < 0.005) return '< $0.01';
  return `$${amount.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
}

export function count(value) {
  return Number(value || 0).toLocaleString('en-US');
}

export function duration(ms) {
  if (ms === null || ms === undefined) return '–';
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
}

export function bytes(size) {
  if (typeof size !== 'number') return '';
  if (size < 1024) return `${size} B`;
  if (size < 1048576) return `${Math.max(1, Math.round(size / 1024))} KB`;
  return `${(size / 1048576).toFixed(1)} MB`;
}

export function clock(us) {
  const date = new Date(Number(us) / 1000);
  return date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}
