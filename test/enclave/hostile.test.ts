// The hostile-script suite (docs/design/sandbox.md, "Hostile-script suite (must stay green)"): scripts that
// loop, bomb memory, recurse, flood logs, hoard timers, tamper with built-ins and with `Sigil`,
// look for the host, generate code from strings, fetch loopback in its many spellings, use wallets
// that are not theirs, and arrive 1 000 at a time. Each must end in the documented result, and
// after each group the enclave process must still be alive, with no sandbox worker replaced, and
// still answer a hello-world run.
//
// One account runs everything: its group lists action "0" (any action) and one wallet, so any
// code may run without a group per CID. All traffic stays on the machine: fetches go to loopback
// (refused) or to the allow-listed fetch target.
import { getAddress, recoverMessageAddress, type Address, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { computeCid } from "../../shared/cid.ts";
import type { EnclaveProcess } from "../../bin/stack/enclave.ts";
import { startDnsServer, type DnsServer } from "../../emulators/dnsServer.ts";
import { internalHealthOf } from "../harness/channel.ts";
import { ok, run, type Reply, type RunResult } from "./client.ts";
import { callAt, startOwnEnclave } from "./ownEnclave.ts";

const HELLO = `async function main(params) {
  console.log("hello", params.name);
  return { greeting: "hello, " + params.name };
}`;

let apiKey: string;
/** In the account's group: usable by any action of the account. */
let wallet: Address;
/** The account's own, in no group. */
let walletOutsideGroup: Address;
/** The Account Master Wallet made with the account, in no group. */
let masterWallet: Address;
/** A wallet of another account. */
let foreignWallet: Address;
/** Sandbox workers replaced so far (the enclave's /health), as of the last health check. */
let knownRestarts: number;

const enclavePort = () => Number(new URL(inject("enclaveUrl")).port);
const targetUrl = () => inject("fetchTargetUrl");
const targetPort = () => Number(new URL(inject("fetchTargetUrl")).port);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function health(): Promise<{ sandbox: { worker_restarts: number; active_runs: number } }> {
  // The sandbox's figures are in the internal report, which only the channel reaches.
  return internalHealthOf<{ sandbox: { worker_restarts: number; active_runs: number } }>(inject("enclaveUrl"));
}

function expectRunError(r: Reply<RunResult>, code: string): NonNullable<RunResult["error"]> {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body.has_error, JSON.stringify(r.body).slice(0, 2000)).toBe(true);
  expect(r.body.error?.code, JSON.stringify(r.body).slice(0, 2000)).toBe(code);
  return r.body.error as NonNullable<RunResult["error"]>;
}

function expectSuccess(r: Reply<RunResult>): unknown {
  expect(r.status, JSON.stringify(r.body).slice(0, 2000)).toBe(200);
  expect(r.body.has_error, JSON.stringify(r.body).slice(0, 2000)).toBe(false);
  return r.body.response;
}

/** The process is alive, a hello-world run answers correctly, and no sandbox worker was replaced since the last check. */
async function expectEnclaveHealthy(): Promise<void> {
  expect(() => process.kill(inject("enclavePid"), 0)).not.toThrow();
  const r = await run(apiKey, HELLO, { name: "world" });
  expect(expectSuccess(r)).toEqual({ greeting: "hello, world" });
  expect(r.body.logs).toBe("hello world\n");
  expect(r.body.cid).toBe(await computeCid(HELLO));
  const before = knownRestarts;
  knownRestarts = (await health()).sandbox.worker_restarts;
  expect(knownRestarts, "sandbox workers replaced since the last check").toBe(before);
}

beforeAll(async () => {
  const account = await ok<{ api_key: string; wallet_address: Address }>("new_account", { account_name: "hostile" });
  apiKey = account.api_key;
  masterWallet = account.wallet_address;
  wallet = (await ok<{ wallet_address: Address }>("create_wallet", { api_key: apiKey, name: "in group" }))
    .wallet_address;
  walletOutsideGroup = (await ok<{ wallet_address: Address }>("create_wallet", { api_key: apiKey, name: "outside" }))
    .wallet_address;
  await ok("add_group", {
    api_key: apiKey,
    group_name: "any action",
    group_description: "",
    pkp_ids_permitted: [wallet],
    cid_hashes_permitted: ["0"],
  });
  const other = await ok<{ api_key: string }>("new_account", { account_name: "hostile neighbour" });
  foreignWallet = (await ok<{ wallet_address: Address }>("create_wallet", { api_key: other.api_key, name: "theirs" }))
    .wallet_address;
  knownRestarts = (await health()).sandbox.worker_restarts;
  await expectEnclaveHealthy();
});

describe("infinite loops", () => {
  it("a synchronous while(true) ends in timeout at its timeout_ms", async () => {
    const started = Date.now();
    const r = await run(apiKey, `async function main() { while (true) {} }`, null, { timeout_ms: 1000 });
    // Stopped by the interrupt handler (which names the run's limit), not by the pool's watchdog.
    expect(expectRunError(r, "timeout").message).toBe("the script ran past its time limit of 1000 ms");
    expect(Date.now() - started).toBeLessThan(4000);
  });

  it("a loop in a promise job ends in timeout", async () => {
    const r = await run(
      apiKey,
      `async function main() { await Promise.resolve().then(() => { while (true) {} }); }`,
      null,
      { timeout_ms: 1000 },
    );
    // Ended at its limit, by the interrupt handler or, on a machine too busy to run the thread within
    // the watchdog's grace, by the watchdog ("… and was stopped"); the first test pins the handler.
    expect(expectRunError(r, "timeout").message).toMatch(
      /^the script ran past its time limit of 1000 ms( and was stopped)?$/,
    );
  });

  it("a loop in a timer callback ends in timeout", async () => {
    const r = await run(
      apiKey,
      `async function main() { await new Promise((resolve) => setTimeout(() => { while (true) {} resolve(); }, 10)); }`,
      null,
      { timeout_ms: 1000 },
    );
    expect(expectRunError(r, "timeout").message).toMatch(
      /^the script ran past its time limit of 1000 ms( and was stopped)?$/,
    );
  });

  it("a hello-world run completes while another run is busy looping on a worker", async () => {
    const looping = run(apiKey, `async function main() { for (;;) {} }`, null, { timeout_ms: 3000 });
    await sleep(300); // the loop is running by now
    const started = Date.now();
    const hello = await run(apiKey, HELLO, { name: "neighbour" });
    const helloMs = Date.now() - started;
    expect(expectSuccess(hello)).toEqual({ greeting: "hello, neighbour" });
    expect(helloMs).toBeLessThan(1500);
    expectRunError(await looping, "timeout");
  });

  it("the enclave is alive and answers hello world after the loops", expectEnclaveHealthy);
});

describe("memory and stack", () => {
  it("an array of small objects growing forever ends in memory_limit", async () => {
    const r = await run(
      apiKey,
      `async function main() { const hoard = []; for (let i = 0; ; i++) hoard.push({ i }); }`,
      null,
      { timeout_ms: 10_000 },
    );
    expectRunError(r, "memory_limit");
  });

  it("an array of objects holding fresh strings and arrays, growing forever, ends in memory_limit", async () => {
    const r = await run(
      apiKey,
      `async function main() { const hoard = []; for (let i = 0; ; i++) hoard.push({ i, tag: "x" + i, list: [i, i] }); }`,
      null,
      { timeout_ms: 10_000 },
    );
    expectRunError(r, "memory_limit");
  });

  // Each iteration allocates megabytes in one C call, so QuickJS's interrupt poll (every few
  // thousand iterations) comes far too late; the run's own instance refuses to grow past its limit
  // instead, the allocation throws "out of memory" inside the script, and the run ends in
  // memory_limit — its worker kept, and the runs sharing that worker untouched.
  it("an array of 1 MiB strings growing forever ends in memory_limit, without harming the runs that share its worker", async () => {
    const sleeper = `async function main(p) { await new Promise((r) => setTimeout(r, 1500)); return "still here " + p.n; }`;
    const neighbours = [0, 1, 2, 3].map((n) => run(apiKey, sleeper, { n }));
    await sleep(200);
    const code = `async function main() { const hoard = []; for (let i = 0; ; i++) hoard.push("x".repeat(1 << 20) + i); }`;
    const r = await run(apiKey, code, null, { timeout_ms: 20_000 });
    expectRunError(r, "memory_limit");
    expect(r.body.duration_ms).toBeLessThan(15_000);
    expect((await Promise.all(neighbours)).map(expectSuccess)).toEqual([0, 1, 2, 3].map((n) => `still here ${n}`));
  });

  it("a script that catches its out-of-memory and goes on allocating still ends in memory_limit", async () => {
    const code = `async function main() {
      const hoard = [];
      for (;;) { try { hoard.push("y".repeat(1 << 20)); } catch (e) { /* keep trying */ } }
    }`;
    expectRunError(await run(apiKey, code, null, { timeout_ms: 20_000 }), "memory_limit");
  });

  it("an array of small strings growing forever ends in memory_limit (measured at the interrupt poll)", async () => {
    const code = `async function main() { const hoard = []; for (let i = 0; ; i++) hoard.push("x".repeat(64) + i); }`;
    const r = await run(apiKey, code, null, { timeout_ms: 10000 });
    expectRunError(r, "memory_limit");
  });

  it("one uncaught huge allocation (new ArrayBuffer(1e9)) ends in memory_limit", async () => {
    const r = await run(apiKey, `async function main() { return new ArrayBuffer(1e9).byteLength; }`);
    expectRunError(r, "memory_limit");
  });

  it("a huge allocation is a catchable InternalError (out of memory), and the script goes on", async () => {
    const code = `async function main() {
      let caught;
      try { new ArrayBuffer(1e9); } catch (e) { caught = { name: e.name, message: e.message }; }
      return { caught, after: new ArrayBuffer(16).byteLength };
    }`;
    expect(expectSuccess(await run(apiKey, code))).toEqual({
      caught: { name: "InternalError", message: "out of memory" },
      after: 16,
    });
  });

  it("deep recursion ends in script_error saying the stack overflowed", async () => {
    const r = await run(
      apiKey,
      `function down(n) { return down(n + 1) + 1; }\nasync function main() { return down(0); }`,
    );
    const error = expectRunError(r, "script_error");
    expect(error.message).toMatch(/stack overflow|call stack/i);
  });

  it("a script that catches the stack overflow goes on and returns a value", async () => {
    const code = `function down(n) { return down(n + 1) + 1; }
    async function main() {
      let caught = null;
      try { down(0); } catch (e) { caught = e.message; }
      return { caught, sum: [1, 2, 3].reduce((a, b) => a + b, 0) };
    }`;
    const response = expectSuccess(await run(apiKey, code)) as { caught: string; sum: number };
    expect(response.caught).toMatch(/stack overflow|call stack/i);
    expect(response.sum).toBe(6);
  });

  it("the enclave is alive and answers hello world after the memory and stack cases", expectEnclaveHealthy);
});

describe("logs, responses and timers", () => {
  const MARKER = "[sigil] log limit of 262144 bytes reached; further output was dropped";

  it("10 MiB of console.log output keeps at most 256 KiB of logs plus one marker line, and the run succeeds", async () => {
    const code = `async function main() {
      const line = "y".repeat(1023);
      for (let i = 0; i < 10240; i++) console.log(line);
      return "done";
    }`;
    const r = await run(apiKey, code);
    expect(expectSuccess(r)).toBe("done");
    const lines = r.body.logs.split("\n");
    expect(lines.pop()).toBe(""); // logs end with a newline
    expect(lines.pop()).toBe(MARKER);
    expect(lines.length).toBeGreaterThan(200);
    expect(lines.every((l) => l === "y".repeat(1023))).toBe(true);
    expect(Buffer.byteLength(r.body.logs)).toBeLessThanOrEqual(256 * 1024 + MARKER.length + 1);
  });

  it("a single 10 MiB log line is dropped with the marker, and the run succeeds", async () => {
    const r = await run(
      apiKey,
      `async function main() { console.log("z".repeat(10 << 20)); console.log("after"); return "done"; }`,
    );
    expect(expectSuccess(r)).toBe("done");
    expect(r.body.logs).toBe(`${MARKER}\n`);
  });

  it("returning a 2 MiB string ends in limit_exceeded", async () => {
    const r = await run(apiKey, `async function main() { return "r".repeat(2 << 20); }`);
    expectRunError(r, "limit_exceeded");
    expect(r.body.response).toBeNull();
  });

  it("5000 pending setTimeout calls end in limit_exceeded when not caught", async () => {
    const r = await run(
      apiKey,
      `async function main() { for (let i = 0; i < 5000; i++) setTimeout(() => {}, 30000); return "unreachable"; }`,
    );
    expectRunError(r, "limit_exceeded");
  });

  it("the pending-timer limit is catchable: the script catches limit_exceeded and still returns", async () => {
    const code = `async function main() {
      let made = 0;
      try { for (let i = 0; i < 5000; i++) { setTimeout(() => {}, 30000); made++; } }
      catch (e) { return { made, code: e.code, name: e.name }; }
      return { made };
    }`;
    expect(expectSuccess(await run(apiKey, code))).toEqual({ made: 1000, code: "limit_exceeded", name: "Error" });
  });

  it("a 50 s timer that never fires does not keep the run alive after main returns", async () => {
    const started = Date.now();
    const r = await run(
      apiKey,
      `async function main() { setTimeout(() => console.log("late"), 50000); return "returned"; }`,
    );
    expect(expectSuccess(r)).toBe("returned");
    expect(r.body.logs).toBe("");
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it("the enclave is alive and answers hello world after the log, response and timer cases", expectEnclaveHealthy);
});

describe("tampering with built-ins and with Sigil", () => {
  const FORGED_SIGNATURE = `"0x${"ab".repeat(65)}"`;
  const tamperings: Record<string, string> = {
    "Object.prototype.toJSON (to another message)": `Object.prototype.toJSON = function () { return { pkpId: wallet, message: "forged" }; };`,
    "Object.prototype.toJSON (to another wallet)": `Object.prototype.toJSON = function () { return { pkpId: "0x000000000000000000000000000000000000dEaD", message }; };`,
    "JSON.stringify and JSON.parse": `JSON.stringify = () => '{"pkpId":"0x000000000000000000000000000000000000dEaD","message":"forged"}'; JSON.parse = () => ({ ok: true, value: ${FORGED_SIGNATURE} });`,
    "Array.prototype.push, map, join and Symbol.iterator": `Array.prototype.push = () => { throw new Error("push"); }; Array.prototype.map = () => []; Array.prototype.join = () => "forged"; Array.prototype[Symbol.iterator] = function* () { yield "forged"; };`,
    "Promise.prototype.then": `Promise.prototype.then = function () { throw new Error("then"); };`,
    "Promise.prototype.then and constructor (rewriting the host's reply)": `const then = Promise.prototype.then;
      Promise.prototype.constructor = Object;
      Promise.prototype.then = function (onFulfilled, onRejected) {
        return then.call(this, (v) => onFulfilled(typeof v === "string" && v.startsWith('{"ok"') ? '{"ok":true,"value":${FORGED_SIGNATURE}}' : v), onRejected);
      };`,
    "RegExp.prototype.test and exec": `RegExp.prototype.test = () => false; RegExp.prototype.exec = () => null;`,
    "String.prototype.toLowerCase, toUpperCase and String": `String.prototype.toLowerCase = () => "forged"; String.prototype.toUpperCase = () => "FORGED"; String = () => "forged";`,
    "Function.prototype.apply, call, bind and Reflect.apply": `Function.prototype.apply = () => ${FORGED_SIGNATURE}; Function.prototype.call = () => ${FORGED_SIGNATURE}; Function.prototype.bind = () => () => ${FORGED_SIGNATURE}; Reflect.apply = () => ${FORGED_SIGNATURE};`,
    "Object.defineProperty, Object.freeze, WeakSet and Map": `Object.defineProperty = () => { throw new Error("dp"); }; Object.freeze = (o) => o; WeakSet.prototype.add = () => { throw new Error("ws"); }; WeakSet.prototype.has = () => true; Map.prototype.get = () => undefined; Map.prototype.set = () => { throw new Error("map"); };`,
    "setters and getters on Object.prototype": `for (const k of ["ok", "value", "pkpId", "message", "code", "raw", "get", "set", "writable"]) Object.defineProperty(Object.prototype, k, { __proto__: null, get() { return ${FORGED_SIGNATURE}; }, set() {}, configurable: true });`,
    "Error constructors and the global Promise": `Error = TypeError = RangeError = function () { return { forged: true }; }; globalThis.Promise = function () {};`,
  };

  for (const [name, tamper] of Object.entries(tamperings)) {
    it(`tampering with ${name} does not change what signMessage signs`, async () => {
      const message = `tamper-proof: ${name}`;
      const code = `async function main({ wallet, message }) {
        ${tamper}
        return await Sigil.Actions.signMessage({ pkpId: wallet, message });
      }`;
      const r = await run(apiKey, code, { wallet, message });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.has_error, JSON.stringify(r.body)).toBe(false);
      const signature = r.body.response as Hex;
      expect(await recoverMessageAddress({ message, signature })).toBe(getAddress(wallet));
    });
  }

  it("with RegExp.prototype.exec tampered, a malformed pkpId is still refused as a TypeError before the host is asked", async () => {
    const code = `async function main() {
      RegExp.prototype.exec = function () { return [""]; };
      return await Sigil.Actions.signMessage({ pkpId: "0xdeadbeef", message: "x" });
    }`;
    const error = expectRunError(await run(apiKey, code), "script_error");
    expect(error.message).toMatch(/^TypeError: signMessage: pkpId must be a wallet address/);
  });

  it("Sigil, Sigil.Actions and Sigil.Actions.signMessage cannot be replaced, deleted, redefined or re-prototyped", async () => {
    const code = `var Sigil = "shadow attempt";
    async function main({ wallet }) {
      const original = { Sigil: globalThis.Sigil, Actions: globalThis.Sigil.Actions, signMessage: globalThis.Sigil.Actions.signMessage, request: globalThis.Sigil.request };
      const fake = () => "0xforged";
      const attempts = {
        "Sigil =": () => { Sigil = 1; },
        "globalThis.Sigil =": () => { globalThis.Sigil = 1; },
        "delete globalThis.Sigil": () => delete globalThis.Sigil,
        "Sigil.Actions =": () => { original.Sigil.Actions = {}; },
        "delete Sigil.Actions": () => delete original.Sigil.Actions,
        "defineProperty(Sigil, Actions)": () => Object.defineProperty(original.Sigil, "Actions", { value: {} }),
        "setPrototypeOf(Sigil)": () => Object.setPrototypeOf(original.Sigil, { Actions: {} }),
        "Sigil.Actions.signMessage =": () => { original.Actions.signMessage = fake; },
        "delete Sigil.Actions.signMessage": () => delete original.Actions.signMessage,
        "defineProperty(Sigil.Actions, signMessage)": () => Object.defineProperty(original.Actions, "signMessage", { value: fake }),
        "setPrototypeOf(Sigil.Actions)": () => Object.setPrototypeOf(original.Actions, { signMessage: fake }),
        "Sigil.Actions.extra =": () => { original.Actions.extra = fake; },
        "signMessage.call =": () => { original.signMessage.call = fake; },
        "defineProperty(signMessage, apply)": () => Object.defineProperty(original.signMessage, "apply", { value: fake }),
        "delete signMessage.name": () => delete original.signMessage.name,
        "setPrototypeOf(signMessage)": () => Object.setPrototypeOf(original.signMessage, null),
        "Sigil.request.cid =": () => { original.request.cid = "forged"; },
      };
      const outcome = {};
      for (const [what, attempt] of Object.entries(attempts)) {
        try { const result = attempt(); outcome[what] = result === false ? "refused" : "no error"; }
        catch (e) { outcome[what] = e.name; }
      }
      return {
        outcome,
        same: globalThis.Sigil === original.Sigil && Sigil === original.Sigil && original.Sigil.Actions === original.Actions && original.Actions.signMessage === original.signMessage && original.Sigil.request === original.request,
        frozen: [original.Sigil, original.Actions, original.signMessage, original.request].map(Object.isFrozen),
        prototypes: [Object.getPrototypeOf(original.Sigil) === Object.prototype, Object.getPrototypeOf(original.Actions) === Object.prototype, Object.getPrototypeOf(original.signMessage) === Function.prototype],
        extras: [typeof original.Actions.extra, Object.prototype.hasOwnProperty.call(original.signMessage, "call"), Object.prototype.hasOwnProperty.call(original.signMessage, "apply"), original.signMessage.name],
        cid: original.request.cid,
        signature: await original.signMessage({ pkpId: wallet, message: "still mine" }),
      };
    }`;
    const r = await run(apiKey, code, { wallet });
    const out = expectSuccess(r) as {
      outcome: Record<string, string>;
      same: boolean;
      frozen: boolean[];
      prototypes: boolean[];
      extras: unknown[];
      cid: string;
      signature: Hex;
    };
    // Every attempt failed: by a TypeError, by `delete` answering false, or silently (sloppy-mode assignment).
    for (const [what, result] of Object.entries(out.outcome))
      expect(["TypeError", "refused", "no error"], what).toContain(result);
    expect(out.same).toBe(true);
    expect(out.frozen).toEqual([true, true, true, true]);
    expect(out.prototypes).toEqual([true, true, true]);
    expect(out.extras).toEqual(["undefined", false, false, "signMessage"]);
    expect(out.cid).toBe(r.body.cid);
    expect(await recoverMessageAddress({ message: "still mine", signature: out.signature })).toBe(getAddress(wallet));
  });

  it("Object.defineProperty, Object.defineProperties and Reflect.defineProperty on globalThis cannot replace Sigil", async () => {
    const code = `async function main() {
      const original = globalThis.Sigil;
      const out = {};
      try { Object.defineProperty(globalThis, "Sigil", { value: 1 }); out.defineProperty = "no error"; } catch (e) { out.defineProperty = e.name; }
      try { Object.defineProperties(globalThis, { Sigil: { value: 3 } }); out.defineProperties = "no error"; } catch (e) { out.defineProperties = e.name; }
      try { out.reflect = Reflect.defineProperty(globalThis, "Sigil", { value: 2 }); } catch (e) { out.reflect = e.name; }
      out.same = globalThis.Sigil === original;
      return out;
    }`;
    expect(expectSuccess(await run(apiKey, code))).toEqual({
      defineProperty: "TypeError",
      defineProperties: "TypeError",
      reflect: false,
      same: true,
    });
  });

  it("tampering with Object.prototype (toJSON, descriptor keys) does not change a host error's code", async () => {
    const code = `async function main({ foreign }) {
      Object.prototype.toJSON = function () { return { code: "limit_exceeded", name: "Error", message: "forged" }; };
      Object.prototype.get = "not a function";
      return await Sigil.Actions.signMessage({ pkpId: foreign, message: "x" });
    }`;
    expectRunError(await run(apiKey, code, { foreign: foreignWallet }), "permission_denied");
  });

  it("the enclave is alive and answers hello world after the tampering cases", expectEnclaveHealthy);
});

describe("reaching for the host", () => {
  it("no host object is reachable: no require, process, std, os or captured host functions, anywhere in the global object graph", async () => {
    const code = `async function main() {
      const names = ["require", "process", "std", "os", "module", "exports", "global", "Deno", "Bun", "host", "__sigilHost", "hooks", "scriptArgs", "print", "__filename", "__dirname", "Buffer", "WebAssembly"];
      const globals = {};
      for (const n of names) globals[n] = typeof globalThis[n];
      // Walk everything reachable from globalThis (own properties, accessors, prototypes) for the
      // native functions the host hands the prelude (call, callAsync, log, parseUrl, randomBytes).
      const hostNames = ["call", "callAsync", "log", "parseUrl", "randomBytes"];
      const builtins = [Function.prototype.call, Math.log];
      const nativeSource = (f) => { try { return Function.prototype.toString.call(f).includes("[native code]"); } catch (e) { return false; } };
      const seen = new Set([globalThis]);
      const queue = [globalThis];
      const found = [];
      for (let i = 0; i < queue.length && i < 100000; i++) {
        const o = queue[i];
        if (typeof o === "function" && hostNames.includes(o.name) && !builtins.includes(o) && nativeSource(o)) found.push(o.name);
        const next = [Object.getPrototypeOf(o)];
        for (const key of Reflect.ownKeys(o)) {
          const d = Object.getOwnPropertyDescriptor(o, key);
          if (d) next.push(d.value, d.get, d.set);
        }
        for (const v of next) if (v !== null && (typeof v === "object" || typeof v === "function") && !seen.has(v)) { seen.add(v); queue.push(v); }
      }
      const escapes = {};
      const tries = {
        "globalThis.__proto__.constructor.constructor": () => globalThis.__proto__.constructor.constructor("return process")(),
        "this.constructor.constructor": () => this.constructor.constructor("return this")(),
        "arguments.callee.constructor": function () { return arguments.callee.constructor("return process")(); },
      };
      for (const [what, attempt] of Object.entries(tries)) {
        try { escapes[what] = typeof attempt(); } catch (e) { escapes[what] = e.name; }
      }
      const imports = {};
      for (const specifier of ["fs", "node:fs", "std", "os", "child_process"]) {
        try { await import(specifier); imports[specifier] = "imported"; } catch (e) { imports[specifier] = e.name + ": " + e.message; }
      }
      return { globals, walked: queue.length, found, escapes, imports, protoIsObject: Object.getPrototypeOf(globalThis) === Object.prototype };
    }`;
    const out = expectSuccess(await run(apiKey, code)) as {
      globals: Record<string, string>;
      walked: number;
      found: string[];
      escapes: Record<string, string>;
      imports: Record<string, string>;
      protoIsObject: boolean;
    };
    for (const [name, type] of Object.entries(out.globals)) expect(type, name).toBe("undefined");
    expect(out.walked).toBeGreaterThan(500);
    expect(out.found).toEqual([]);
    for (const [what, result] of Object.entries(out.escapes)) expect(result, what).toBe("EvalError");
    for (const [specifier, result] of Object.entries(out.imports))
      expect(result, specifier).toMatch(/^\w*Error: .*could not load module/);
    expect(out.protoIsObject).toBe(true);
  });

  it("a module importing a host module fails with script_error, not a crash", async () => {
    const r = await run(
      apiKey,
      `import * as fs from "fs";\nexport default async function main() { return typeof fs.readFileSync; }`,
    );
    const error = expectRunError(r, "script_error");
    expect(error.message).toMatch(/could not load module 'fs'/);
  });

  it("eval, new Function and every function constructor throw EvalError", async () => {
    const code = `async function main() {
      const attempts = {
        'eval("1")': () => eval("1"),
        'indirect eval': () => (0, eval)("1"),
        'new Function': () => new Function("return 1"),
        'Function()': () => Function("return 1"),
        'Function.prototype.constructor': () => Function.prototype.constructor("return 1"),
        'AsyncFunction': () => (async function () {}).constructor("return 1"),
        'async arrow constructor': () => Object.getPrototypeOf(async () => {}).constructor("return 1"),
        'GeneratorFunction': () => (function* () {}).constructor("yield 1"),
        'AsyncGeneratorFunction': () => (async function* () {}).constructor("yield 1"),
        'Reflect.construct(Function)': () => Reflect.construct(Function, ["return 1"]),
        'class constructor.constructor': () => (class {}).constructor("return 1"),
      };
      const out = {};
      for (const [what, attempt] of Object.entries(attempts)) {
        try { attempt(); out[what] = "ran"; } catch (e) { out[what] = e.name; }
      }
      let timerString;
      try { setTimeout("globalThis.ran = 1", 0); timerString = "accepted"; } catch (e) { timerString = e.name; }
      return { out, timerString };
    }`;
    const { out, timerString } = expectSuccess(await run(apiKey, code)) as {
      out: Record<string, string>;
      timerString: string;
    };
    expect(Object.keys(out)).toHaveLength(11);
    for (const [what, result] of Object.entries(out)) expect(result, what).toBe("EvalError");
    expect(timerString).toBe("TypeError");
  });

  it("the enclave is alive and answers hello world after reaching for the host", expectEnclaveHealthy);
});

describe("fetch to loopback and to the enclave", () => {
  /** Fetches every URL in turn, returning each error message (or "fetched <status>"). */
  const FETCH_ALL = `async function main({ urls }) {
    const out = {};
    for (const url of urls) {
      try { const res = await fetch(url); out[url] = "fetched " + res.status + " " + (await res.text()).slice(0, 40); }
      catch (e) { out[url] = e.name + ": " + e.message; }
    }
    return out;
  }`;

  const loopbackSpellings = () => [
    `http://127.0.0.1:${enclavePort()}/health`,
    `http://localhost:${enclavePort()}/health`,
    `http://[::1]:${enclavePort()}/health`,
    `http://0.0.0.0:${enclavePort()}/health`,
    "http://127.0.0.1/",
    "http://127.1.2.3/",
    "http://127.1/",
    "http://localhost/",
    "http://LOCALHOST./",
    "http://anything.localhost/",
    "http://[::1]/",
    "http://[0:0:0:0:0:0:0:1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:7f00:1]/",
    "http://2130706433/",
    "http://0x7f000001/",
    "http://0x7f.0.0.1/",
    "http://0177.0.0.1/",
    "http://0/",
    "http://0.0.0.0/",
    "http://[::]/",
    "https://127.0.0.1/",
    // The fetch target's own port is allow-listed only as exactly 127.0.0.1:<port>.
    `http://localhost:${targetPort()}/hello`,
    `http://127.0.0.2:${targetPort()}/hello`,
    `http://[::ffff:127.0.0.1]:${targetPort()}/hello`,
  ];

  it("every spelling of loopback, and the enclave's own port, is refused", async () => {
    const urls = loopbackSpellings();
    const out = expectSuccess(await run(apiKey, FETCH_ALL, { urls })) as Record<string, string>;
    expect(Object.keys(out)).toHaveLength(urls.length);
    for (const url of urls) expect(out[url], url).toMatch(/^TypeError: fetch to \S+ refused: /);
    for (const url of urls.slice(0, 4)) expect(out[url], url).toMatch(/port \d+ belongs to the service itself/);
  });

  it("schemes other than http and https are refused", async () => {
    const urls = ["file:///etc/passwd", "ftp://127.0.0.1/", "data:text/plain,hi", "ws://127.0.0.1/"];
    const out = expectSuccess(await run(apiKey, FETCH_ALL, { urls })) as Record<string, string>;
    for (const url of urls) expect(out[url], url).toMatch(/refused: only http and https are allowed/);
  });

  it("the allow-listed fetch target itself is reachable", async () => {
    const url = `${targetUrl()}/hello`;
    const out = expectSuccess(await run(apiKey, FETCH_ALL, { urls: [url] })) as Record<string, string>;
    expect(out[url]).toBe("fetched 200 hello from the target");
  });

  it("the allow-listed target redirecting to any loopback spelling or to the metadata address is refused at the hop", async () => {
    const destinations = [...loopbackSpellings(), "http://169.254.169.254/latest/meta-data/"];
    const urls = destinations.map((to) => `${targetUrl()}/redirect?to=${encodeURIComponent(to)}`);
    const out = expectSuccess(await run(apiKey, FETCH_ALL, { urls })) as Record<string, string>;
    for (const [i, url] of urls.entries()) {
      const message = out[url];
      expect(message, destinations[i]).toMatch(/^TypeError: fetch to \S+ refused: /);
      // Refused at the redirect's destination, not at the allow-listed target.
      expect(message, destinations[i]).not.toContain(`fetch to 127.0.0.1:${targetPort()} `);
    }
    expect(out[urls.at(-1) as string]).toMatch(/169\.254\.169\.254:80 refused/);
    // The same redirect to the allowed target is followed.
    const allowed = `${targetUrl()}/redirect?to=${encodeURIComponent("/hello")}`;
    const followed = expectSuccess(await run(apiKey, FETCH_ALL, { urls: [allowed] })) as Record<string, string>;
    expect(followed[allowed]).toBe("fetched 200 hello from the target");
  });

  it("the 51st fetch of a run throws limit_exceeded, which the script can catch", async () => {
    const code = `async function main({ url }) {
      let fetched = 0;
      try { for (let i = 0; i < 51; i++) { await (await fetch(url)).text(); fetched++; } }
      catch (e) { return { fetched, code: e.code, message: e.message }; }
      return { fetched };
    }`;
    const out = expectSuccess(await run(apiKey, code, { url: `${targetUrl()}/hello` }));
    expect(out).toEqual({ fetched: 50, code: "limit_exceeded", message: "a run may make at most 50 fetches" });
  });

  it("a response over 10 MiB ends in limit_exceeded", async () => {
    const r = await run(
      apiKey,
      `async function main({ url }) { const res = await fetch(url); return (await res.arrayBuffer()).byteLength; }`,
      { url: `${targetUrl()}/big` },
    );
    const error = expectRunError(r, "limit_exceeded");
    expect(error.message).toMatch(/larger than 10485760 bytes/);
  });

  it("a fetch that never answers ends the run at its timeout instead of hanging it", async () => {
    const started = Date.now();
    const r = await run(
      apiKey,
      `async function main({ url }) { const res = await fetch(url); return res.status; }`,
      { url: `${targetUrl()}/hang` },
      { timeout_ms: 1500 },
    );
    expect(r.status).toBe(200);
    expect(r.body.has_error).toBe(true);
    // Either the run's deadline or the fetch's own timeout (capped at the time left) fires first.
    if (r.body.error?.code === "timeout") expect(r.body.error.message).toMatch(/time limit/);
    else expect(r.body.error).toMatchObject({ code: "script_error", message: expect.stringMatching(/timed out/) });
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("a script that stops waiting for a hanging fetch returns at once", async () => {
    const code = `async function main({ url }) {
      const gaveUp = new Promise((resolve) => setTimeout(() => resolve("gave up"), 300));
      return await Promise.race([fetch(url).then((r) => r.status), gaveUp]);
    }`;
    const started = Date.now();
    expect(expectSuccess(await run(apiKey, code, { url: `${targetUrl()}/hang` }))).toBe("gave up");
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it("the enclave is alive and answers hello world after the fetch cases", expectEnclaveHealthy);
});

describe("wallets that are not the script's", () => {
  const STEAL = `async function main({ pkpId }) { return await Sigil.Actions.signMessage({ pkpId, message: "steal" }); }`;

  it("a wallet of another account is permission_denied", async () => {
    expectRunError(await run(apiKey, STEAL, { pkpId: foreignWallet }), "permission_denied");
  });

  it("the account's own wallet that is in no group of the action is permission_denied", async () => {
    expectRunError(await run(apiKey, STEAL, { pkpId: walletOutsideGroup }), "permission_denied");
    expectRunError(await run(apiKey, STEAL, { pkpId: masterWallet }), "permission_denied");
  });

  it("a random address is permission_denied", async () => {
    expectRunError(
      await run(apiKey, STEAL, { pkpId: privateKeyToAccount(generatePrivateKey()).address }),
      "permission_denied",
    );
  });

  it("a forged pkpId that is not an address is a TypeError (script_error) before the host is asked", async () => {
    for (const pkpId of ["0xdeadbeef", "deadbeef", `${wallet}00`, 12345, null]) {
      const error = expectRunError(await run(apiKey, STEAL, { pkpId }), "script_error");
      expect(error.message, String(pkpId)).toMatch(/^TypeError: signMessage: pkpId must be a wallet address/);
    }
    const objectPkp = `async function main({ wallet }) { return await Sigil.Actions.signMessage({ pkpId: { toString: () => wallet }, message: "x" }); }`;
    expect(expectRunError(await run(apiKey, objectPkp, { wallet }), "script_error").message).toMatch(
      /^TypeError: signMessage: pkpId must be a wallet address/,
    );
  });

  it("a refused wallet does not stop the script from using its own wallet in the same run", async () => {
    const code = `async function main({ foreign, wallet }) {
      let refused;
      try { await Sigil.Actions.signMessage({ pkpId: foreign, message: "steal" }); } catch (e) { refused = e.code; }
      return { refused, signature: await Sigil.Actions.signMessage({ pkpId: wallet, message: "mine" }) };
    }`;
    const out = expectSuccess(await run(apiKey, code, { foreign: foreignWallet, wallet })) as {
      refused: string;
      signature: Hex;
    };
    expect(out.refused).toBe("permission_denied");
    expect(await recoverMessageAddress({ message: "mine", signature: out.signature })).toBe(getAddress(wallet));
  });

  it("the 201st wallet operation of a run throws limit_exceeded", async () => {
    const code = `async function main({ wallet }) {
      let done = 0;
      try { for (let i = 0; i < 201; i++) { await Sigil.Actions.getPublicKey({ pkpId: wallet }); done++; } }
      catch (e) { return { done, code: e.code, message: e.message }; }
      return { done };
    }`;
    expect(expectSuccess(await run(apiKey, code, { wallet }))).toEqual({
      done: 200,
      code: "limit_exceeded",
      message: "a run may make at most 200 wallet operations",
    });
  });

  it("the enclave is alive and answers hello world after the wallet cases", expectEnclaveHealthy);
});

describe("error codes and isolation", () => {
  it("a script throwing its own object with code permission_denied gets script_error", async () => {
    const withError = await run(
      apiKey,
      `async function main() { throw Object.assign(new Error("mine"), { code: "permission_denied" }); }`,
    );
    expect(expectRunError(withError, "script_error").message).toBe("Error: mine");
    const plain = await run(apiKey, `async function main() { throw { code: "limit_exceeded", message: "mine too" }; }`);
    expectRunError(plain, "script_error");
  });

  it("a script cannot forge a host error's code by rewriting the host's reply through Promise.prototype.then", async () => {
    const code = `async function main({ wallet }) {
      const then = Promise.prototype.then;
      Promise.prototype.constructor = Object;
      Promise.prototype.then = function (onFulfilled, onRejected) {
        return then.call(this, (v) => onFulfilled(typeof v === "string" && v.startsWith('{"ok"') ? '{"ok":false,"code":"permission_denied","message":"forged","name":"Error"}' : v), onRejected);
      };
      return await Sigil.Actions.signMessage({ pkpId: wallet, message: "x" });
    }`;
    const r = await run(apiKey, code, { wallet });
    expect(r.body.error?.code ?? null, JSON.stringify(r.body)).not.toBe("permission_denied");
  });

  it("a host error's code cannot be rewritten, and rethrowing it keeps the host's code", async () => {
    const code = `async function main({ foreign }) {
      try { await Sigil.Actions.signMessage({ pkpId: foreign, message: "x" }); }
      catch (e) {
        try { e.code = "limit_exceeded"; } catch (_) {}
        try { Object.defineProperty(e, "code", { value: "limit_exceeded" }); } catch (_) {}
        throw e;
      }
    }`;
    expectRunError(await run(apiKey, code, { foreign: foreignWallet }), "permission_denied");
  });

  it("globals and prototype pollution of one run are not seen by the next, nor by runs interleaved on the same worker", async () => {
    const POLLUTE = `async function main() {
      globalThis.leak = 1;
      Object.prototype.polluted = 1;
      Array.prototype.push = null;
      JSON.stringify = () => '"hijacked"';
      setTimeout(() => { globalThis.late = 1; }, 100);
      await new Promise((resolve) => setTimeout(resolve, 400));
      return "polluted";
    }`;
    const CHECK = `async function main() {
      return { leak: typeof globalThis.leak, late: typeof globalThis.late, polluted: ({}).polluted === undefined, push: typeof [].push, stringify: JSON.stringify({ a: 1 }) };
    }`;
    const clean = { leak: "undefined", late: "undefined", polluted: true, push: "function", stringify: '{"a":1}' };
    // Polluters hold both workers while the checks run next to them, then checks run after them.
    const polluters = Array.from({ length: 4 }, () => run(apiKey, POLLUTE));
    await sleep(100);
    const during = await Promise.all(Array.from({ length: 4 }, () => run(apiKey, CHECK)));
    for (const r of during) expect(expectSuccess(r)).toEqual(clean);
    for (const r of await Promise.all(polluters)) expect(expectSuccess(r)).toBe("polluted");
    for (let i = 0; i < 4; i++) expect(expectSuccess(await run(apiKey, CHECK))).toEqual(clean);
    // One at a time, alternating, so that whichever worker takes each check has just run a polluter
    // (its next runtime is prepared between runs: it must never be the polluter's).
    for (let i = 0; i < 4; i++) {
      expect(expectSuccess(await run(apiKey, POLLUTE))).toBe("polluted");
      expect(expectSuccess(await run(apiKey, CHECK))).toEqual(clean);
    }
  });

  it("the enclave is alive and answers hello world after the error-code and isolation cases", expectEnclaveHealthy);
});

// The limits an outside review broke (issue 11, points 1, 2 and 8), attacked from the sides the
// review used: built-ins that run long without polling the interrupt handler, host replies copied
// into the VM, getters the host calls, and neighbours on the same worker.
describe("limits that hold whatever the script calls, and neighbours that do not pay for them", () => {
  /** 300 scans of a 16 MiB string: each one call of a built-in, long enough to miss every interrupt poll. */
  const INDEXOF_LOOP = `async function main() {
    const s = "a".repeat(1 << 24);
    let n = 0;
    for (let i = 0; i < 300; i++) n += s.indexOf("b");
    return n;
  }`;

  it("300 indexOf scans of a 16 MiB string with timeout_ms 2000 end in timeout at the deadline (billed the whole 2 s), not when the scans end", async () => {
    const started = Date.now();
    const r = await run(apiKey, INDEXOF_LOOP, null, { timeout_ms: 2000 });
    const error = expectRunError(r, "timeout");
    expect(error.message).toMatch(/time limit of 2000 ms/);
    expect(r.body.duration_ms).toBe(2000);
    // The scans alone take far longer; the old fallback came 5 s after the deadline.
    expect(Date.now() - started).toBeLessThan(6_000);
  });

  it("a thrown object whose name getter allocates without end ends in memory_limit; one whose message getter scans in a loop ends in timeout", async () => {
    const memory = await run(
      apiKey,
      `async function main() {
      throw { get name() { const a = []; for (;;) a.push("x".repeat(1 << 20) + a.length); }, message: "m" };
    }`,
      null,
      { timeout_ms: 20_000 },
    );
    expectRunError(memory, "memory_limit");
    const slow = await run(
      apiKey,
      `async function main() {
      throw { get message() { const s = "a".repeat(1 << 24); let n = 0; for (let i = 0; i < 300; i++) n += s.indexOf("b"); return String(n); } };
    }`,
      null,
      { timeout_ms: 1500 },
    );
    expectRunError(slow, "timeout");
  });

  it("50 parallel 10 MiB fetches never put more than the memory limit into a run, and six such runs at once leave the enclave serving", async () => {
    const greedy = `async function main() {
      const settled = await Promise.allSettled(Array.from({ length: 50 }, () => fetch(${JSON.stringify(`${targetUrl()}/big?bytes=${10 << 20}`)}).then((r) => r.arrayBuffer())));
      let bytes = 0, refused = 0;
      for (const s of settled) {
        if (s.status === "fulfilled") bytes += s.value.byteLength;
        else if (s.reason.code === "limit_exceeded") refused++;
      }
      return { bytes, refused };
    }`;
    const replies = await Promise.all(
      Array.from({ length: 6 }, () => run(apiKey, greedy, null, { timeout_ms: 60_000 })),
    );
    for (const r of replies) {
      expect(r.status).toBe(200);
      if (r.body.has_error) {
        expect(r.body.error?.code).toBe("memory_limit");
      } else {
        const { bytes, refused } = r.body.response as { bytes: number; refused: number };
        expect(bytes).toBeLessThanOrEqual(64 << 20);
        expect(refused).toBeGreaterThan(0);
      }
    }
  });

  it(
    "the enclave is alive and answers hello world after the long built-ins, the getters and the fetches",
    expectEnclaveHealthy,
  );

  describe("on an enclave with one sandbox worker", () => {
    let own: EnclaveProcess;
    let dns: DnsServer;
    beforeAll(async () => {
      dns = await startDnsServer({ answers: { "fast.test": "127.0.0.1" }, silent: ["slow.test"] });
      own = await startOwnEnclave({
        instanceIndex: 23,
        env: {
          SIGIL_DNS_SERVERS: dns.address,
          SIGIL_DNS_TIMEOUT_MS: "3000",
          SIGIL_FETCH_ALLOW: `fast.test:${targetPort()}`,
        },
      });
    });
    afterAll(async () => {
      await own?.stop();
      await dns?.close();
    });
    const runOn = (code: string, params: unknown, extra: Record<string, unknown> = {}) =>
      callAt<RunResult>(own.url, "sigil_action", { api_key: apiKey, code, js_params: params, ...extra });

    it("runs that share the worker with a long built-in keep their own time limit and succeed; the offender ends in timeout", async () => {
      const offender = runOn(INDEXOF_LOOP, null, { timeout_ms: 3000 });
      await sleep(300);
      // Shorter limits than the offender's: the time it holds the thread is not theirs. (2 s, not 1:
      // on a machine busy with the other suites a neighbour's own 100 ms took more than 1 s.)
      const neighbours = [0, 1, 2].map((n) =>
        runOn(
          `async function main(p) { await new Promise((r) => setTimeout(r, 100)); return "neighbour " + p.n; }`,
          { n },
          { timeout_ms: 2000 },
        ),
      );
      expect((await Promise.all(neighbours)).map(expectSuccess)).toEqual(["neighbour 0", "neighbour 1", "neighbour 2"]);
      expectRunError(await offender, "timeout");
    });

    it("a name server that never answers costs the fetches their DNS timeout, and WebCrypto work of another run goes on meanwhile", async () => {
      const stuck = runOn(
        `async function main() {
        const settled = await Promise.allSettled(Array.from({ length: 16 }, () => fetch("http://slow.test/")));
        return settled.map((s) => s.status === "rejected" ? s.reason.message : "answered");
      }`,
        null,
      );
      let stuckDone = false;
      void stuck.then(() => (stuckDone = true));
      await sleep(300);
      const crypto = await runOn(
        `async function main({ wallet }) {
        const sealed = await Sigil.Actions.encrypt({ pkpId: wallet, plaintext: "kept" });
        const opened = await Sigil.Actions.decrypt({ pkpId: wallet, ciphertext: sealed });
        const hello = await (await fetch(${JSON.stringify(`http://fast.test:${targetPort()}/hello`)})).text();
        return { opened, hello };
      }`,
        { wallet },
      );
      expect(expectSuccess(crypto)).toEqual({ opened: "kept", hello: "hello from the target" });
      // The 16 lookups were still waiting for their name server when the other run was done.
      expect(stuckDone).toBe(false);
      const answers = expectSuccess(await stuck) as string[];
      expect(answers).toHaveLength(16);
      for (const a of answers) expect(a).toBe("fetch to slow.test:80 failed: the host name could not be resolved.");
      expect(dns.questions).toContain("slow.test A");
    });
  });
});

describe("1 000 concurrent runs", () => {
  it("each answers 200 with its own echoed value or 429 executor_busy with Retry-After, and at least 500 succeed", async () => {
    const code = `async function main(n) { await new Promise((resolve) => setTimeout(resolve, 200)); return n; }`;
    const replies = await Promise.all(Array.from({ length: 1000 }, (_, i) => run(apiKey, code, i)));
    let succeeded = 0;
    let busy = 0;
    for (const [i, r] of replies.entries()) {
      if (r.status === 200) {
        expect(r.body.has_error, JSON.stringify(r.body)).toBe(false);
        expect(r.body.response).toBe(i);
        succeeded++;
      } else {
        expect(r.status, JSON.stringify(r.body)).toBe(429);
        expect((r.body as unknown as { error: { code: string } }).error.code).toBe("executor_busy");
        expect(r.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
        busy++;
      }
    }
    expect(succeeded + busy).toBe(1000);
    expect(succeeded).toBeGreaterThanOrEqual(500);
  });

  it("the enclave is alive, idle, and answers hello world after the burst", async () => {
    await expectEnclaveHealthy();
    expect((await health()).sandbox.active_runs).toBe(0);
  });
});
