// The image of a prepared instance (image.ts): a heap break that covers every byte the allocator has
// handed out, and after every run a memory that is the image in every byte — statics and heap written
// back, the stack and everything above the break zeroed, up to the largest size the run made it —
// whatever the run did, with a check (`isPristine`) that sees a single byte out of place.
import { describe, expect, it } from "vitest";
import { readEnclaveConfig } from "../config.ts";
import { createInstance, type SandboxInstance } from "./instance.ts";
import { prepareRuntime, runScript, type PreparedRuntime } from "./runtime.ts";

const limits = readEnclaveConfig({
  SIGIL_ALLOWED_EDGE_KEYS: "ab".repeat(32),
  SIGIL_RPC_URL: "http://127.0.0.1:1",
  SIGIL_CONTRACT_ADDRESS: `0x${"11".repeat(20)}`,
}).limits;
const host = { callAsync: async () => null, callSync: () => null };
const request = (code: string) => ({
  code,
  cid: "QmImageTest",
  paramsJson: JSON.stringify({ secret: "image-test-secret" }),
  timeoutMs: 10_000,
  requestId: "image-test",
  correlationId: null,
});

/** An instance and the memory it was given (tests only: a real instance's memory is its own). */
async function instanceWithMemory(): Promise<{
  instance: SandboxInstance;
  memory: WebAssembly.Memory;
  prepared: PreparedRuntime;
}> {
  let memory: WebAssembly.Memory | undefined;
  const original = WebAssembly.Memory;
  // biome-ignore lint/complexity/useArrowFunction: called with `new`, which an arrow function refuses
  (WebAssembly as unknown as { Memory: unknown }).Memory = function (descriptor: WebAssembly.MemoryDescriptor) {
    memory = new original(descriptor);
    return memory;
  };
  let instance: SandboxInstance;
  try {
    instance = await createInstance(limits);
  } finally {
    (WebAssembly as unknown as { Memory: unknown }).Memory = original;
  }
  const prepared = await prepareRuntime(instance, limits);
  return { instance, memory: memory as WebAssembly.Memory, prepared };
}

describe("the image of a prepared instance (enclave/sandbox/image.ts)", () => {
  it("ends its heap at the break: every non-zero byte of a prepared instance's memory is below it, and the memory is the image in every byte once it is taken", async () => {
    const { instance, memory } = await instanceWithMemory();
    const bytes = new Uint8Array(memory.buffer);
    let last = bytes.length - 1;
    while (bytes[last] === 0) last--;
    expect(instance.imageHeapEnd).toBeGreaterThan(last);
    expect(instance.imageHeapEnd).toBeLessThan(bytes.length);
    // The stack is zero in the image: nothing between the statics and the heap.
    expect(bytes.subarray(instance.layout.staticEnd, instance.layout.heapStart).every((b) => b === 0)).toBe(true);
    expect(instance.isPristine()).toBe(true);
    // An instance is small: data, a stack of the run's limit and a margin, the runtime and a little room.
    expect(instance.preparedBytes).toBeLessThan(4 << 20);
  });

  it("sees one byte out of place anywhere in the memory — in the statics, the stack, the heap or above the break — until the image is written back", async () => {
    const { instance, memory } = await instanceWithMemory();
    const bytes = new Uint8Array(memory.buffer);
    for (const at of [
      16,
      instance.layout.staticEnd + 8,
      instance.layout.heapStart - 1,
      instance.layout.heapStart + 100,
      instance.imageHeapEnd,
      bytes.length - 1,
    ]) {
      bytes[at] = (bytes[at] as number) ^ 0x5a;
      expect(instance.isPristine(), `a byte changed at ${at}`).toBe(false);
      instance.restore();
      expect(instance.isPristine()).toBe(true);
    }
  });

  it("makes every byte the image's again after runs that write everywhere they can: a heap grown by megabytes, a deep stack, errors, timers, a resized buffer", async () => {
    const { instance, memory, prepared } = await instanceWithMemory();
    const grownTo: number[] = [];
    for (const code of [
      `async function main(p) { globalThis.x = p.secret.repeat(1 << 16); return [1, 2, 3].map((n) => n * 2) }`,
      `async function main(p) { const keep = []; for (let i = 0; i < 40; i++) keep.push(p.secret + "x".repeat(1 << 17) + i); return keep.length }`,
      // As deep as this thread's native stack allows (the pool's workers have more: layout.test.ts).
      `function down(n, s) { return n === 0 ? s.length : down(n - 1, s + "!") + 1 }\nasync function main(p) { return down(2000, p.secret) }`,
      `async function main(p) { throw new Error(p.secret) }`,
      `export default async function (p) { await new Promise((r) => setTimeout(r, 5)); return p.secret + Math.random() }`,
      `async function main(p) { const b = new ArrayBuffer(8, { maxByteLength: 1 << 20 }); b.resize(1 << 20); new Uint8Array(b).fill(7); return b.byteLength }`,
    ]) {
      const outcome = await runScript(prepared, request(code), limits, host);
      expect(outcome.error?.code ?? "ok", code).not.toBe("memory_limit");
      grownTo.push(memory.buffer.byteLength);
      expect(instance.isPristine(), code).toBe(true);
    }
    // The second run grew the memory by megabytes: every byte of it was zeroed too.
    expect(Math.max(...grownTo)).toBeGreaterThan(instance.preparedBytes + (4 << 20));
  });

  it("is not pristine while a run is under way (the check sees what a run writes), and is once it has ended", async () => {
    const { instance, prepared } = await instanceWithMemory();
    let seenWhileRunning: boolean | undefined;
    const watching = {
      callAsync: async () => {
        seenWhileRunning = instance.isPristine();
        return null;
      },
      callSync: () => null,
    };
    const outcome = await runScript(
      prepared,
      request(
        `async function main(p) { globalThis.kept = p.secret.repeat(100); await fetch("https://example.invalid/"); return 1 }`,
      ),
      limits,
      watching,
    );
    expect(outcome.responseJson ?? outcome.error).toBeDefined();
    expect(seenWhileRunning).toBe(false);
    expect(instance.isPristine()).toBe(true);
  });
});
