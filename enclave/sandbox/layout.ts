// The memory layout of the QuickJS build, and the same build relaid so that every byte a run could
// write is cheap to put back (image.ts). wasm-ld lays the build's memory out as
// [data and bss][stack][heap]: the build reserves 5 MiB of stack (quickjs-emscripten 0.32,
// templates/Variant.mk `-s STACK_SIZE=5MB`) and declares 16 MiB of memory at least. A run cannot
// use more than its stack limit of that stack (QuickJS checks it: `SIGIL_STACK_LIMIT_KB`, 1 MiB), but
// a memory-safety bug in the engine could write anywhere in the memory, so all of it is written back
// or zeroed after every run — and 16 MiB of which 10 are never used would cost every run 0.3 ms.
//
// So the build is relaid before it is compiled: its stack is made the run's stack limit plus a
// margin (C code between QuickJS's checks), the heap begins right above it, and the memory may start
// as small as that. Four constants of the module say where the stack ends and the heap begins, each
// patched in place (the same number of bytes, LEB128 allows padding), and each found exactly once or
// the build is refused rather than half relaid:
// - the first global, the stack pointer, whose initial value is the stack's top;
// - the word of static data that sbrk starts the heap from (`sbrk_val`, initialized to `__heap_base`,
//   which is the stack's top): the only data word that holds that value;
// - the two constants the start-up code (`__wasm_call_ctors`) stores into the main thread's record
//   (its stack's top and size), in the one function that holds both;
// - the memory import's minimum (16 MiB), so that the memory given to an instance may be smaller.
// The stack pointer is a global outside the memory: it is back at the stack's top whenever no call
// into the module runs, which is the only time an image is taken or written back.

/** The QuickJS build's own stack size (quickjs-emscripten 0.32, templates/Variant.mk: `-s STACK_SIZE=5MB`). */
export const QUICKJS_STACK_BYTES = 5 << 20;

/**
 * How far below QuickJS's own stack limit the stack reaches: C code runs between two of its checks,
 * and an error is built after the check that failed. Measured (layout.test.ts) at about 1 KiB for the
 * deepest recursions this sandbox knows; a stack that did run past it would only run into the run's own
 * static data, which is written back after the run like everything else.
 */
export const STACK_MARGIN_BYTES = 64 << 10;

const PAGE = 65_536;

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

/** The shortest signed LEB128 of a non-negative `value`. */
function encodeSleb(value: number): number[] {
  const out: number[] = [];
  for (;;) {
    const b = value & 0x7f;
    value = Math.floor(value / 128);
    if (value === 0 && !(b & 0x40)) return [...out, b];
    out.push(b | 0x80);
  }
}

/**
 * Writes the non-negative `value` as a LEB128 of exactly `length` bytes at `at` (padded with
 * continuation bytes; the same bytes serve signed and unsigned while the value's top bit is clear).
 */
function writePaddedLeb(bytes: Uint8Array, at: number, length: number, value: number): void {
  if (value < 0 || value >= 2 ** (7 * length - 1)) throw new Error(`${value} does not fit in a ${length}-byte LEB128`);
  for (let i = 0; i < length; i++) {
    const b = value & 0x7f;
    value = Math.floor(value / 128);
    bytes[at + i] = i === length - 1 ? b : b | 0x80;
  }
}

type Section = { id: number; start: number; end: number };

function sections(wasm: Uint8Array): Section[] {
  const out: Section[] = [];
  let at = 8; // magic and version
  while (at < wasm.length) {
    const id = wasm[at++] as number;
    let size: number;
    [size, at] = uleb(wasm, at);
    out.push({ id, start: at, end: at + size });
    at += size;
  }
  return out;
}

const section = (all: Section[], id: number): Section => {
  const s = all.find((x) => x.id === id);
  if (!s) throw new Error(`the QuickJS build has no section ${id}`);
  return s;
};

/** Where the first global's constant initial value (the stack pointer) is: [value, offset, length]. */
function stackPointerInit(wasm: Uint8Array, all: Section[]): { value: number; at: number; length: number } {
  const globals = section(all, 6);
  const [count, p] = uleb(wasm, globals.start);
  if (count === 0 || wasm[p] !== 0x7f || wasm[p + 1] !== 1 || wasm[p + 2] !== 0x41) {
    throw new Error("the QuickJS build has no stack pointer global the sandbox can read");
  }
  const [value, end] = sleb32(wasm, p + 3);
  return { value, at: p + 3, length: end - (p + 3) };
}

/** The end of the last active data segment placed at a constant offset. */
function dataEnd(wasm: Uint8Array, all: Section[]): number {
  const data = section(all, 11);
  let [count, p] = uleb(wasm, data.start);
  let end = 0;
  for (let i = 0; i < count; i++) {
    let flags: number;
    [flags, p] = uleb(wasm, p);
    if (flags !== 0) throw new Error("the QuickJS build has data segments of a kind the sandbox does not read");
    if (wasm[p] !== 0x41) throw new Error("the QuickJS build places a data segment at a computed offset");
    let offset: number;
    [offset, p] = sleb32(wasm, p + 1);
    p++; // end
    let length: number;
    [length, p] = uleb(wasm, p);
    p += length;
    end = Math.max(end, offset + length);
  }
  return end;
}

/**
 * The memory layout of a QuickJS build, from its WebAssembly bytes: the stack's top (the stack
 * pointer's initial value) and its low end, `stackBytes` below. Throws if the bytes do not describe
 * the [data][stack][heap] layout the sandbox relies on.
 */
export function readMemoryLayout(wasm: Uint8Array, stackBytes = QUICKJS_STACK_BYTES): MemoryLayout {
  const all = sections(wasm);
  const stackTop = stackPointerInit(wasm, all).value;
  const staticEnd = stackTop - stackBytes;
  const end = dataEnd(wasm, all);
  // The stack sits right above the data and bss: a bss of more than 64 KiB, or a stack that overlaps
  // the data, means the layout (or the stack size) is not the one assumed here.
  if (staticEnd < end || staticEnd - end > 64 << 10) {
    throw new Error(
      `the QuickJS build's memory layout is not [data][${stackBytes}-byte stack][heap] (stack top ${stackTop}, data end ${end})`,
    );
  }
  return { staticEnd, heapStart: stackTop };
}

/** Every offset in [start, end) where `pattern` begins. */
function occurrences(wasm: Uint8Array, pattern: number[], start: number, end: number): number[] {
  const found: number[] = [];
  const bytes = Buffer.from(wasm.buffer, wasm.byteOffset, wasm.byteLength);
  const needle = Buffer.from(pattern);
  for (let i = bytes.indexOf(needle, start); i !== -1 && i + needle.length <= end; i = bytes.indexOf(needle, i + 1))
    found.push(i);
  return found;
}

/** The one function body in the code section holding `at`: [start, end). */
function functionAround(wasm: Uint8Array, code: Section, at: number): [number, number] {
  let [count, p] = uleb(wasm, code.start);
  for (let i = 0; i < count; i++) {
    let size: number;
    [size, p] = uleb(wasm, p);
    if (at >= p && at < p + size) return [p, p + size];
    p += size;
  }
  throw new Error("an offset outside every function");
}

const exactlyOne = (found: number[], what: string): number => {
  if (found.length !== 1)
    throw new Error(
      `the QuickJS build has ${found.length} ${what}, not one: it is not laid out as the sandbox expects`,
    );
  return found[0] as number;
};

/** A QuickJS build relaid with a smaller stack, and its new layout. */
export type RelaidBuild = { wasm: Uint8Array; layout: MemoryLayout; original: MemoryLayout };

/**
 * A copy of the build whose stack is `stackBytes` (rounded up to 16) instead of its own, with the
 * heap right above it and a memory import whose minimum is the pages that hold data and stack.
 */
export function relayBuild(wasm: Uint8Array, stackBytes: number): RelaidBuild {
  const original = readMemoryLayout(wasm);
  const size = Math.ceil(stackBytes / 16) * 16;
  if (size > original.heapStart - original.staticEnd)
    throw new Error(`a stack of ${stackBytes} bytes is larger than the build's own`);
  const top = original.staticEnd + size;
  const out = Uint8Array.from(wasm);
  const all = sections(out);

  // The stack pointer's initial value.
  const sp = stackPointerInit(out, all);
  writePaddedLeb(out, sp.at, sp.length, top);

  // sbrk's start: the one data word holding the old top.
  const data = section(all, 11);
  const word = [0, 8, 16, 24].map((shift) => (original.heapStart >>> shift) & 0xff);
  const brk = exactlyOne(occurrences(out, word, data.start, data.end), "data words holding the heap's base");
  new DataView(out.buffer, out.byteOffset + brk, 4).setUint32(0, top, true);

  // The start-up code's record of the main thread's stack: its top and its size, in one function.
  const code = section(all, 10);
  const topConst = [0x41, ...encodeSleb(original.heapStart)];
  const at = exactlyOne(occurrences(out, topConst, code.start, code.end), "code constants of the stack's top");
  const [fnStart, fnEnd] = functionAround(out, code, at);
  const sizeConst = [0x41, ...encodeSleb(original.heapStart - original.staticEnd)];
  const sizeAt = exactlyOne(
    occurrences(out, sizeConst, fnStart, fnEnd),
    "constants of the stack's size beside its top",
  );
  writePaddedLeb(out, at + 1, topConst.length - 1, top);
  writePaddedLeb(out, sizeAt + 1, sizeConst.length - 1, size);

  // The memory import's minimum: the pages that hold data and stack.
  const imports = section(all, 2);
  let [count, p] = uleb(out, imports.start);
  let patchedMemory = false;
  for (let i = 0; i < count; i++) {
    let length: number;
    [length, p] = uleb(out, p); // module name
    p += length;
    [length, p] = uleb(out, p); // field name
    p += length;
    const kind = out[p++] as number;
    if (kind === 0) [, p] = uleb(out, p);
    else if (kind === 1) {
      const flags = out[p + 1] as number;
      [, p] = uleb(out, p + 2);
      if (flags & 1) [, p] = uleb(out, p);
    } else if (kind === 2) {
      const flags = out[p] as number;
      const [, minEnd] = uleb(out, p + 1);
      writePaddedLeb(out, p + 1, minEnd - (p + 1), Math.ceil(top / PAGE));
      p = minEnd;
      if (flags & 1) [, p] = uleb(out, p);
      patchedMemory = true;
    } else if (kind === 3) p += 2;
    else throw new Error(`the QuickJS build imports something of kind ${kind}`);
  }
  if (!patchedMemory) throw new Error("the QuickJS build imports no memory");

  const layout = { staticEnd: original.staticEnd, heapStart: top };
  // What was written reads back as the new layout.
  const check = readMemoryLayout(out, size);
  if (check.heapStart !== top) throw new Error("the relaid build does not read back as laid out");
  return { wasm: out, layout, original };
}
