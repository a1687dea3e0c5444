// The sandbox's Web globals (docs/design/sandbox.md, Globals) against the real thing: scripts run in-process
// through runScript, and wherever Node has the same API the expected answer is computed here, on
// the host, from the same source (`same(body)` runs one function body in both places). Where the
// sandbox deliberately differs from Node the test says so in its name and asserts the sandbox's
// documented behaviour instead.
import { readFileSync } from "node:fs";
import { format, inspect } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { readEnclaveConfig } from "../config.ts";
import { createRunHost } from "./hostOps.ts";
import { createInstance } from "./instance.ts";
import { CodedError, prepareRuntime, runScript, type RunOutcome } from "./runtime.ts";

const CID = "QmGlobalsTestCid";
const limits = readEnclaveConfig({
  SIGIL_ALLOWED_EDGE_KEYS: "ab".repeat(32),
  SIGIL_RPC_URL: "http://127.0.0.1:1",
  SIGIL_CONTRACT_ADDRESS: `0x${"11".repeat(20)}`,
}).limits;
/** Runs `async function main() { body }` in a fresh sandbox. */
async function run(body: string): Promise<RunOutcome> {
  const host = createRunHost({
    cid: CID,
    deadline: () => Date.now() + 60_000,
    limits,
    fetchPolicy: {
      allowHosts: new Set(),
      denyPorts: new Set(),
      timeoutMs: 1000,
      maxResponseBytes: 1000,
      maxRedirects: 1,
    },
    requestKey: async () => {
      throw new CodedError("permission_denied", "no");
    },
  });
  const request = {
    code: `async function main() {\n${body}\n}`,
    cid: CID,
    paramsJson: "null",
    timeoutMs: 30_000,
    requestId: "globals-test",
    correlationId: null,
  };
  return runScript(await prepareRuntime(await createInstance(limits), limits), request, limits, host);
}

function succeeded(outcome: RunOutcome): RunOutcome & { responseJson: string } {
  if (outcome.error !== undefined || outcome.responseJson === undefined)
    throw new Error(`the script failed: ${JSON.stringify(outcome)}`);
  return outcome as RunOutcome & { responseJson: string };
}

/** What main returned, through JSON. */
async function evaluate(body: string): Promise<unknown> {
  return JSON.parse(succeeded(await run(body)).responseJson) as unknown;
}

/** The run's log lines. */
async function logLines(body: string): Promise<string[]> {
  const { logs } = succeeded(await run(body));
  return logs === "" ? [] : logs.slice(0, -1).split("\n");
}

/** The same function body run by Node, its result through JSON like the sandbox's. */
function onHost(body: string): unknown {
  const fn = new Function(body) as () => unknown;
  const json = JSON.stringify(fn());
  return json === undefined ? null : (JSON.parse(json) as unknown);
}

const AsyncFunction = (async () => {}).constructor as new (body: string) => () => Promise<unknown>;
async function onHostAsync(body: string): Promise<unknown> {
  return JSON.parse(JSON.stringify(await new AsyncFunction(body)())) as unknown;
}

/** The body gives the same answer in the sandbox as in Node; returns it. */
async function same(body: string): Promise<unknown> {
  const expected = onHost(body);
  expect(await evaluate(body)).toEqual(expected);
  return expected;
}

/** Script helper: ["ok", value] or ["throws", error name]. Defined in both places. */
const ATTEMPT = `const attempt = (f) => { try { return ["ok", f()]; } catch (e) { return ["throws", e && e.name]; } };`;

describe("TextEncoder and TextDecoder", () => {
  const STRINGS = [
    "",
    "hello",
    "héllo wörld",
    "€ 100",
    "日本語テキスト",
    "😀 emoji 👍🏽 family 👨‍👩‍👧",
    "𝄞 music",
    "\u0000\u007f\u0080\u07ff\u0800\uffff",
    "\ud800",
    "a\udc00b",
    "\udbff\udfff",
    "\ud83d",
    "x\ud83d\ude00\ud83d",
    "\udc00\ud800",
  ];

  it("encode gives Node's bytes for ASCII, Latin-1, CJK, emoji, astral characters and lone surrogates (as U+FFFD)", async () => {
    const bytes = (await same(
      `const e = new TextEncoder(); return ${JSON.stringify(STRINGS)}.map((s) => Array.from(e.encode(s)));`,
    )) as number[][];
    expect(bytes[8]).toEqual([0xef, 0xbf, 0xbd]);
  });

  it("decode(encode(s)) round-trips every well-formed string and turns lone surrogates into U+FFFD, as in Node", async () => {
    const decoded = (await same(
      `const e = new TextEncoder(), d = new TextDecoder(); return ${JSON.stringify(STRINGS)}.map((s) => d.decode(e.encode(s)));`,
    )) as string[];
    STRINGS.forEach((s, i) => {
      // Well-formed: survives a UTF-8 round trip through Node's Buffer.
      if (Buffer.from(s, "utf8").toString("utf8") === s) expect(decoded[i]).toBe(s);
      else expect(decoded[i]).toContain("\ufffd");
    });
  });

  it("encoding, encode() without input and non-string input are Node's", async () => {
    await same(
      `const e = new TextEncoder(); return [e.encoding, Array.from(e.encode()), Array.from(e.encode(12.5)), Array.from(e.encode(null)), e.encode("a") instanceof Uint8Array];`,
    );
  });

  const BAD_BYTES = [
    [0x80],
    [0xbf, 0x41],
    [0xc0, 0xaf],
    [0xc1, 0xbf],
    [0xc2],
    [0xc2, 0x41],
    [0xe0, 0x80, 0x80],
    [0xe0, 0x9f, 0xbf],
    [0xe0, 0xa0, 0x80],
    [0xed, 0x9f, 0xbf],
    [0xed, 0xa0, 0x80],
    [0xed, 0xbf, 0xbf],
    [0xee, 0x80],
    [0xe2, 0x82],
    [0xe2, 0x41, 0x42],
    [0xf0, 0x80, 0x80, 0x80],
    [0xf0, 0x90, 0x80, 0x80],
    [0xf0, 0x9f, 0x98],
    [0xf0, 0x9f, 0x98, 0x80],
    [0xf4, 0x8f, 0xbf, 0xbf],
    [0xf4, 0x90, 0x80, 0x80],
    [0xf5, 0x80, 0x80, 0x80],
    [0xf8, 0x88, 0x80, 0x80, 0x80],
    [0xfe, 0xff],
    [0xff, 0xfe, 0x41, 0x00],
    [0x61, 0xf0, 0x9f, 0x98, 0x62, 0xe2, 0x82, 0xac],
    [0xef, 0xbb, 0xbf, 0xff],
  ];

  it("invalid UTF-8 decodes to U+FFFD per maximal subpart, exactly as Node's TextDecoder", async () => {
    const out = (await same(
      `const d = new TextDecoder(); return ${JSON.stringify(BAD_BYTES)}.map((b) => d.decode(new Uint8Array(b)));`,
    )) as string[];
    expect(out[6]).toBe("\ufffd\ufffd\ufffd");
  });

  it("with {fatal: true} the same inputs throw a TypeError, and only those, as in Node", async () => {
    const out = (await same(`${ATTEMPT} const d = new TextDecoder("utf-8", { fatal: true });
      return ${JSON.stringify([...BAD_BYTES, [0x41, 0xc3, 0xa9], [0xf0, 0x9f, 0x98, 0x80]])}.map((b) => attempt(() => d.decode(new Uint8Array(b))));`)) as Array<
      [string, string]
    >;
    expect(out.filter(([kind]) => kind === "throws").length).toBeGreaterThan(10);
    expect(out.every(([kind, v]) => kind === "ok" || v === "TypeError")).toBe(true);
  });

  it("strips one leading BOM unless ignoreBOM is set, as in Node; fatal/ignoreBOM/encoding read back", async () => {
    await same(`const cases = [[0xef, 0xbb, 0xbf, 0x41], [0xef, 0xbb, 0xbf], [0xef, 0xbb], [0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf, 0x42], [0x41, 0xef, 0xbb, 0xbf]];
      const plain = new TextDecoder(), keep = new TextDecoder("utf-8", { ignoreBOM: true }), both = new TextDecoder("utf8", { ignoreBOM: 1, fatal: "yes" });
      return { plain: cases.map((c) => plain.decode(new Uint8Array(c))), keep: cases.map((c) => keep.decode(new Uint8Array(c))),
        flags: [plain.encoding, plain.fatal, plain.ignoreBOM, keep.fatal, keep.ignoreBOM, both.encoding, both.fatal, both.ignoreBOM] };`);
  });

  it("decodes ArrayBuffers, DataViews, other typed arrays and views with an offset, and nothing at all, as Node does", async () => {
    await same(`const d = new TextDecoder(); const buf = new TextEncoder().encode("xxhéllo😀yy").buffer;
      return [d.decode(buf), d.decode(new DataView(buf, 2, 10)), d.decode(new Uint8Array(buf, 2, 6)), d.decode(new Uint16Array([0x6968])), d.decode(), d.decode(new Uint8Array(0))];`);
  });

  it("encodeInto writes whole characters only and reports read/written as Node does", async () => {
    const cases: Array<[string, number]> = [
      ["héllo", 2],
      ["héllo", 3],
      ["a😀b", 3],
      ["a😀b", 4],
      ["a😀b", 5],
      ["a😀b", 6],
      ["\ud800x", 4],
      ["abc", 10],
      ["", 4],
      ["€€", 5],
      ["x", 0],
    ];
    await same(`const e = new TextEncoder(); return ${JSON.stringify(cases)}.map(([s, n]) => {
        const buf = new Uint8Array(n + 2); const dst = new Uint8Array(buf.buffer, 1, n); const r = e.encodeInto(s, dst);
        return [r.read, r.written, Array.from(buf)]; });`);
  });

  it("accepts the UTF-8 labels (any case, surrounding whitespace) and refuses unknown ones with a RangeError, as Node does", async () => {
    await same(
      `${ATTEMPT} return ["utf-8", "UTF-8", "utf8", " Unicode-1-1-UTF-8\\n", "unicode11utf8", "x-unicode20utf8", "foo", "utf-9", ""].map((l) => attempt(() => new TextDecoder(l).encoding));`,
    );
  });

  it("supports only UTF-8: labels Node would decode (utf-16le, latin1) are a RangeError in the sandbox", async () => {
    expect(
      await evaluate(
        `${ATTEMPT} return ["utf-16le", "latin1", "windows-1252"].map((l) => attempt(() => new TextDecoder(l)));`,
      ),
    ).toEqual([
      ["throws", "RangeError"],
      ["throws", "RangeError"],
      ["throws", "RangeError"],
    ]);
  });
});

describe("atob and btoa", () => {
  const ATOB = [
    "",
    "YQ==",
    "YQ",
    "YQ=",
    "YWI=",
    "YWJj",
    " Y W J j ",
    "\tYW\nJj\r\f",
    "YWJ",
    "Y",
    "YQ===",
    "YQ=a",
    "Y$==",
    "YW Jj=",
    "YWJj====",
    "//79",
    "+/+/",
    "-_",
    "YQ\u00a0",
    "AAAA",
    "ab==",
    "abc=",
    "a===",
    "====",
    "=",
    "ab=c",
    "undefined",
    "YWJjZA",
    "YWJjZA=",
    "YWJjZA==",
    "YWJjZ",
    "\u0130",
    "YW\u000bJj",
    "Y W = =",
    "aGVsbG8gd29ybGQ",
  ];
  const BTOA = [
    "",
    "a",
    "ab",
    "abc",
    "abcd",
    "\u00ff\u00fe\u0000",
    "é",
    "\u0100",
    "😀",
    "hello world",
    "\x80\x81",
    "\ud800",
  ];

  it("atob decodes, skips ASCII whitespace, accepts missing padding and refuses what Node refuses (InvalidCharacterError)", async () => {
    const out = (await same(`${ATTEMPT} return ${JSON.stringify(ATOB)}.map((s) => attempt(() => atob(s)));`)) as Array<
      [string, string]
    >;
    expect(out.some(([kind, v]) => kind === "throws" && v === "InvalidCharacterError")).toBe(true);
  });

  it("btoa encodes Latin-1 and refuses characters above U+00FF with InvalidCharacterError, as Node does", async () => {
    await same(`${ATTEMPT} return ${JSON.stringify(BTOA)}.map((s) => attempt(() => btoa(s)));`);
  });

  it("round-trips all 256 byte values and converts non-string arguments as Node does", async () => {
    await same(`${ATTEMPT} let all = ""; for (let i = 0; i < 256; i++) all += String.fromCharCode(i);
      const b = btoa(all); return [b, atob(b) === all, attempt(() => btoa(null)), attempt(() => btoa(12)), attempt(() => atob(null)), attempt(() => atob(undefined))];`);
  });

  it("the error is an Error named InvalidCharacterError (Node throws a DOMException of that name)", async () => {
    expect(
      await evaluate(`try { atob("*"); } catch (e) { return [e instanceof Error, e.name, typeof e.message]; }`),
    ).toEqual([true, "InvalidCharacterError", "string"]);
  });
});

describe("URL and URLSearchParams", () => {
  const URLS: Array<[string, string?]> = [
    ["https://user:pw@Example.COM:8080/a/../b/./c?x=1&y=%20#frag"],
    ["http://example.com:80/"],
    ["https://例子.测试/path"],
    ["/rel?q=1", "https://base.org/dir/file"],
    ["../up", "http://h/a/b/c"],
    ["mailto:someone@example.com"],
    ["file:///etc/passwd"],
    ["http://[::1]:3000/x"],
    ["http://192.168.0.1.:80"],
    ["data:text/plain,hi"],
    ["HTTP://EXAMPLE.com/%7Efoo/a b"],
    ["//x.org/p", "https://b"],
    ["?only", "https://b/c?d#e"],
    ["#h", "https://b/c?d"],
    ["http://0x7f.1/"],
    ["blob:https://a.com/uuid"],
    ["ws://x:81/"],
    ["https://x/?a=b c&d=é"],
    ["  https://trim.me/  "],
    ["https://x.org/%zz"],
    ["not a url"],
    ["http://"],
    ["https://x:99999/"],
    ["/relative"],
    ["", "https://b/c"],
  ];
  const GETTERS = [
    "href",
    "protocol",
    "username",
    "password",
    "host",
    "hostname",
    "port",
    "pathname",
    "search",
    "hash",
    "origin",
  ];

  it("every getter equals Node's new URL for a table of URLs, relative ones resolved against a base, invalid ones a TypeError", async () => {
    const out = (await same(`return ${JSON.stringify(URLS)}.map(([input, base]) => {
        try { const u = base === undefined ? new URL(input) : new URL(input, base);
          return ${JSON.stringify(GETTERS)}.map((k) => u[k]).concat([String(u), JSON.stringify({ u }), u.toJSON(), u.searchParams.toString()]);
        } catch (e) { return [e.name, e instanceof TypeError]; } });`)) as unknown[][];
    expect(out.filter((r) => r[0] === "TypeError").length).toBe(4);
  });

  it("URL.canParse agrees with Node", async () => {
    await same(`return ${JSON.stringify(URLS)}.map(([input, base]) => URL.canParse(input, base));`);
  });

  it("searchParams writes through to href and search, and href/search/hash/pathname setters update searchParams, as in Node", async () => {
    await same(`const u = new URL("https://h.com/p?a=1#f"); const sp = u.searchParams; const r = [];
      sp.append("b", "x y&z"); r.push(u.href, u.search); sp.set("a", "é"); r.push(u.href); sp.delete("a"); r.push(u.href);
      sp.delete("b"); r.push(u.href, u.search, sp.size); sp.append("c", "1"); sp.append("a", "2"); sp.sort(); r.push(u.href);
      u.search = "?q=2&q=3"; r.push(sp.getAll("q"), u.href, sp === u.searchParams); u.search = "x=1"; r.push(u.search, sp.get("x"));
      u.hash = "z"; r.push(u.href); u.hash = ""; r.push(u.href); u.pathname = "/n/m"; r.push(u.href); u.pathname = "rel"; r.push(u.pathname);
      u.href = "http://other:81/?k=v#h"; r.push(sp.get("k"), u.host, u.hash, u.origin); return r;`);
  });

  it("an invalid href assigned to a URL is a TypeError and leaves it as it was, as in Node", async () => {
    await same(
      `const u = new URL("https://a.org/x"); try { u.href = "nope"; } catch (e) { return [e.name, u.href]; } return "no error";`,
    );
  });

  const QUERIES = [
    "a=1&b=2&a=3",
    "?x=%20y+z",
    "a=%zz+b&c=%FF&d=%E2%82%AC",
    "=&=x&y=&&z",
    "a+b=c+d",
    "%61=%62",
    "k=v=w",
    "a=%",
    "a=%2",
    "é=ü",
    "x=%F0%9F%98%80",
    "&&",
    "?",
    "??a=1",
    "a=%2B%26%3D",
    "\ud800=\udc00",
  ];

  it("URLSearchParams parses query strings (percent-decoding, '+' as space, bad escapes and bad UTF-8 kept or U+FFFD) like Node", async () => {
    await same(
      `return ${JSON.stringify(QUERIES)}.map((q) => { const p = new URLSearchParams(q); return [Array.from(p), p.toString(), p.size]; });`,
    );
  });

  it("URLSearchParams from a record, from pairs and from another instance serializes like Node (spaces as '+', !'()~ encoded)", async () => {
    await same(`const rec = new URLSearchParams({ "a b": "c&d", "é": "😀", "!'()~*-._": "=+/?#%", n: 1, u: undefined, lone: "\\ud800" });
      const pairs = new URLSearchParams([["z", "1"], ["a", "2"], ["z", "0"], ["b", " "]]);
      const copy = new URLSearchParams(pairs); copy.append("c", "3");
      const fromMap = new URLSearchParams(new Map([["m", "1"]]));
      return [rec.toString(), Array.from(rec), pairs.toString(), copy.toString(), pairs.toString(), fromMap.toString(), new URLSearchParams().toString(), new URLSearchParams(null).toString()];`);
  });

  it("append/delete/get/getAll/has/set/sort/forEach/keys/values/entries behave like Node's", async () => {
    await same(`const q = new URLSearchParams("z=1&a=2&z=0&b=%20&a=x"); const r = [];
      r.push(q.get("z"), q.get("nope"), q.getAll("a"), q.getAll("nope"), q.has("a"), q.has("a", "x"), q.has("a", "y"), q.has("nope"), q.size);
      q.append("é", "ü"); q.sort(); r.push(q.toString()); q.set("z", "s"); r.push(q.toString()); q.set("new", "n"); r.push(q.toString());
      q.delete("a", "2"); r.push(q.toString()); q.delete("a"); r.push(q.toString());
      const seen = []; q.forEach((v, k, self) => seen.push([k, v, self === q])); r.push(seen);
      r.push(Array.from(q.keys()), Array.from(q.values()), Array.from(q.entries()), Array.from(q), String(q));
      return r;`);
  });

  it("sort is stable and compares UTF-16 code units, as in Node", async () => {
    await same(
      `const q = new URLSearchParams("b=1&a=1&\\ud83d\\ude00=1&\\uffff=1&a=2&B=1&b=2&a=0"); q.sort(); return q.toString();`,
    );
  });

  it("a pair that is not two items long is a TypeError, as in Node", async () => {
    await same(
      `${ATTEMPT} return [attempt(() => new URLSearchParams([["a"]])), attempt(() => new URLSearchParams([["a", "b", "c"]]))];`,
    );
  });
});

describe("crypto", () => {
  it("getRandomValues fills integer typed arrays in place and returns them", async () => {
    const out =
      (await evaluate(`const a = new Uint8Array(64), b = new Uint32Array(16), c = new BigInt64Array(4), d = new Int16Array(new ArrayBuffer(20), 4, 4);
      const same = crypto.getRandomValues(a) === a && crypto.getRandomValues(b) === b && crypto.getRandomValues(c) === c && crypto.getRandomValues(d) === d;
      const u8c = crypto.getRandomValues(new Uint8ClampedArray(8));
      return { same, a: Array.from(a), b: Array.from(b), c: Array.from(c, String), d: Array.from(new Uint8Array(d.buffer)), clamped: u8c.length, empty: crypto.getRandomValues(new Uint8Array(0)).length };`)) as {
        same: boolean;
        a: number[];
        b: number[];
        c: string[];
        d: number[];
        clamped: number;
        empty: number;
      };
    expect(out.same).toBe(true);
    expect(new Set(out.a).size).toBeGreaterThan(16);
    expect(out.b.some((x) => x > 0xffffff)).toBe(true);
    expect(new Set(out.c).size).toBe(4);
    // Only the view's 8 bytes (offset 4) are written.
    expect(out.d.slice(0, 4)).toEqual([0, 0, 0, 0]);
    expect(out.d.slice(12)).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(out.d.slice(4, 12).some((x) => x !== 0)).toBe(true);
    expect([out.clamped, out.empty]).toEqual([8, 0]);
  });

  it("refuses float arrays, DataViews and non-views (TypeMismatchError) and more than 65536 bytes (QuotaExceededError), as Node does", async () => {
    await same(`${ATTEMPT} const n = (f) => { const r = attempt(f); return r[0] === "ok" ? ["ok", r[1].length] : r; };
      return [n(() => crypto.getRandomValues(new Float32Array(4))), n(() => crypto.getRandomValues(new Float64Array(4))), n(() => crypto.getRandomValues(new DataView(new ArrayBuffer(4)))),
        n(() => crypto.getRandomValues([1, 2])), n(() => crypto.getRandomValues(new ArrayBuffer(4))), n(() => crypto.getRandomValues(new Uint8Array(65536))),
        n(() => crypto.getRandomValues(new Uint8Array(65537))), n(() => crypto.getRandomValues(new Uint32Array(16384))), n(() => crypto.getRandomValues(new Uint32Array(16385)))];`);
  });

  it("randomUUID returns distinct version-4 UUIDs", async () => {
    const ids = (await evaluate(
      `const ids = []; for (let i = 0; i < 200; i++) ids.push(crypto.randomUUID()); return ids;`,
    )) as string[];
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(ids).size).toBe(200);
  });
});

describe("structuredClone", () => {
  it("copies primitives and plain objects and arrays deeply, as Node does", async () => {
    await same(`const src = { n: 1.5, neg: -0, s: "é😀", b: false, nul: null, u: undefined, big: 12345678901234567890n, arr: [1, [2, [3]], { x: "y" }], nested: { a: { b: { c: {} } } } };
      const c = structuredClone(src);
      return [c !== src, c.arr !== src.arr, c.arr[2] !== src.arr[2], Object.is(c.neg, -0), typeof c.big, String(c.big), "u" in c, c.u === undefined, JSON.stringify({ ...c, big: undefined }), structuredClone("str"), structuredClone(7), structuredClone(null), structuredClone(undefined) === undefined];`);
  });

  it("keeps cycles and shared references, as Node does", async () => {
    await same(`const shared = { v: 1 }; const o = { a: shared, b: shared, list: [shared] }; o.self = o; o.list.push(o.list);
      const m = new Map(); m.set(m, o); o.m = m;
      const c = structuredClone(o);
      return [c.self === c, c.a === c.b, c.list[0] === c.a, c.list[1] === c.list, c.a !== shared, c.m.get(c.m) === c, c.m !== m];`);
  });

  it("copies Map, Set, Date, RegExp, ArrayBuffer, typed arrays and DataView (views over one buffer stay over one buffer), as Node does", async () => {
    await same(`const key = { k: 1 }; const map = new Map([[key, "v"], ["s", key]]); const set = new Set([1, key, "x"]);
      const buf = new ArrayBuffer(8); new Uint8Array(buf).set([1, 2, 3, 4, 5, 6, 7, 8]);
      const views = { u8: new Uint8Array(buf, 1, 3), i16: new Int16Array(buf, 2, 2), f64: new Float64Array([1.5, -0]), big: new BigUint64Array([2n ** 64n - 1n]), dv: new DataView(buf, 4, 4), buf };
      const re = /a+b/gi; re.lastIndex = 3;
      const c = structuredClone({ map, set, date: new Date(1234567890123), bad: new Date(NaN), re, views });
      const cm = c.map, ck = Array.from(cm.keys())[0];
      return {
        map: [cm instanceof Map, cm.size, cm.get(ck), cm.get("s") === ck, ck !== key],
        set: [c.set instanceof Set, c.set.size, c.set.has(ck), Array.from(c.set)[1] === ck],
        date: [c.date instanceof Date, c.date.getTime(), Number.isNaN(c.bad.getTime())],
        re: [c.re instanceof RegExp, c.re.source, c.re.flags, c.re.lastIndex, c.re !== re],
        views: [c.views.u8.buffer === c.views.buf, c.views.i16.buffer === c.views.buf, c.views.dv.buffer === c.views.buf, c.views.buf !== buf,
          Array.from(c.views.u8), c.views.u8.byteOffset, Array.from(c.views.i16), Array.from(c.views.f64).map((x) => Object.is(x, -0) ? "-0" : x),
          String(c.views.big[0]), c.views.dv.getUint8(0), c.views.dv.byteOffset, c.views.dv.byteLength, c.views.buf.byteLength,
          Object.prototype.toString.call(c.views.f64), Object.prototype.toString.call(c.views.big)],
      };`);
  });

  it("copies errors (name and message), boxed primitives and class instances as plain objects, as Node does", async () => {
    await same(`class Point { constructor() { this.x = 1; } get y() { return 2; } }
      const odd = new Error("odd"); odd.name = "toString";
      const c = structuredClone({ e: new RangeError("r"), t: new TypeError("t"), plain: new Error("p"), odd, num: new Number(3), str: new String("s"), bool: new Boolean(false), big: Object(5n), p: new Point() });
      return [c.e instanceof RangeError, c.e.name, c.e.message, c.t instanceof TypeError, c.plain.message, c.odd.name, c.odd.message,
        typeof c.num, Number(c.num), typeof c.str, String(c.str), typeof c.bool, c.bool.valueOf(), typeof c.big, String(c.big.valueOf()),
        Object.getPrototypeOf(c.p) === Object.prototype, c.p.x, "y" in c.p];`);
  });

  it("keeps holes, length and extra properties of arrays, and '__proto__' as an own key, as Node does", async () => {
    await same(`const sparse = [1, , 3, , ]; const extra = Object.assign([1, 2], { foo: "bar" }); const proto = JSON.parse('{"__proto__": {"x": 1}, "y": 2}');
      const c = structuredClone({ sparse, extra, proto });
      return [c.sparse.length, 1 in c.sparse, Object.keys(c.sparse), c.extra.length, c.extra.foo, Object.keys(c.proto), Object.getPrototypeOf(c.proto) === Object.prototype, c.proto.x, c.proto.__proto__];`);
  });

  it("reads getters and skips symbol keys and non-enumerable properties, as Node does", async () => {
    await same(`const o = { get g() { return "got"; }, [Symbol("s")]: 1 }; Object.defineProperty(o, "hidden", { value: 1, enumerable: false });
      const c = structuredClone(o); return [Object.keys(c), c.g, Object.getOwnPropertySymbols(c).length, "hidden" in c];`);
  });

  it("a setter the script put on Object.prototype does not swallow copied properties", async () => {
    expect(
      await evaluate(`let stolen; Object.defineProperty(Object.prototype, "secret", { set(v) { stolen = v; }, configurable: true });
        const c = structuredClone({ secret: 42, list: [{ secret: 1 }] }); delete Object.prototype.secret;
        return [Object.keys(c), c.secret, c.list[0].secret, stolen === undefined];`),
    ).toEqual([["secret", "list"], 42, 1, true]);
  });

  it("throws DataCloneError for functions, symbols, WeakMaps, WeakSets and promises, also when nested, as Node does", async () => {
    await same(`${ATTEMPT} return [() => structuredClone(function f() {}), () => structuredClone(Symbol("s")), () => structuredClone({ a: [() => 1] }), () => structuredClone(new Map([[1, Symbol()]])),
      () => structuredClone(new WeakMap()), () => structuredClone(new WeakSet()), () => structuredClone(Promise.resolve(1)), () => structuredClone(Object(Symbol("boxed")))].map(attempt);`);
  });
});

describe("console formatting", () => {
  // Each expression is built in the sandbox and, from the same source, on the host.
  const INSPECT_CASES = [
    "{ a: 1 }",
    "{}",
    "[]",
    "[1, 'two', null, undefined, true]",
    "{ a: { b: { c: { d: 1 } } } }",
    "{ a: [{ b: { c: 1 } }] }",
    "[[[[1]]]]",
    "[[[[]]]]",
    "{ a: { b: { c: [] } } }",
    "{ a: { b: { c: {} } } }",
    "{ a: { b: { c: [1] } } }",
    "{ a: { b: { c: new Map([[1, 2]]) } } }",
    "{ a: { b: { c: new Set([1]) } } }",
    "{ a: { b: { c: new Map() } } }",
    "{ a: { b: { c: new (class Foo { constructor() { this.x = 1; } })() } } }",
    "{ a: { b: { c: Object.assign(Object.create(null), { x: 1 }) } } }",
    "{ a: { b: { c: new Uint8Array(2) } } }",
    "{ a: { b: { c: new Uint8Array(0) } } }",
    "{ a: { b: { c: new Date(0) } } }",
    "{ a: { b: { c: new Number(1) } } }",
    "{ a: { b: { c: function f() {} } } }",
    "{ a: { b: { c: Object.assign(function f() {}, { z: 1 }) } } }",
    "{ a: { b: { c: new ArrayBuffer(2) } } }",
    "{ a: { b: { c: new WeakMap() } } }",
    "new Map([[1, new Map([[2, new Map([[3, { x: 1 }]])]])]])",
    "new Map([[new Map([[1, { a: { b: 1 } }]]), 1]])",
    "Array.from({ length: 5 }, (_, i) => i * 2)",
    "[1, , 3]",
    "new Array(5)",
    "[1, , , , 5, , ]",
    "[, ]",
    "Object.assign(new Array(3), { x: 1 })",
    "Object.assign(new Array(300), { 150: 1 })",
    "Object.assign([1, 2], { foo: 'bar', 'a-b': 1 })",
    "new Set(Array.from({ length: 102 }, (_, k) => k))",
    "new Map(Array.from({ length: 101 }, (_, k) => [k, k]))",
    "new Uint8Array(101).buffer",
    "new Map([['a', 1], [{ x: 1 }, [2]]])",
    "new Set([1, 'a', { b: 2 }])",
    "new Map()",
    "new Set()",
    "[new Set([[1, { a: {} }]])]",
    "new Uint8Array([1, 2, 3])",
    "new Float32Array([1.5, -0])",
    "new BigInt64Array([1n, -2n])",
    "new Uint8Array(0)",
    "new Float64Array([NaN, Infinity, -Infinity])",
    "new ArrayBuffer(3)",
    "new Uint8Array([1, 2, 255]).buffer",
    "new ArrayBuffer(0)",
    "new DataView(new ArrayBuffer(2))",
    "new (class Foo { constructor() { this.a = 1; } })()",
    "new (class Foo {})()",
    "new (class {})()",
    "Object.create(null)",
    "Object.assign(Object.create(null), { a: 1 })",
    "new (class Bar extends Map {})([[1, 2]])",
    "new (class Baz extends Array {})(1, 2)",
    "new (class U8 extends Uint8Array {})(2)",
    "Object.create(Array.prototype)",
    "new (class Tagged { get [Symbol.toStringTag]() { return 'T'; } })()",
    "Object.assign(Object.create({ [Symbol.toStringTag]: 'Q' }), { a: 1 })",
    "{ [Symbol.toStringTag]: 'T', a: 1 }",
    "Symbol('s')",
    "Symbol()",
    "{ [Symbol('k')]: Symbol(), [Symbol.iterator]: 1, [Symbol.for('x')]: 2, [Symbol('a b')]: 3 }",
    "10n",
    "-0",
    "[-0, 0, -1.5, 1e21, 1e-7]",
    "{ n: -0, b: 10n }",
    "null",
    "undefined",
    "true",
    "NaN",
    "Infinity",
    "123.456",
    "(() => { const o = { a: 1 }; o.self = o; return o; })()",
    "(() => { const o = { a: [1] }; o.a.push(o); return { x: o, y: o }; })()",
    "(() => { const a = {}; const b = { a }; a.b = b; return [a, b]; })()",
    "(() => { const a = [1]; a.push(a); return a; })()",
    "(() => { const m = new Map(); m.set('self', m); return m; })()",
    "(() => { const s = new Set(); s.add(s); return { s }; })()",
    "(() => { const a = {}; const b = { a }; a.b = b; return { a, b, c: { a } }; })()",
    "function foo() {}",
    "(() => {})",
    "class A {}",
    "class B extends Array {}",
    "class extends Object {}",
    "class C { static x = 1 }",
    "async function af() {}",
    "function* gf() {}",
    "async function* agf() {}",
    "async () => {}",
    "{ f: function () {}, g: () => 1, h() {} }",
    "Object.assign(function f() {}, { a: 1 })",
    "new Date(0)",
    "new Date(NaN)",
    "Object.assign(new Date(0), { a: 1 })",
    "/a+b/gi",
    "Object.assign(/x/y, { a: 1 })",
    "{ get a() { return 1; }, set b(v) {}, get c() { return 1; }, set c(v) {} }",
    "new Number(3)",
    "new Number(-0)",
    "new String('ab')",
    'new String("it\'s")',
    "new String('')",
    "new Boolean(false)",
    "Object(Symbol('x'))",
    "Object(10n)",
    "Object.assign(new Number(3), { a: 1 })",
    "new WeakMap()",
    "new WeakSet()",
    '{ s: "it\'s" }',
    "{ s: 'a\"b' }",
    "{ s: 'a\"b\\'c' }",
    "{ s: 'a\\'b\"c`d' }",
    "{ s: '${x}\"\\'' }",
    "{ s: 'tab\\there\\u0001\\u007f\\u009f\\u00a0' }",
    "{ s: '\\u0000\\b\\t\\n\\u000b\\f\\r\\u001b' }",
    "{ s: 'line\\nbreak\\\\' }",
    "['\\\\', '\\\\\\'']",
    "{ a: '\\ud800x', b: '\\udc00', c: '😀' }",
    "{ s: 'x'.repeat(10001) }",
    "['x'.repeat(10002)]",
    "{ $x: 1, _y: 2, 'a-b': 3, '1': 4, '': 5, 'a b': 6, é: 7, A9: 8, '9a': 9 }",
    "{ \"it's\": 1, 'a\"b': 2, '\\n': 3 }",
    "{ '__proto__': 1 }",
    "JSON.parse('{\"__proto__\": 1}')",
    "Object.defineProperty({ shown: 1 }, 'hidden', { value: 1, enumerable: false })",
    "{ a: undefined, b: null }",
    "[undefined, null]",
    "{ a: 1, b: 'two', c: [3], d: { e: { f: { g: 4 } } }, h: null, i: undefined, j: true, k: 5n, l: Symbol('m'), n: -0 }",
    "Object.assign(Object.create(null), { x: { y: { z: { w: 1 } } } })",
    "(() => { const e = new Error('no stack'); e.stack = ''; return e; })()",
    "(() => { const e = new TypeError('no stack'); e.stack = undefined; return { e }; })()",
  ];
  // Node breaks arrays of more than 6 items into rows even with breakLength: Infinity; the sandbox
  // keeps every value on one line, which is what Node prints with compact: true.
  const ROW_CASES = [
    "[1, 2, 3, 4, 5, 6, 7, 8]",
    "Array.from({ length: 101 }, (_, i) => i)",
    "Array.from({ length: 150 }, (_, i) => i)",
    "new Uint8Array(150)",
    "Array.from({ length: 120 }, (_, k) => (k % 2 ? k : undefined))",
    "{ list: Array.from({ length: 12 }, (_, i) => 'item' + i) }",
  ];
  const hostValue = (expression: string): unknown => (new Function(`return (${expression});`) as () => unknown)();
  const nodeLine = (value: unknown, compact: boolean): string =>
    inspect(value, { depth: 2, breakLength: Infinity, ...(compact ? { compact: true } : {}) });

  let inspectLines: string[];
  let rowLines: string[];
  beforeAll(async () => {
    const script = (cases: string[]) => cases.map((c) => `console.log(${c});`).join("\n");
    [inspectLines, rowLines] = await Promise.all([logLines(script(INSPECT_CASES)), logLines(script(ROW_CASES))]);
  });

  it("logs one line per console.log of the table", () => {
    expect(inspectLines).toHaveLength(INSPECT_CASES.length);
    expect(rowLines).toHaveLength(ROW_CASES.length);
  });

  it.each(INSPECT_CASES.map((c, i) => [c, i] as const))(
    "console.log(%s) prints Node's util.inspect(value, {depth: 2, breakLength: Infinity})",
    (expression, i) => {
      const expected = nodeLine(hostValue(expression), false);
      expect(expected).not.toContain("\n");
      expect(inspectLines[i]).toBe(expected);
    },
  );

  it.each(ROW_CASES.map((c, i) => [c, i] as const))(
    "console.log(%s) stays on one line where Node breaks the array into rows (equal to Node's compact: true)",
    (expression, i) => {
      const value = hostValue(expression);
      expect(nodeLine(value, false)).toContain("\n");
      expect(rowLines[i]).toBe(nodeLine(value, true));
    },
  );

  it("prints top-level strings raw and joins the arguments with spaces, as Node's console.log", async () => {
    const args = [
      `"it's"`,
      `'a"b'`,
      `5`,
      `"x"`,
      `{ s: "it's" }`,
      `-0`,
      `"%s"`,
      `null`,
      `undefined`,
      `10n`,
      `Symbol("q")`,
    ];
    const lines = await logLines(
      `console.log(${args.join(", ")}); console.log(""); console.log(); console.log("100%%"); console.log(-0); console.log("a", "%s");`,
    );
    expect(lines).toEqual([
      format(...(new Function(`return [${args.join(", ")}];`) as () => unknown[])()),
      "",
      "",
      "100%%",
      "-0",
      "a %s",
    ]);
  });

  const FORMAT_CASES = [
    `"%s|%s|%s|%s|%s|%s|%s", -0, 1n, { a: { b: 1 } }, [1, [2, [3]]], new (class X { toString() { return "xx"; } })(), new Date(0), Symbol("s")`,
    `"%s|%s|%s|%s", null, undefined, "str", function f() {}`,
    `"%s", [1, "a"]`,
    `"%s", new Map([[1, 2]])`,
    `"%s", Object.create(null)`,
    `"%s", { toString() { return "own"; } }`,
    `"%d|%i|%f|%d|%i|%f|%d|%i", -0, -0.5, "-0", "0x10", "0x10", "1e3x", {}, 42n`,
    `"%i|%f|%d|%d|%f", 3.9, "3.5abc", "", Symbol("x"), 2n`,
    `"%O|%O", "s", { a: { b: { c: { d: 1 } } } }`,
    `"%o", "s"`,
    `"%o", { a: 1 }`,
    `"%j|%j|%j|%j", { a: 1 }, undefined, "s", [1, "x"]`,
    `"%j", (() => { const o = {}; o.o = o; return o; })()`,
    `"100%% %s %", "sure"`,
    `"%s %s", "only"`,
    `"%% %s", "a", "b", { c: 1 }`,
    `"%x %s", 1`,
    `"a%", 1`,
    `"%c%s", "color: red", "x"`,
    `"%s:%s", "a"`,
    `"%", 1`,
    `"%%%s%%", 1`,
    `"no placeholders", 1, "two", { three: 3 }`,
    `1, "%s", 2`,
    `{ a: 1 }, "x"`,
    `"%s %O", "x", ["y"]`,
    `"%s", "%s", "y"`,
  ];

  it.each(FORMAT_CASES)("console.log(%s) prints Node's util.format", async (args) => {
    const [line] = await logLines(`console.log(${args});`);
    expect(line).toBe(format(...(new Function(`return [${args}];`) as () => unknown[])()));
  });

  it("info, warn, error and debug log one line each, formatted like log", async () => {
    expect(
      await logLines(
        `console.info("i %d", 1); console.warn({ w: 1 }); console.error("e", [2]); console.debug("%s!", "d");`,
      ),
    ).toEqual(["i 1", "{ w: 1 }", "e [ 2 ]", "d!"]);
  });

  it("prints an error as `Name: message` and QuickJS's stack (sandbox layout, not Node's indented stack with extra properties)", async () => {
    const { logs } = succeeded(
      await run(
        `function thrower() { return new TypeError("boom"); }\nconsole.log(thrower());\nconsole.log({ e: new RangeError("inner") });`,
      ),
    );
    const [first, ...rest] = logs.split("\n");
    expect(first).toBe("TypeError: boom");
    expect(rest[0]).toMatch(/^ {4}at thrower \(action\.js:\d+(:\d+)?\)$/);
    expect(logs).toMatch(/\n\{ e: RangeError: inner\n {4}at main \(action\.js:\d+(:\d+)?\)\n/);
  });

  it("prints a promise as `Promise { <unknown> }`: its state cannot be read inside QuickJS (Node prints the value)", async () => {
    expect(await logLines(`console.log(Promise.resolve(1)); console.log({ p: new Promise(() => {}) });`)).toEqual([
      "Promise { <unknown> }",
      "{ p: Promise { <unknown> } }",
    ]);
  });

  it("prints %o like %O at depth 4 on one line, without the hidden properties Node's %o adds (such as [length])", async () => {
    expect(
      await logLines(`console.log("%o", [1, 2]); console.log("%o", { a: { b: { c: { d: { e: { f: 1 } } } } } });`),
    ).toEqual(["[ 1, 2 ]", "{ a: { b: { c: { d: { e: [Object] } } } } }"]);
  });
});

describe("the globals are lazy but behave like plain properties", () => {
  const NAMES = [
    "TextEncoder",
    "TextDecoder",
    "atob",
    "btoa",
    "URL",
    "URLSearchParams",
    "crypto",
    "structuredClone",
    "console",
    "setTimeout",
    "clearTimeout",
    "queueMicrotask",
    "fetch",
    "Headers",
    "Response",
  ];

  it("typeof gives the same answers as in Node", async () => {
    await same(
      `return ${JSON.stringify(NAMES)}.map((n) => typeof globalThis[n]).concat([typeof TextEncoder, typeof crypto.getRandomValues, typeof console.log]);`,
    );
  });

  it("are non-enumerable, and after the first read are writable, configurable data properties that keep their identity", async () => {
    const out = (await evaluate(`const names = ${JSON.stringify(NAMES)};
      const listed = []; for (const k in globalThis) if (names.includes(k)) listed.push(k);
      const keys = Object.keys(globalThis).filter((k) => names.includes(k));
      const first = TextEncoder;
      const d = Object.getOwnPropertyDescriptor(globalThis, "TextEncoder");
      return { listed, keys, descriptor: [typeof d.value, d.writable, d.enumerable, d.configurable, "get" in d], stable: first === TextEncoder && globalThis.TextEncoder === first && new first() instanceof TextEncoder,
        hasAll: names.every((n) => n in globalThis), own: names.every((n) => Object.prototype.hasOwnProperty.call(globalThis, n)) };`)) as Record<
      string,
      unknown
    >;
    expect(out).toEqual({
      listed: [],
      keys: [],
      descriptor: ["function", true, false, true, false],
      stable: true,
      hasAll: true,
      own: true,
    });
  });

  it("can be replaced, assigned before their first read, redefined and deleted like any property", async () => {
    expect(
      await evaluate(`globalThis.URL = 1; btoa = "mine"; Object.defineProperty(globalThis, "TextDecoder", { value: 5, writable: false, configurable: true });
        delete globalThis.atob; URLSearchParams; delete globalThis.URLSearchParams;
        return [URL, btoa, TextDecoder, typeof atob, "atob" in globalThis, typeof URLSearchParams, Object.getOwnPropertyDescriptor(globalThis, "URL").enumerable, typeof TextEncoder];`),
    ).toEqual([1, "mine", 5, "undefined", false, "undefined", false, "function"]);
  });
});

describe("built-ins tampered with before the first use of the globals", () => {
  // Built before the tampering, with no lazy global touched.
  const PREPARE = `const bytes = new Uint8Array(6); bytes[0] = 104; bytes[1] = 195; bytes[2] = 169; bytes[3] = 0xff; bytes[4] = 33; bytes[5] = 0xe2;
    const key = { o: 1 };
    const map = new Map(); map.set("k", 1); map.set(key, [2, "two"]);
    const set = new Set(); set.add(1); set.add("two"); set.add(key);
    const graph = { list: [1, "two", { three: 3 }], map, set, date: new Date(0), big: 10n, neg: -0, quote: "it's", nested: { a: { b: { c: { d: 1 } } } }, re: /x+/g };
    graph.self = graph;
    const extras = { sym: Symbol("s"), fn: function named() {}, cls: class K {}, arr: [1, , 3], nul: Object.create(null), typed: new Uint8Array(2) };
    const [U8, MapC, SetC, DateC] = [Uint8Array, Map, Set, Date];`;
  // Only syntax and the sandbox's globals: the built-ins it would otherwise use may be tampered with.
  const VALUES = `const out = {};
    const encoded = new TextEncoder().encode("hé😀");
    let list = ""; for (let i = 0; i < encoded.length; i++) list += encoded[i] + ",";
    out.encoded = list;
    out.decoded = new TextDecoder().decode(bytes);
    try { new TextDecoder("utf-8", { fatal: true }).decode(bytes); out.fatal = "none"; } catch (e) { out.fatal = e.name; }
    out.btoa = btoa("hello\\u00ff");
    out.atob = atob(" aGVs bG8= ");
    try { atob("a==="); out.atobError = "none"; } catch (e) { out.atobError = e.name; }
    const url = new URL("/p/q?a=1#h", "https://user@Example.org:8443");
    url.searchParams.append("b", "x y&z");
    out.href = url.href; out.host = url.host; out.param = url.searchParams.get("a");
    out.params = \`\${new URLSearchParams("k%21=v%27()~+%C3%A9&x")}\`;
    const copy = structuredClone(graph);
    out.clone = [copy.self === copy, copy !== graph, copy.list[2].three, copy.nested.a.b.c.d, copy.date instanceof DateC, copy.map instanceof MapC, copy.set instanceof SetC];
    const random = crypto.getRandomValues(new U8(4));
    out.random = random.length;
    out.uuid = crypto.randomUUID().length;`;
  const LOGS = `console.log(graph); console.log(copy); console.log(extras); console.log("%s|%d|%i|%j|%O|%%", "str", -0, 42.9, { j: [1] }, [1]);`;

  const expectedValues = (): unknown => onHost(`${PREPARE}\n${VALUES}\nreturn out;`);
  const expectedLogs = (): string[] => {
    const { graph, extras } = (
      new Function(`${PREPARE}\nreturn { graph, extras };`) as () => { graph: unknown; extras: unknown }
    )();
    const line = (v: unknown) => inspect(v, { depth: 2, breakLength: Infinity });
    return [line(graph), line(graph), line(extras), format("%s|%d|%i|%j|%O|%%", "str", -0, 42.9, { j: [1] }, [1])];
  };

  const TAMPERINGS: Record<string, string> = {
    "Array.prototype.push, String.prototype.charCodeAt, JSON.stringify, Object.prototype.toString and RegExp.prototype.test": `Array.prototype.push = null; String.prototype.charCodeAt = null; JSON.stringify = null; Object.prototype.toString = () => "x"; RegExp.prototype.test = () => false;`,
    "RegExp.prototype.exec, Symbol.replace and Symbol.split": `RegExp.prototype.exec = () => null; RegExp.prototype[Symbol.replace] = () => "forged"; RegExp.prototype[Symbol.split] = () => ["forged"];`,
    "Array.prototype[Symbol.iterator], join, map, slice and indexOf": `Array.prototype[Symbol.iterator] = function* () { yield "forged"; }; Array.prototype.join = () => "forged"; Array.prototype.map = () => []; Array.prototype.slice = () => []; Array.prototype.indexOf = () => -1;`,
    "String.prototype methods and String.fromCharCode": `for (const m of ["slice", "indexOf", "split", "toLowerCase", "toUpperCase", "replace", "charAt", "codePointAt", "substring", "trim"]) String.prototype[m] = () => "forged"; String.fromCharCode = () => "forged";`,
    "JSON.parse and JSON.stringify": `JSON.parse = () => ({ ok: true, value: "forged" }); JSON.stringify = () => "forged";`,
    "Object and Reflect functions": `Object.keys = () => []; Object.defineProperty = () => { throw new Error("dp"); }; Object.getOwnPropertyDescriptor = () => undefined; Object.getPrototypeOf = () => null;
      Object.setPrototypeOf = () => { throw new Error("sp"); }; Object.freeze = (o) => o; Reflect.apply = () => { throw new Error("apply"); }; Reflect.ownKeys = () => [];`,
    "Map, Set and WeakSet methods": `Map.prototype.get = () => undefined; Map.prototype.set = () => { throw new Error("map"); }; Map.prototype.has = () => true; Map.prototype.entries = () => [][Symbol.iterator]();
      Set.prototype.add = () => { throw new Error("set"); }; Set.prototype.values = () => [][Symbol.iterator](); WeakSet.prototype.has = () => true; WeakSet.prototype.add = () => { throw new Error("ws"); };`,
    "getters and setters on Object.prototype (descriptor keys)": `for (const k of ["get", "set", "value", "writable", "enumerable", "configurable", "ok", "name"]) Object.defineProperty(Object.prototype, k, { __proto__: null, get() { return () => "forged"; }, set() {}, configurable: true });`,
    "Function.prototype methods, Symbol.prototype.toString and Number.prototype.toString": `Function.prototype.call = Function.prototype.apply = Function.prototype.bind = () => "forged"; Function.prototype.toString = () => "forged"; Symbol.prototype.toString = () => "forged"; Number.prototype.toString = () => "forged";`,
    "global functions and constructors": `globalThis.encodeURIComponent = globalThis.decodeURIComponent = globalThis.parseInt = () => "forged"; globalThis.String = () => "forged"; globalThis.Number = () => 0;
      globalThis.Object = function () { return {}; }; globalThis.Uint8Array = function () {}; globalThis.Map = function () {}; globalThis.Symbol = () => "forged"; globalThis.Error = function () {};`,
  };

  it.each(Object.entries(TAMPERINGS))(
    "with %s tampered, the text, URL, clone and crypto globals and console.log still work",
    async (_name, tamper) => {
      const outcome = succeeded(await run(`${PREPARE}\n${tamper}\n${VALUES}\n${LOGS}\nreturn out;`));
      expect(JSON.parse(outcome.responseJson)).toEqual(expectedValues());
      expect(outcome.logs.slice(0, -1).split("\n")).toEqual(expectedLogs());
    },
  );
});

describe("timers and microtasks", () => {
  const ORDER = `const order = [];
    setTimeout(() => order.push("t0-a"), 0);
    const cancelled = setTimeout(() => order.push("cancelled"), 0);
    setTimeout(() => order.push("t0-b"));
    setTimeout(() => order.push("t20"), 20);
    setTimeout((x, y) => order.push("args:" + x + y), 1, "a", "b");
    setTimeout(() => order.push("t5"), 5);
    clearTimeout(cancelled);
    clearTimeout(undefined); clearTimeout(123456); clearTimeout("x");
    queueMicrotask(() => order.push("micro1"));
    Promise.resolve().then(() => order.push("promise"));
    queueMicrotask(() => { order.push("micro2"); queueMicrotask(() => order.push("micro3")); });
    order.push("sync");
    await new Promise((resolve) => setTimeout(resolve, 40));
    return [order, typeof cancelled];`;

  it("0 ms timers fire in the order they were set, after the microtasks, clearTimeout cancels, later timers fire later: as in Node", async () => {
    const expected = await onHostAsync(ORDER);
    expect(expected).toEqual([
      ["sync", "micro1", "promise", "micro2", "micro3", "t0-a", "t0-b", "args:ab", "t5", "t20"],
      "object",
    ]);
    // The sandbox's ids are numbers, as in browsers (Node returns a Timeout object).
    expect(await evaluate(ORDER)).toEqual([(expected as unknown[])[0], "number"]);
  });

  it("setTimeout and queueMicrotask refuse a callback that is not a function with a TypeError, as Node does", async () => {
    await same(
      `${ATTEMPT} return [attempt(() => setTimeout("order.push(1)", 0)), attempt(() => setTimeout(undefined)), attempt(() => queueMicrotask(1)), attempt(() => queueMicrotask())];`,
    );
  });

  it("a timer callback that throws is logged as uncaught and the run goes on", async () => {
    const outcome = succeeded(
      await run(
        `setTimeout(() => { throw new RangeError("late"); }, 0); await new Promise((r) => setTimeout(r, 10)); return "done";`,
      ),
    );
    expect(outcome.responseJson).toBe('"done"');
    expect(outcome.logs).toBe("Uncaught RangeError: late\n");
  });
});

describe("fetch's Headers (no network)", () => {
  it("Headers takes a record, pairs or another Headers and folds names to lower case, as Node does", async () => {
    await same(`const h = new Headers({ "X-One": "1", Accept: "text/plain" }); h.append("x-one", "2"); h.set("X-Two", "b");
      const fromPairs = new Headers([["A", "1"], ["a", "2"]]); const copy = new Headers(h);
      return [h.get("x-one"), h.get("X-TWO"), h.has("accept"), h.get("missing"), fromPairs.get("a"), copy.get("x-two"), Array.from(copy.keys()).sort()];`);
  });
});

describe("what main returns", () => {
  it("a BigInt, alone or inside the value, becomes its decimal string (JSON has no BigInt)", async () => {
    expect(await evaluate("return 1n << 70n;")).toBe("1180591620717411303424");
    expect(await evaluate("return { balance: -12345678901234567890n, list: [1n, 2] };")).toEqual({
      balance: "-12345678901234567890",
      list: ["1", 2],
    });
    expect(await evaluate("Sigil.Actions.setResponse({ wei: 10n ** 18n }); return undefined;")).toEqual({
      wei: "1000000000000000000",
    });
  });

  it("Sigil.Actions has exactly the functions of actions.js, each a frozen stub of the same name", async () => {
    const names = (await evaluate(
      "return Object.keys(Sigil.Actions).map((n) => [n, Sigil.Actions[n].name, Object.isFrozen(Sigil.Actions[n])]);",
    )) as Array<[string, string, boolean]>;
    // actions.js defines what the stubs of core.js forward to: the two lists must not drift apart.
    const source = readFileSync(new URL("./globals/actions.js", import.meta.url), "utf8");
    const defined = [...source.slice(source.indexOf("const Actions = {")).matchAll(/^ {4}(\w+)(?::|\()/gm)].map(
      (m) => m[1],
    );
    expect(names.map(([n]) => n).sort()).toEqual([...defined].sort());
    for (const [n, fnName, frozen] of names) expect([fnName, frozen]).toEqual([n, true]);
  });
});
