// The pristine image of a prepared QuickJS instance (sandbox.md, Concurrency and isolation): the
// bytes of its linear memory just after its runtime and context were made and the sandbox's own
// JavaScript installed, written back over the memory after every run. Every run thus starts on a
// runtime and context that are, byte for byte, the ones made for the first — nothing a run leaves
// (globals, prototypes, timers, promises, modules, QuickJS's own allocator state) reaches the next —
// without paying to make them again (about 1 ms of a hello run's 1.4 ms here, most of it parsing
// core.js; writing the image back costs a few tens of microseconds).
//
// Which bytes: the build's memory is laid out by wasm-ld as [data and bss][stack][heap]. The data and
// bss hold QuickJS's and the allocator's static state (the break pointer among them); the heap holds
// the runtime, the context and every object; the stack holds nothing between calls into the module
// (its pointer is a WebAssembly global, back at the stack's top whenever no call is running, which
// is the only time an image is taken or written back). So the image is [0, stack low) and
// [stack high, the heap's break). The break — the end of what the allocator has taken with sbrk —
// is a pointer the C library keeps in its static data, like every other pointer the allocator keeps
// there into the heap: so the highest value in the heap's range among the static words that changed
// since the instance was made is the break (a changed word that is no pointer could only make the
// image larger, never smaller). The memory is never read past the break: a page of a WebAssembly
// memory that is read becomes resident, and scanning the whole 16 MiB would make every instance
// cost 16 MiB. Memory past the break is free space to the allocator; what a run left there is never
// read as a value (QuickJS initializes what it allocates, calloc clears) — as with any reused heap.
//
// State kept outside the memory must not change after the image is taken: the module's one global
// (the stack pointer) is back at the top between calls, and what quickjs-emscripten caches in
// JavaScript (the runtime's "system" context, a context's constant handles) is made before the image
// (runtime.ts, prepareRuntime) — one made by a run would outlive the memory it points into.
//
// The layout is read from the module's own bytes: the stack pointer's initial value (its first
// global) is the stack's top, and the stack is STACK_SIZE below it (the build's `-s STACK_SIZE=5MB`,
// quickjs-emscripten's Variant.mk). Both are checked against the module's data segments when the
// layout is read, so a build laid out otherwise is refused rather than half restored.

/** The QuickJS build's stack size (quickjs-emscripten 0.32, templates/Variant.mk: `-s STACK_SIZE=5MB`). */
export const QUICKJS_STACK_BYTES = 5 << 20;

export type MemoryLayout = {
  /** End of the data and bss: the stack's low end. */
  staticEnd: number;
  /** The stack's top, where the heap begins. */
  heapStart: number;
};

/** Reads an unsigned LEB128 at `at`: [value, next offset]. */
function uleb(bytes: Uint8Array, at: number): [number, number] {
  let value = 0;
  let shift = 0;
  let b: number;
  do {
    b = bytes[at++] as number;
    value += (b & 0x7f) * 2 ** shift;
    shift += 7;
  } while (b & 0x80);
  return [value, at];
}

/** Reads a signed 32-bit LEB128 at `at`: [value, next offset]. */
function sleb32(bytes: Uint8Array, at: number): [number, number] {
  let value = 0;
  let shift = 0;
  let b: number;
  do {
    b = bytes[at++] as number;
    value |= (b & 0x7f) << shift;
    shift += 7;
  } while (b & 0x80);
  if (shift < 32 && b & 0x40) value |= -1 << shift;
  return [value, at];
}

/**
 * The memory layout of a QuickJS build, from its WebAssembly bytes: the initial stack pointer (its
 * first global, a mutable i32 set by `i32.const`) and the end of its active data segments. Throws if
 * the bytes do not describe the [data][stack][heap] layout images rely on.
 */
export function readMemoryLayout(wasm: Uint8Array, stackBytes = QUICKJS_STACK_BYTES): MemoryLayout {
  let at = 8; // magic and version
  let stackTop: number | undefined;
  let dataEnd = 0;
  while (at < wasm.length) {
    const id = wasm[at++] as number;
    let size: number;
    [size, at] = uleb(wasm, at);
    const end = at + size;
    if (id === 6 && stackTop === undefined) {
      // The global section: the first global, if it is a mutable i32 with a constant initial value.
      let p = at;
      let count: number;
      [count, p] = uleb(wasm, p);
      if (count > 0 && wasm[p] === 0x7f && wasm[p + 1] === 1 && wasm[p + 2] === 0x41) [stackTop] = sleb32(wasm, p + 3);
    } else if (id === 11) {
      // The data section: where the last active segment at a constant offset ends.
      let p = at;
      let count: number;
      [count, p] = uleb(wasm, p);
      for (let i = 0; i < count; i++) {
        let flags: number;
        [flags, p] = uleb(wasm, p);
        if (flags !== 0) throw new Error("the QuickJS build has data segments of a kind the sandbox's images do not read");
        if (wasm[p] !== 0x41) throw new Error("the QuickJS build places a data segment at a computed offset");
        let offset: number;
        [offset, p] = sleb32(wasm, p + 1);
        p++; // end
        let length: number;
        [length, p] = uleb(wasm, p);
        p += length;
        dataEnd = Math.max(dataEnd, offset + length);
      }
    }
    at = end;
  }
  if (stackTop === undefined) throw new Error("the QuickJS build has no stack pointer global the sandbox's images can read");
  const staticEnd = stackTop - stackBytes;
  // The stack sits right above the data and bss: a bss of more than 64 KiB, or a stack that overlaps
  // the data, means the layout (or the stack size) is not the one assumed here.
  if (staticEnd < dataEnd || staticEnd - dataEnd > 64 << 10) {
    throw new Error(`the QuickJS build's memory layout is not [data][${stackBytes}-byte stack][heap] (stack top ${stackTop}, data end ${dataEnd})`);
  }
  return { staticEnd, heapStart: stackTop };
}

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
   * Takes the image of `memory` now (no call into the module may be running); `initialStatics` are
   * its first `layout.staticEnd` bytes as the instance was made (they locate the heap's break).
   */
  static capture(memory: WebAssembly.Memory, layout: MemoryLayout, initialStatics: Uint8Array): MemoryImage {
    const bytes = new Uint8Array(memory.buffer);
    const end = heapBreak(bytes, layout, initialStatics);
    return new MemoryImage(layout, bytes.slice(0, layout.staticEnd), bytes.slice(layout.heapStart, end));
  }

  /** The end of the heap part of the image (its break when it was taken). */
  get heapEnd(): number {
    return this.#layout.heapStart + this.#heap.byteLength;
  }

  /** The bytes the image holds (and writes back each time). */
  get byteLength(): number {
    return this.#statics.byteLength + this.#heap.byteLength;
  }

  /** Writes the image back over `memory` (no call into the module may be running). */
  restore(memory: WebAssembly.Memory): void {
    const bytes = new Uint8Array(memory.buffer);
    bytes.set(this.#statics, 0);
    bytes.set(this.#heap, this.#layout.heapStart);
  }

  /** Whether `memory` holds exactly the image now (for tests). */
  matches(memory: WebAssembly.Memory): boolean {
    const bytes = new Uint8Array(memory.buffer);
    return (
      Buffer.compare(Buffer.from(bytes.buffer, 0, this.#statics.byteLength), this.#statics) === 0 &&
      Buffer.compare(Buffer.from(bytes.buffer, this.#layout.heapStart, this.#heap.byteLength), this.#heap) === 0
    );
  }
}
