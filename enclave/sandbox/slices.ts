// Which run's code a sandbox worker is executing right now, shared with the pool through a
// SharedArrayBuffer, so a slice that outlives its run's deadline can be ended from outside the
// worker's thread (docs/design/sandbox.md, Limits). QuickJS polls its interrupt handler only between bytecodes:
// one call of a built-in (a 16 MiB `indexOf`, a huge regexp, `repeat`) can hold the thread for
// seconds without a poll, so the deadline cannot be kept from inside.
//
// The protocol keeps the outside termination inside the slice it was meant for. The word at index 0
// is `seq << 2 | state`. The worker stores RUNNING when a slice begins and, when it ends, swaps
// RUNNING back to IDLE with compare-and-swap. The pool, finding a slice past its deadline, swaps
// RUNNING to KILLING with compare-and-swap and only then asks V8 to terminate the worker's current
// execution. Exactly one swap wins: if the pool's did, the worker's slice either is still running
// (the termination lands in it) or has just ended and finds KILLING — it then waits on the word
// (`awaitKill`), where the termination lands. Either way the termination never reaches code outside
// the slice, and afterwards the worker sees KILLING and knows which run lost its slice.
const IDLE = 0;
const RUNNING = 1;
const KILLING = 2;
const SEQ_MASK = 0x1fff_ffff;

/** Int32 words: [seq<<2|state, runId]; Float64: [deadline (epoch ms), started (epoch ms), the worker's sandbox heap (bytes)]. */
export const SLICE_BOARD_BYTES = 32;

type Views = { words: Int32Array; times: Float64Array };

function views(buffer: SharedArrayBuffer): Views {
  return { words: new Int32Array(buffer, 0, 2), times: new Float64Array(buffer, 8, 3) };
}

export type SliceInfo = { runId: number; deadline: number; startedAt: number };

/** The worker's side. */
export class SliceBoard {
  readonly #v: Views;
  #seq = 0;

  constructor(buffer: SharedArrayBuffer) {
    this.#v = views(buffer);
  }

  /** Marks the start of a slice of `runId`'s code, which may run until `deadline`; returns its word. */
  enter(runId: number, deadline: number): number {
    this.#seq = (this.#seq + 1) & SEQ_MASK;
    const { words, times } = this.#v;
    words[1] = runId;
    times[0] = deadline;
    times[1] = Date.now();
    const word = (this.#seq << 2) | RUNNING;
    // The store publishes the fields written before it (Atomics are sequentially consistent).
    Atomics.store(words, 0, word);
    return word;
  }

  /**
   * Ends the slice begun with `word`. False when the pool has already claimed it for termination:
   * the caller must then `awaitKill(word)` and not run anything else first.
   */
  leave(word: number): boolean {
    const seq = word & ~3;
    return Atomics.compareExchange(this.#v.words, 0, word, seq | IDLE) === word;
  }

  /** Waits for the termination the pool has sent (it lands here); true if it never came. */
  awaitKill(word: number, timeoutMs = 10_000): boolean {
    const seq = word & ~3;
    return Atomics.wait(this.#v.words, 0, seq | KILLING, timeoutMs) === "timed-out";
  }

  /** Publishes the bytes of the worker's QuickJS instances (their heaps), which the pool admits runs by. */
  setHeapBytes(bytes: number): void {
    this.#v.times[2] = bytes;
  }

  /** The slice the pool ended, if one was: its run, and how long it had run. Clears the claim. */
  takeKilled(now = Date.now()): { runId: number; ranMs: number } | undefined {
    const { words, times } = this.#v;
    const word = Atomics.load(words, 0);
    if ((word & 3) !== KILLING) return undefined;
    const killed = { runId: words[1] as number, ranMs: Math.max(0, now - (times[1] as number)) };
    Atomics.store(words, 0, (word & ~3) | IDLE);
    return killed;
  }
}

/** The pool's side. */
export class SliceWatch {
  readonly #v: Views;

  constructor(buffer: SharedArrayBuffer) {
    this.#v = views(buffer);
  }

  /** The slice running now, read consistently (undefined while idle or being killed). */
  current(): (SliceInfo & { word: number }) | undefined {
    const { words, times } = this.#v;
    for (let attempt = 0; attempt < 3; attempt++) {
      const word = Atomics.load(words, 0);
      if ((word & 3) !== RUNNING) return undefined;
      const info = { word, runId: words[1] as number, deadline: times[0] as number, startedAt: times[1] as number };
      if (Atomics.load(words, 0) === word) return info;
    }
    return undefined;
  }

  /** The bytes of the worker's QuickJS instances, as it last published them. */
  heapBytes(): number {
    return this.#v.times[2] as number;
  }

  /** Whether a termination was claimed and has not been taken by the worker yet. */
  killing(): boolean {
    return (Atomics.load(this.#v.words, 0) & 3) === KILLING;
  }

  /** Claims the current slice for termination if it is past `deadline + graceMs`; the claimed slice or undefined. */
  claimOverdue(now: number, graceMs: number): SliceInfo | undefined {
    const slice = this.current();
    if (!slice || now <= slice.deadline + graceMs) return undefined;
    const seq = slice.word & ~3;
    if (Atomics.compareExchange(this.#v.words, 0, slice.word, seq | KILLING) !== slice.word) return undefined;
    return { runId: slice.runId, deadline: slice.deadline, startedAt: slice.startedAt };
  }

  /** Lets a worker that waits in `awaitKill` go on (used only when no termination can be sent). */
  release(): void {
    Atomics.notify(this.#v.words, 0);
  }
}
