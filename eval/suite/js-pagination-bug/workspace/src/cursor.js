/** Cursors are opaque to clients: base64url of the position after which the next page starts. */
export function encodeCursor(item) {
  return Buffer.from(JSON.stringify({ t: item.createdAt })).toString("base64url");
}

export function decodeCursor(cursor) {
  return JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
}
