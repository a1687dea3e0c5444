// The QuickJS build's layout and the build relaid with a small stack (layout.ts): the layout read
// from the build itself, exactly the four constants changed, a build laid out otherwise refused, and
// a stack that holds the deepest recursions scripts can make within QuickJS's own limit and the margin.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { describe, expect, it } from "vitest";
import { QUICKJS_STACK_BYTES, readMemoryLayout, relayBuild, STACK_MARGIN_BYTES } from "./layout.ts";

const wasm = readFileSync(createRequire(import.meta.url).resolve("@jitl/quickjs-wasmfile-release-sync/wasm"));
const STACK = (1 << 20) + STACK_MARGIN_BYTES;

describe("the QuickJS build's memory layout (enclave/sandbox/layout.ts)", () => {
  it("reads the build's layout: data and bss, then the 5 MiB stack, then the heap", () => {
    const layout = readMemoryLayout(wasm);
    expect(layout.heapStart - layout.staticEnd).toBe(QUICKJS_STACK_BYTES);
    expect(layout.staticEnd).toBeGreaterThan(64 << 10);
    // Another stack size than the build's does not fit its data segments: refused, not guessed.
    expect(() => readMemoryLayout(wasm, QUICKJS_STACK_BYTES + (1 << 20))).toThrow(/layout/);
    expect(() => readMemoryLayout(wasm, QUICKJS_STACK_BYTES - (1 << 20))).toThrow(/layout/);
  });

  it("relays the build with the stack it is asked for, the heap right above it, and changes no other byte than the four constants and the memory's minimum", async () => {
    const original = readMemoryLayout(wasm);
    const relaid = relayBuild(wasm, STACK);
    expect(relaid.layout).toEqual({ staticEnd: original.staticEnd, heapStart: original.staticEnd + STACK });
    expect(readMemoryLayout(relaid.wasm, STACK)).toEqual(relaid.layout);
    expect(relaid.wasm.length).toBe(wasm.length);
    // The bytes that differ fall in five short runs: the stack pointer's initial value, sbrk's
    // starting word, the start-up code's two constants, the memory import's minimum.
    const changed: number[] = [];
    for (let i = 0; i < wasm.length; i++) if (wasm[i] !== relaid.wasm[i]) changed.push(i);
    const runs = changed.reduce<number[][]>((acc, i) => {
      const last = acc.at(-1);
      if (last && i - (last.at(-1) as number) <= 2) last.push(i);
      else acc.push([i]);
      return acc;
    }, []);
    expect(runs.length).toBeLessThanOrEqual(5);
    expect(runs.every((r) => (r.at(-1) as number) - (r[0] as number) < 5)).toBe(true);
    // sbrk's starting word now holds the new top, and no data word the old one.
    const word = (n: number) => Buffer.from(new Uint32Array([n]).buffer);
    expect(Buffer.from(relaid.wasm).indexOf(word(original.heapStart))).toBe(-1);
    expect(Buffer.from(relaid.wasm).indexOf(word(relaid.layout.heapStart))).toBeGreaterThan(0);
    // It compiles, and its memory import may be as small as data and stack.
    const module = await WebAssembly.compile(relaid.wasm as Uint8Array<ArrayBuffer>);
    const memory = WebAssembly.Module.imports(module).find((i) => i.kind === "memory");
    expect(memory).toBeDefined();
  });

  it("refuses a stack larger than the build's own, and a build whose stack pointer is not where the layout says", () => {
    expect(() => relayBuild(wasm, QUICKJS_STACK_BYTES + 16)).toThrow(/larger than the build's own/);
    // A build whose sbrk start is written twice cannot be relaid safely: refused, not half done.
    const original = readMemoryLayout(wasm);
    const doubled = Uint8Array.from(wasm);
    const word = Buffer.from(new Uint32Array([original.heapStart]).buffer);
    // The same word written again in the middle of the data section (the last section but the custom
    // ones: its payload is data segments' bytes, well past their headers at that point).
    const at = Buffer.from(doubled).indexOf(word);
    doubled.set(word, at - 4096);
    expect(() => relayBuild(doubled, STACK)).toThrow(/data words holding the heap's base/);
  });

  it("holds the deepest recursions a script can make: QuickJS's limit stops each within the margin below it, on a worker's 8 MiB native stack as the pool runs them", async () => {
    // In a worker thread with the pool's native stack (pool.ts), each script recurses until QuickJS
    // throws; before the image is written back, the lowest non-zero byte of the stack tells how deep
    // it went.
    const deepest = await new Promise<Record<string, number>>((resolve, reject) => {
      const worker = new Worker(new URL("../../test/harness/stackDepth.ts", import.meta.url), {
        resourceLimits: { stackSizeMb: 8 },
      });
      worker.once("message", resolve);
      worker.once("error", reject);
    });
    const limit = 1 << 20;
    for (const [name, depth] of Object.entries(deepest)) {
      expect.soft(depth, name).toBeGreaterThan(limit * 0.6);
      expect.soft(depth, name).toBeLessThan(limit + STACK_MARGIN_BYTES);
    }
    expect(Object.keys(deepest).length).toBeGreaterThanOrEqual(10);
  });
});
