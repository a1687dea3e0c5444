// The image of a prepared QuickJS instance (image.ts): the layout read from the build itself, a
// heap break that covers every byte the allocator has handed out, an image that is written back
// byte for byte, and an instance that reads no page past the break (pages read become resident).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { readEnclaveConfig } from "../config.ts";
import { QUICKJS_STACK_BYTES, readMemoryLayout } from "./image.ts";
import { createInstance } from "./instance.ts";
import { prepareRuntime, runScript } from "./runtime.ts";

const limits = readEnclaveConfig({ SIGIL_ALLOWED_EDGE_KEYS: "ab".repeat(32), SIGIL_RPC_URL: "http://127.0.0.1:1", SIGIL_CONTRACT_ADDRESS: "0x" + "11".repeat(20) }).limits;
const wasm = readFileSync(createRequire(import.meta.url).resolve("@jitl/quickjs-wasmfile-release-sync/wasm"));
const host = { callAsync: async () => null, callSync: () => null };
const request = (code: string) => ({ code, cid: "QmImageTest", paramsJson: "null", timeoutMs: 10_000, requestId: "image-test", correlationId: null });

/** Captures the instance's memory (tests only: a real instance never reads past its break). */
function memoryOf(): { memory: () => WebAssembly.Memory; restoreGlobal: () => void } {
  let last: WebAssembly.Memory | undefined;
  const original = WebAssembly.Memory;
  (WebAssembly as unknown as { Memory: unknown }).Memory = function (descriptor: WebAssembly.MemoryDescriptor) {
    last = new original(descriptor);
    return last;
  };
  return { memory: () => last as WebAssembly.Memory, restoreGlobal: () => ((WebAssembly as unknown as { Memory: unknown }).Memory = original) };
}

describe("the image of a prepared instance (enclave/sandbox/image.ts)", () => {
  it("reads the build's layout: data and bss, then the 5 MiB stack, then the heap", () => {
    const layout = readMemoryLayout(wasm);
    expect(layout.heapStart - layout.staticEnd).toBe(QUICKJS_STACK_BYTES);
    expect(layout.staticEnd).toBeGreaterThan(64 << 10);
    // Another stack size than the build's does not fit its data segments: refused, not guessed.
    expect(() => readMemoryLayout(wasm, QUICKJS_STACK_BYTES + (1 << 20))).toThrow(/layout/);
    expect(() => readMemoryLayout(wasm, QUICKJS_STACK_BYTES - (1 << 20))).toThrow(/layout/);
  });

  it("ends its heap at the break: every non-zero byte of a prepared instance's heap is inside, and it is written back byte for byte after runs that change it", async () => {
    const spy = memoryOf();
    let instance;
    try {
      instance = await createInstance(limits.memoryLimitBytes);
    } finally {
      spy.restoreGlobal();
    }
    const memory = spy.memory();
    const prepared = await prepareRuntime(instance, limits);
    const bytes = new Uint8Array(memory.buffer);
    let last = bytes.length - 1;
    while (bytes[last] === 0) last--;
    expect(instance.imageHeapEnd).toBeGreaterThan(last);
    expect(instance.imageHeapEnd).toBeLessThan(bytes.length);
    const layout = readMemoryLayout(wasm);
    const statics = bytes.slice(0, layout.staticEnd);
    const heap = bytes.slice(layout.heapStart, instance.imageHeapEnd);
    for (const code of [
      `async function main() { globalThis.x = "y".repeat(1 << 20); return [1, 2, 3].map((n) => n * 2) }`,
      `async function main() { throw new Error("fails") }`,
      `export default async function () { await new Promise((r) => setTimeout(r, 5)); return Math.random() }`,
    ]) {
      await runScript(prepared, request(code), limits, host);
      const now = new Uint8Array(memory.buffer);
      expect(Buffer.compare(now.subarray(0, layout.staticEnd), statics)).toBe(0);
      expect(Buffer.compare(now.subarray(layout.heapStart, instance.imageHeapEnd), heap)).toBe(0);
    }
  });
});
