// The pristine image of a prepared QuickJS instance (docs/design/sandbox.md, Concurrency and isolation): the
// bytes of its linear memory just after its runtime and context were made and the sandbox's own
// JavaScript installed, written back over the memory after every run. Every run thus starts on a
// runtime and context that are, byte for byte, the ones made for the first — nothing a run leaves
// (globals, prototypes, timers, promises, modules, QuickJS's own allocator state) reaches the next —
// without paying to make them again (about 1 ms of a hello run's 1.4 ms here, most of it parsing
// core.js).
//
// Every byte, not only those a well-behaved run writes. A run's secrets (its params, the keys it
// asked for, what it fetched and signed) sit somewhere in the memory when it ends; a memory-safety bug
// in the engine would let the next run read any byte of it (one did: issue 26, a SharedArrayBuffer
// grown past its allocation). So after a run the whole memory, up to the largest size the run made
// it, is the image again: the static data and the heap up to the image's break written back, the
// stack and everything above the break zeroed. `isPristine` checks exactly that, and the sandbox's
// residue tests scan every byte for what a run planted.
//
// Which bytes: the memory is laid out [data and bss][stack][heap] (layout.ts, which also makes the
// stack small enough to clear after each run). The data and bss hold QuickJS's and the allocator's
// static state (the break pointer among them); the heap holds the runtime, the context and every
// object; the stack holds nothing between calls into the module (its pointer is a WebAssembly
// global, back at the stack's top whenever no call is running, which is the only time an image is
// taken or written back): the image keeps it zero. The break — the end of what the allocator has
// taken with sbrk — is a pointer the C library keeps in its static data, like every other pointer the
// allocator keeps there into the heap: so the highest value in the heap's range among the static
// words that changed since the instance was made is the break (a changed word that is no pointer
// could only make the image larger, never smaller).
//
// State kept outside the memory must not change after the image is taken: the module's one global
// (the stack pointer) is back at the top between calls, and what quickjs-emscripten caches in
// JavaScript (the runtime's "system" context, a context's constant handles) is made before the image
// (runtime.ts, prepareRuntime) — one made by a run would outlive the memory it points into.
import type { MemoryLayout } from "./layout.ts";

/**
 * The heap's break: the highest value in [heapStart, the memory's size] among the 32-bit static
 * words that differ from `initialStatics` (the static data as the instance was made).
 */
function heapBreak(memory: Uint8Array, layout: MemoryLayout, initialStatics: Uint8Array): number {
  const now = new Uint32Array(memory.buffer, memory.byteOffset, layout.staticEnd >>> 2);
  const before = new Uint32Array(initialStatics.buffer, initialStatics.byteOffset, layout.staticEnd >>> 2);
  let end = layout.heapStart;
  for (let i = 0; i < now.length; i++) {
    const v = now[i] as number;
    if (v !== before[i] && v > end && v <= memory.byteLength) end = v;
  }
  return end;
}

/** The image of one instance's memory, taken once and written back after every run. */
export class MemoryImage {
  readonly #layout: MemoryLayout;
  readonly #statics: Uint8Array;
  readonly #heap: Uint8Array;

  private constructor(layout: MemoryLayout, statics: Uint8Array, heap: Uint8Array) {
    this.#layout = layout;
    this.#statics = statics;
    this.#heap = heap;
  }

  /**
   * Takes the image of `memory` now (no call into the module may be running), and makes the memory
   * exactly the image: its stack and what lies above the break zeroed. `initialStatics` are its first
   * `layout.staticEnd` bytes as the instance was made (they locate the heap's break).
   */
  static capture(memory: WebAssembly.Memory, layout: MemoryLayout, initialStatics: Uint8Array): MemoryImage {
    const bytes = new Uint8Array(memory.buffer);
    const end = heapBreak(bytes, layout, initialStatics);
    const image = new MemoryImage(layout, bytes.slice(0, layout.staticEnd), bytes.slice(layout.heapStart, end));
    image.restore(memory);
    return image;
  }

  /** The end of the heap part of the image (its break when it was taken). */
  get heapEnd(): number {
    return this.#layout.heapStart + this.#heap.byteLength;
  }

  /** The bytes the image holds (and writes back each time). */
  get byteLength(): number {
    return this.#statics.byteLength + this.#heap.byteLength;
  }

  /**
   * Makes the whole memory the image again (no call into the module may be running): the static data
   * and the heap below the image's break written back, the stack and everything above the break, up
   * to the memory's present size (it never shrinks: the largest the run made it), zeroed.
   */
  restore(memory: WebAssembly.Memory): void {
    const bytes = new Uint8Array(memory.buffer);
    // Zeroes first, the image last: the image's bytes are what the next run reads first, and they are
    // left in the cache.
    bytes.fill(0, this.#layout.staticEnd, this.#layout.heapStart);
    bytes.fill(0, this.heapEnd);
    bytes.set(this.#statics, 0);
    bytes.set(this.#heap, this.#layout.heapStart);
  }

  /**
   * Whether every byte of `memory` is the image's (zero where the image is zero), as `restore` leaves
   * it. Reads the whole memory: for tests and the sandbox's fuzzing, not for each run.
   */
  isPristine(memory: WebAssembly.Memory): boolean {
    const bytes = Buffer.from(memory.buffer);
    const zeroUpTo = (from: number, to: number): boolean => {
      const zeros = Buffer.alloc(Math.min(1 << 20, to - from));
      for (let at = from; at < to; at += zeros.length) {
        const n = Math.min(zeros.length, to - at);
        if (Buffer.compare(bytes.subarray(at, at + n), zeros.subarray(0, n)) !== 0) return false;
      }
      return true;
    };
    return (
      Buffer.compare(bytes.subarray(0, this.#layout.staticEnd), this.#statics) === 0 &&
      zeroUpTo(this.#layout.staticEnd, this.#layout.heapStart) &&
      Buffer.compare(bytes.subarray(this.#layout.heapStart, this.heapEnd), this.#heap) === 0 &&
      zeroUpTo(this.heapEnd, bytes.length)
    );
  }
}
