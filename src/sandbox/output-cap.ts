/**
 * Keeps the head and the tail of a stream within a byte budget. The middle of a long build log is
 * the least useful part to a model: the command echo and the final error sit at the ends.
 */
export class OutputCap {
  private readonly half: number;
  private head: Buffer[] = [];
  private headLen = 0;
  private tail: Buffer[] = [];
  private tailLen = 0;
  private total = 0;

  constructor(readonly capBytes: number) {
    this.half = Math.max(1, Math.floor(capBytes / 2));
  }

  push(chunk: Buffer): void {
    this.total += chunk.length;
    let rest = chunk;
    if (this.headLen < this.half) {
      const take = Math.min(this.half - this.headLen, rest.length);
      this.head.push(rest.subarray(0, take));
      this.headLen += take;
      rest = rest.subarray(take);
    }
    if (rest.length === 0) return;
    this.tail.push(rest);
    this.tailLen += rest.length;
    // Drop whole chunks from the front while the rest still fills the tail budget.
    while (this.tail.length > 1 && this.tailLen - this.tail[0]!.length >= this.half) {
      this.tailLen -= this.tail.shift()!.length;
    }
  }

  get truncated(): boolean {
    return this.total > this.headLen + Math.min(this.tailLen, this.half);
  }

  get totalBytes(): number {
    return this.total;
  }

  /** The kept text, with a marker saying how much was cut from the middle. */
  text(): string {
    let tailBuf = Buffer.concat(this.tail);
    // Decode uncut output in one piece: a character straddling the head/tail boundary must survive.
    if (!this.truncated) return Buffer.concat([...this.head, tailBuf]).toString("utf8");
    const head = Buffer.concat(this.head).toString("utf8");
    tailBuf = tailBuf.subarray(tailBuf.length - this.half);
    const cut = this.total - this.headLen - tailBuf.length;
    // Decoding a buffer cut mid-character yields U+FFFD at the edge; that is acceptable in a log.
    return `${head}\n[... ${cut} bytes cut by ledgerloop's output cap ...]\n${tailBuf.toString("utf8")}`;
  }
}

/** Shortens a string to `max` characters keeping head and tail, marking the cut. */
export function capText(text: string, max: number): string {
  if (text.length <= max) return text;
  const half = Math.floor((max - 60) / 2);
  return `${text.slice(0, half)}\n[... ${text.length - 2 * half} chars cut ...]\n${text.slice(text.length - half)}`;
}
