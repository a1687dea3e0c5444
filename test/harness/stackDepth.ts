// A worker thread (layout.test.ts) that runs scripts recursing as deep as QuickJS lets them, each on
// a prepared sandbox instance, on the pool's 8 MiB native stack, and posts how deep each went into the
// instance's stack: the lowest non-zero byte of the stack just before the image is written back (the
// image keeps the stack zero, so every non-zero byte is the run's).
import { parentPort } from "node:worker_threads";
import { readEnclaveConfig } from "../../enclave/config.ts";
import { createInstance } from "../../enclave/sandbox/instance.ts";
import { prepareRuntime, runScript } from "../../enclave/sandbox/runtime.ts";

/** Each recurses through a different path of the engine until it throws (`d` is the entry). */
export const RECURSIONS: Record<string, string> = {
  plain: "function d(n) { return d(n + 1) + 1 }",
  manyArguments: "function d(a, b, c, e, f, g, h, i, j, k) { return d(a, b, c, e, f, g, h, i, j, k) + 1 }",
  getter: "const o = { get x() { return this.x + 1 } }; function d() { return o.x }",
  toString: "const o = { toString() { return String(this) } }; function d() { return String(o) }",
  jsonParse: 'function d() { return JSON.parse("[".repeat(200000) + "]".repeat(200000)) }',
  proxyChain: "let p = {}; for (let i = 0; i < 100000; i++) p = new Proxy(p, {}); function d() { return p.x }",
  proxyTrap: "const p = new Proxy({}, { get(t, k, r) { return r[k] } }); function d() { return p.x }",
  join: "function d() { let a = []; for (let i = 0; i < 200000; i++) a = [a]; return a.join() }",
  arrayToString: "function d() { let a = []; for (let i = 0; i < 200000; i++) a = [a]; return String(a) }",
  sortComparator: "function d() { return [3, 2, 1].sort(() => { d(); return 0 }) }",
  asyncFunction: "async function d(n) { return await d(n + 1) }",
  generator: "function* g() { yield* g() } function d() { return [...g()] }",
  structuredClone: "function d() { let a = {}; for (let i = 0; i < 100000; i++) a = { a }; return structuredClone(a) }",
  classChain:
    "function d() { let C = class {}; for (let i = 0; i < 50000; i++) C = class extends C {}; return new C() }",
};

const limits = readEnclaveConfig({
  SIGIL_ALLOWED_EDGE_KEYS: "ab".repeat(32),
  SIGIL_RPC_URL: "http://127.0.0.1:1",
  SIGIL_CONTRACT_ADDRESS: `0x${"11".repeat(20)}`,
}).limits;
let memory: WebAssembly.Memory | undefined;
const OriginalMemory = WebAssembly.Memory;
// biome-ignore lint/complexity/useArrowFunction: called with `new`, which an arrow function refuses
(WebAssembly as unknown as { Memory: unknown }).Memory = function (descriptor: WebAssembly.MemoryDescriptor) {
  memory = new OriginalMemory(descriptor);
  return memory;
};
const instance = await createInstance(limits);
(WebAssembly as unknown as { Memory: unknown }).Memory = OriginalMemory;
const prepared = await prepareRuntime(instance, limits);
const { staticEnd, heapStart } = instance.layout;
let depth = 0;
const restore = instance.restore.bind(instance);
instance.restore = () => {
  const bytes = new Uint8Array((memory as WebAssembly.Memory).buffer);
  let low = staticEnd;
  while (low < heapStart && bytes[low] === 0) low++;
  depth = heapStart - low;
  restore();
};
const host = { callAsync: async () => null, callSync: () => null };
const deepest: Record<string, number> = {};
for (const [name, source] of Object.entries(RECURSIONS)) {
  depth = 0;
  const code = `${source}\nasync function main() { try { await d(0) } catch (e) { return String(e) } }`;
  const outcome = await runScript(
    prepared,
    { code, cid: "QmStackDepth", paramsJson: "null", timeoutMs: 20_000, requestId: name, correlationId: null },
    limits,
    host,
  );
  if (!outcome.responseJson?.includes("overflow"))
    throw new Error(`${name} did not end in a stack overflow: ${JSON.stringify(outcome)}`);
  deepest[name] = depth;
}
parentPort?.postMessage(deepest);
