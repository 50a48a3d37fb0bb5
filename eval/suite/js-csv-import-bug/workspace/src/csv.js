/** Parses CSV text into an array of records (arrays of strings). */
export function parse(text) {
  const records = [];
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const fields = [];
    let field = "";
    let quoted = false;
    for (const ch of line) {
      if (ch === '"') quoted = !quoted;
      else if (ch === "," && !quoted) {
        fields.push(field);
        field = "";
      } else field += ch;
    }
    fields.push(field);
    records.push(fields);
  }
  return records;
}

/** CSV text for an array of records. */
export function stringify(records) {
  return records.map((r) => r.join(",")).join("\n") + "\n";
}
