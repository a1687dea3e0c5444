// The program-shape rules of docs/design/sandbox.md ("Program shape" and "Globals"): what a script must define,
// how main's value becomes `response`, the script and module forms, how errors are reported (code,
// message, stack lines of the user's own code), which codes a run reports, what `Sigil.request`
// carries, and that `Sigil` cannot be replaced or changed.
import { privateKeyToAccount, generatePrivateKey } from "viem/accounts";
import { beforeAll, describe, expect, it } from "vitest";
import { computeCid } from "../../shared/cid.ts";
import { callEnclave, ok, run, type Reply, type RunResult } from "./client.ts";

let apiKey: string;

beforeAll(async () => {
  apiKey = (await ok<{ api_key: string }>("new_account", { account_name: "program shape" })).api_key;
  // "0" lists every action: these tests are about the runtime, not about groups.
  await ok("add_group", {
    api_key: apiKey,
    group_name: "any",
    group_description: "",
    pkp_ids_permitted: [],
    cid_hashes_permitted: ["0"],
  });
});

function succeeded(r: Reply<RunResult>): unknown {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body.has_error, JSON.stringify(r.body.error)).toBe(false);
  expect(r.body.error).toBeUndefined();
  return r.body.response;
}

function failed(r: Reply<RunResult>, code: string): NonNullable<RunResult["error"]> {
  expect(r.status, JSON.stringify(r.body).slice(0, 2000)).toBe(200);
  expect(r.body.has_error, JSON.stringify(r.body).slice(0, 2000)).toBe(true);
  expect(r.body.error?.code, JSON.stringify(r.body).slice(0, 2000)).toBe(code);
  expect(r.body.response).toBeNull();
  return r.body.error as NonNullable<RunResult["error"]>;
}

describe("main", () => {
  it("a script without main ends in script_error: the script must define main(params)", async () => {
    for (const code of [
      `async function helper() { return 1; }`,
      `const main = 42;`,
      `export const x = 1;`,
      `export function helper() {}`,
    ]) {
      const error = failed(await run(apiKey, code), "script_error");
      expect(error.message, code).toBe("the script must define main(params)");
    }
  });

  it("main receives js_params, and null when none were sent", async () => {
    const code = `async function main(params) { return { params }; }`;
    expect(succeeded(await run(apiKey, code, { a: [1, "b"] }))).toEqual({ params: { a: [1, "b"] } });
    expect(succeeded(await callEnclave<RunResult>("sigil_action", { api_key: apiKey, code }))).toEqual({
      params: null,
    });
  });

  it("main returning undefined (or nothing) gives response null", async () => {
    const r = await run(apiKey, `async function main() { return undefined; }`);
    expect(succeeded(r)).toBeNull();
    expect(r.body).toHaveProperty("response", null);
    expect(succeeded(await run(apiKey, `async function main() { console.log("no return"); }`))).toBeNull();
  });

  it("a returned string stays a string, even one that looks like JSON", async () => {
    expect(succeeded(await run(apiKey, `async function main() { return "plain text"; }`))).toBe("plain text");
    expect(succeeded(await run(apiKey, `async function main() { return '{"a":1}'; }`))).toBe('{"a":1}');
    expect(succeeded(await run(apiKey, `async function main() { return "42"; }`))).toBe("42");
  });

  it("any JSON value main resolves to is the response as that value: numbers, booleans, arrays, nested objects", async () => {
    expect(succeeded(await run(apiKey, `async function main() { return 0; }`))).toBe(0);
    expect(succeeded(await run(apiKey, `async function main() { return false; }`))).toBe(false);
    expect(succeeded(await run(apiKey, `async function main() { return [1, null, { x: ["y"] }]; }`))).toEqual([
      1,
      null,
      { x: ["y"] },
    ]);
    // A synchronous main too: its value is awaited the same way.
    expect(succeeded(await run(apiKey, `function main() { return { sync: true }; }`))).toEqual({ sync: true });
  });
});

describe("the module form", () => {
  it("export default async function is main", async () => {
    expect(
      succeeded(await run(apiKey, `export default async function (params) { return { from: "default", params }; }`, 7)),
    ).toEqual({ from: "default", params: 7 });
  });

  it("export async function main is main", async () => {
    expect(
      succeeded(await run(apiKey, `export async function main(params) { return { from: "named", params }; }`, "p")),
    ).toEqual({ from: "named", params: "p" });
  });

  it("a module with both prefers the default export", async () => {
    const code = `export async function main() { return "named"; }\nexport default async function () { return "default"; }`;
    expect(succeeded(await run(apiKey, code))).toBe("default");
  });

  it("a module may use top-level await and module-scoped state before main runs", async () => {
    const code = `const ready = await Promise.resolve("awaited");\nexport async function main() { return ready; }`;
    expect(succeeded(await run(apiKey, code))).toBe("awaited");
  });
});

describe("errors", () => {
  it("an error thrown on line 3 of the script is script_error with its name and message, and a stack naming line 3 of action.js", async () => {
    const code = ["// line 1", "async function main() {", '  throw new Error("boom on line 3");', "}"].join("\n");
    const error = failed(await run(apiKey, code), "script_error");
    expect(error.message).toBe("Error: boom on line 3");
    expect(error.stack).toMatch(/\bmain \(action\.js:3:\d+\)/);
    // Only the user's frames: none of the sandbox's own code.
    expect(error.stack).not.toMatch(/sigil:/);
  });

  it("the stack names the user's line numbers through nested calls in the module form too", async () => {
    const code = [
      "function inner() {",
      "  return null.x;",
      "}",
      "function outer() { return inner(); }",
      "export async function main() { return outer(); }",
    ].join("\n");
    const error = failed(await run(apiKey, code), "script_error");
    expect(error.message).toMatch(/^TypeError: /);
    const lines = (error.stack ?? "").split("\n").map((l) => l.trim());
    expect(lines[0]).toMatch(/^at inner \(action\.js:2:\d+\)$/);
    expect(lines[1]).toMatch(/^at outer \(action\.js:4:\d+\)$/);
    expect(lines[2]).toMatch(/^at main \(action\.js:5:\d+\)$/);
  });

  it("a rejected promise awaited by main is script_error with the rejection's name and message", async () => {
    const error = failed(
      await run(apiKey, `async function main() { await Promise.reject(new RangeError("rejected")); }`),
      "script_error",
    );
    expect(error.message).toBe("RangeError: rejected");
  });

  it("a thrown non-Error value is script_error with the value as its message", async () => {
    expect(failed(await run(apiKey, `async function main() { throw "just a string"; }`), "script_error").message).toBe(
      "just a string",
    );
  });

  it("code that does not compile is a 400 compile_error naming the parser's message, line and column: no run, no receipt", async () => {
    const r = await run(apiKey, "async function main() {\n  return 1 +;\n}");
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    const body = r.body as unknown as { error: { code: string; message: string; details: unknown }; receipt?: unknown };
    expect(body.error.code).toBe("compile_error");
    expect(body.error.message).toBe(
      "the script does not compile: SyntaxError: unexpected token in expression: ';' (line 2, column 13)",
    );
    expect(body.error.details).toEqual({
      cid: await computeCid("async function main() {\n  return 1 +;\n}"),
      line: 2,
      column: 13,
    });
    expect(body.receipt).toBeUndefined();
    const module = await run(apiKey, "export async function main() {\n  return 1 +\n}\n");
    expect(module.status).toBe(400);
    expect((module.body as unknown as { error: { details: unknown } }).error.details).toMatchObject({
      line: 3,
      column: 1,
    });
  });

  it("a SyntaxError the script throws as it runs is its own script_error, at top level or in main", async () => {
    expect(failed(await run(apiKey, `JSON.parse("{");\nasync function main() {}`), "script_error").message).toMatch(
      /^SyntaxError: /,
    );
    expect(
      failed(await run(apiKey, `async function main() { return new RegExp("("); }`), "script_error").message,
    ).toMatch(/^SyntaxError: /);
  });

  it("a key that may not run the code is told first that it does not compile (400, not 403); code that compiles is its 403", async () => {
    const other = (await ok<{ api_key: string }>("new_account", { account_name: "no groups" })).api_key;
    const broken = await run(other, "async function main() { return (; }");
    expect(broken.status, JSON.stringify(broken.body)).toBe(400);
    expect((broken.body as unknown as { error: { code: string; details: unknown } }).error).toMatchObject({
      code: "compile_error",
      details: { line: 1, column: 33 },
    });
    const fine = await run(other, `async function main() { console.log("ran"); return 1; }`);
    expect(fine.status).toBe(403);
    expect((fine.body as unknown as { error: { code: string } }).error.code).toBe("permission_denied");
  });

  it("a script throwing its own object with a code property gets script_error, not that code", async () => {
    const own = failed(
      await run(
        apiKey,
        `async function main() { const e = new Error("mine"); e.code = "permission_denied"; throw e; }`,
      ),
      "script_error",
    );
    expect(own.message).toBe("Error: mine");
    failed(
      await run(apiKey, `async function main() { throw { code: "limit_exceeded", message: "not the host's" }; }`),
      "script_error",
    );
    failed(
      await run(
        apiKey,
        `export default async function () { throw Object.assign(new TypeError("t"), { code: "timeout" }); }`,
      ),
      "script_error",
    );
  });

  it("a host error escaping main keeps its code and message (permission_denied for a wallet that is not the script's)", async () => {
    const stranger = privateKeyToAccount(generatePrivateKey()).address;
    const code = `async function main({ wallet }) { return await Sigil.Actions.signMessage({ pkpId: wallet, message: "x" }); }`;
    const error = failed(await run(apiKey, code, { wallet: stranger }), "permission_denied");
    expect(error.message).toBe(
      `wallet ${stranger.toLowerCase()} is not usable by this API key and action: it must be registered to the account and in a group that lists this action`,
    );
  });

  it("a host error caught and rethrown from a nested async function still gives the run its code", async () => {
    const code = `async function sign(wallet) { return Sigil.Actions.getPublicKey({ pkpId: wallet }); }
    async function main({ wallet }) { try { return await sign(wallet); } catch (e) { await null; throw e; } }`;
    failed(await run(apiKey, code, { wallet: privateKeyToAccount(generatePrivateKey()).address }), "permission_denied");
  });

  it("deep recursion ends in script_error; QuickJS reports it as InternalError: stack overflow", async () => {
    // docs/design/sandbox.md's limit table says "script_error (RangeError)"; this runtime's error is QuickJS's own.
    const code = `function down(n) { return down(n + 1) + 1; }\nasync function main() { return down(0); }`;
    const error = failed(await run(apiKey, code), "script_error");
    expect(error.message).toBe("InternalError: stack overflow");
    const lines = error.stack?.split("\n") ?? [];
    expect(lines.at(-1)?.trim()).toMatch(/^at main \(action\.js:2:\d+\)$/);
    // Thousands of frames deep: the 25 innermost and 25 outermost reach the client, with a count of the rest.
    expect(lines).toHaveLength(51);
    expect(lines[25]).toMatch(/^ *… \d{3,} frames left out …$/);
    expect(lines[0]?.trim()).toMatch(/^at down \(action\.js:1:\d+\)$/);
  });

  it("logs written before the error are kept", async () => {
    const r = await run(apiKey, `async function main() { console.log("before"); throw new Error("after"); }`);
    failed(r, "script_error");
    expect(r.body.logs).toBe("before\n");
  });
});

describe("Sigil.request", () => {
  const code = `async function main() { return Sigil.request; }`;

  it("requestId is the x-request-id the edge sent, correlationId the x-correlation-id, cid the running code's", async () => {
    const requestId = crypto.randomUUID();
    const r = await callEnclave<RunResult>(
      "sigil_action",
      { api_key: apiKey, code },
      { "x-request-id": requestId, "x-correlation-id": "order-1234" },
    );
    expect(succeeded(r)).toEqual({ requestId, correlationId: "order-1234", cid: await computeCid(code) });
  });

  it("correlationId is null when none was sent, and a malformed request id is replaced by one the enclave makes", async () => {
    const r = await callEnclave<RunResult>("sigil_action", { api_key: apiKey, code }, { "x-request-id": "not-a-uuid" });
    const request = succeeded(r) as { requestId: string; correlationId: unknown };
    expect(request.correlationId).toBeNull();
    expect(request.requestId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  });

  it("each run sees its own request id", async () => {
    const [a, b] = [crypto.randomUUID(), crypto.randomUUID()];
    const [ra, rb] = await Promise.all([
      callEnclave<RunResult>("sigil_action", { api_key: apiKey, code }, { "x-request-id": a }),
      callEnclave<RunResult>("sigil_action", { api_key: apiKey, code }, { "x-request-id": b }),
    ]);
    expect((succeeded(ra) as { requestId: string }).requestId).toBe(a);
    expect((succeeded(rb) as { requestId: string }).requestId).toBe(b);
  });
});

describe("Sigil cannot be replaced or changed", () => {
  it("Sigil, Sigil.Actions, Sigil.request and every Actions function are frozen; the global is a data property, non-writable, non-configurable, with no setter", async () => {
    const code = `async function main() {
      const d = Object.getOwnPropertyDescriptor(globalThis, "Sigil");
      const fns = Object.keys(Sigil.Actions);
      return {
        dataProperty: "value" in d && d.value === Sigil,
        writable: d.writable,
        configurable: d.configurable,
        setter: typeof d.set,
        frozen: [Object.isFrozen(Sigil), Object.isFrozen(Sigil.Actions), Object.isFrozen(Sigil.request)],
        functions: fns.sort(),
        allFunctionsFrozen: fns.every((n) => typeof Sigil.Actions[n] === "function" && Object.isFrozen(Sigil.Actions[n])),
      };
    }`;
    // The functions of docs/design/sandbox.md's Sigil.Actions table, and no others.
    const functions = [
      "decrypt",
      "encrypt",
      "getActionPrivateKey",
      "getActionPublicKey",
      "getActionWalletAddress",
      "getPrivateKey",
      "getPublicKey",
      "getSolanaAddress",
      "keccak256",
      "sendTransaction",
      "setResponse",
      "sha256",
      "signDigest",
      "signMessage",
      "signMessageAsAction",
      "signSolanaMessage",
      "signSolanaTransaction",
      "signTransaction",
      "signTypedData",
      "speedUpTransaction",
    ];
    expect(succeeded(await run(apiKey, code))).toEqual({
      dataProperty: true,
      writable: false,
      configurable: false,
      setter: "undefined",
      frozen: [true, true, true],
      functions,
      allFunctionsFrozen: true,
    });
  });

  it("in strict code, every attempt to replace or change Sigil throws TypeError, and Sigil still works afterwards", async () => {
    const code = `"use strict";
    async function main() {
      const attempts = {
        assignGlobal: () => { Sigil = {}; },
        assignThroughGlobalThis: () => { globalThis.Sigil = {}; },
        deleteGlobal: () => { delete globalThis.Sigil; },
        redefineGlobal: () => Object.defineProperty(globalThis, "Sigil", { value: {} }),
        replaceActions: () => { Sigil.Actions = {}; },
        replaceFunction: () => { Sigil.Actions.signMessage = async () => "forged"; },
        addFunction: () => { Sigil.Actions.extra = () => 1; },
        deleteFunction: () => { delete Sigil.Actions.sha256; },
        changeRequestId: () => { Sigil.request.requestId = "forged"; },
        changeCid: () => { Sigil.request.cid = "forged"; },
        redefineOnActions: () => Object.defineProperty(Sigil.Actions, "keccak256", { value: () => "forged" }),
        reprototype: () => Object.setPrototypeOf(Sigil.Actions, { forged: true }),
      };
      const thrown = {};
      for (const name of Object.keys(attempts)) {
        try { attempts[name](); thrown[name] = "no error"; } catch (e) { thrown[name] = e.name; }
      }
      return { thrown, still: Sigil.Actions.keccak256("0x"), request: Sigil.request.requestId !== "forged", extra: "extra" in Sigil.Actions };
    }`;
    const out = succeeded(await run(apiKey, code)) as {
      thrown: Record<string, string>;
      still: string;
      request: boolean;
      extra: boolean;
    };
    for (const [attempt, name] of Object.entries(out.thrown)) expect(name, attempt).toBe("TypeError");
    expect(Object.keys(out.thrown)).toHaveLength(12);
    expect(out.still).toBe("0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470");
    expect(out.request).toBe(true);
    expect(out.extra).toBe(false);
  });

  it("in sloppy code, assigning or deleting Sigil is silently ignored: the same object stays", async () => {
    const code = `async function main() {
      const before = Sigil;
      Sigil = null;
      globalThis.Sigil = 1;
      const deleted = delete globalThis.Sigil;
      Sigil.Actions.sha256 = () => "forged";
      return { same: Sigil === before, deleted, hash: Sigil.Actions.sha256("") };
    }`;
    expect(succeeded(await run(apiKey, code))).toEqual({
      same: true,
      deleted: false,
      hash: "0xe3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    });
  });
});
