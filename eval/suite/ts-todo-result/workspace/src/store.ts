export interface Todo {
  id: number;
  title: string;
  done: boolean;
}

export class TodoStore {
  private todos = new Map<number, Todo>();
  private nextId = 1;

  add(title: string): Todo {
    const t = title.trim();
    if (!t) throw new Error("empty title");
    for (const x of this.todos.values()) if (!x.done && x.title === t) throw new Error(`duplicate: ${t}`);
    const todo = { id: this.nextId++, title: t, done: false };
    this.todos.set(todo.id, todo);
    return todo;
  }

  complete(id: number): Todo {
    const t = this.todos.get(id);
    if (!t) throw new Error(`no todo ${id}`);
    t.done = true;
    return t;
  }

  remove(id: number): void {
    if (!this.todos.delete(id)) throw new Error(`no todo ${id}`);
  }

  list(): Todo[] {
    return [...this.todos.values()];
  }
}
