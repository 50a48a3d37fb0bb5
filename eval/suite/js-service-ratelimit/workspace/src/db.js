export function createDb() {
  const notes = [];
  return {
    list: () => [...notes],
    add(text) {
      const note = { id: notes.length + 1, text };
      notes.push(note);
      return note;
    },
  };
}
