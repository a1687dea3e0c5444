// Work that several callers want done once (a read of the chain, a fetch of an enclave's key), shared
// without sharing its promise. In a Worker every promise belongs to the request that made it: a
// request that awaits another request's pending promise has its continuation run in, or dropped
// with, the request that made it — the runtime then answers 500, "Cannot perform I/O on behalf of a
// different request" or "your Worker's code had hung" (workerd's handle_cross_request_promise_resolution;
// the soak found it, a few runs in a hundred failing whenever concurrent runs of one key shared a read).
// So the caller that starts the work awaits its own promise, and every other caller waits by looking:
// it checks the flight's outcome on its own timer, and once the flight is settled it reads the value
// (a plain field) or the error. A joiner that waits longer than it is willing to (the request that
// started the work may have been cut off, and its promise will never settle) is told so, and does
// the work itself.

/** How often a joiner looks first, and at most (it looks more seldom the longer it waits). */
const FIRST_LOOK_MS = 1;
const LONGEST_LOOK_MS = 16;

/** Thrown by `join` when the flight did not settle within the joiner's wait. */
export class FlightWaitExpired extends Error {
  constructor(waitedMs: number) {
    super(`the shared work did not settle within ${waitedMs} ms`);
    this.name = "FlightWaitExpired";
  }
}

export class Flight<T> {
  /** When the work started (ms, by the clock given). */
  readonly startedAt: number;
  /** The work's own promise: for the caller that started it, and only for it. */
  readonly promise: Promise<T>;
  #outcome: { value: T } | { error: unknown } | undefined;

  constructor(work: () => Promise<T>, startedAt: number = Date.now()) {
    this.startedAt = startedAt;
    this.promise = work();
    this.promise.then(
      (value) => {
        this.#outcome = { value };
      },
      (error: unknown) => {
        this.#outcome = { error };
      },
    );
  }

  /** Whether the work has ended (`outcome` then says how). */
  get settled(): boolean {
    return this.#outcome !== undefined;
  }

  /** What the work ended in, once it has: its value, or its error thrown. */
  outcome(): T {
    const outcome = this.#outcome;
    if (outcome === undefined) throw new Error("the flight has not settled");
    if ("error" in outcome) throw outcome.error;
    return outcome.value;
  }

  /**
   * The work's outcome for a caller that did not start it: waited for by looking, on the caller's
   * own timers, at most `maxWaitMs` (then FlightWaitExpired is thrown, and the caller should do the
   * work itself).
   */
  async join(maxWaitMs: number): Promise<T> {
    const deadline = Date.now() + maxWaitMs;
    let look = FIRST_LOOK_MS;
    while (this.#outcome === undefined) {
      const left = deadline - Date.now();
      if (left <= 0) throw new FlightWaitExpired(maxWaitMs);
      await new Promise((resolve) => setTimeout(resolve, Math.min(look, left)));
      look = Math.min(LONGEST_LOOK_MS, look * 2);
    }
    return this.outcome();
  }
}
