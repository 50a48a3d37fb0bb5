/** A text document edited in place. */
export function createDocument(text = "") {
  return { text };
}

export function insert(doc, pos, text) {
  doc.text = doc.text.slice(0, pos) + text + doc.text.slice(pos);
}

export function remove(doc, pos, length) {
  doc.text = doc.text.slice(0, pos) + doc.text.slice(pos + length);
}

/** Replaces every occurrence of `find`; returns how many there were. */
export function replaceAll(doc, find, replacement) {
  const parts = doc.text.split(find);
  doc.text = parts.join(replacement);
  return parts.length - 1;
}
