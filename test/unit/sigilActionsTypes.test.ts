// sdk/sigil-actions.d.ts against docs/actions.md and the sandbox: every example of the page
// type-checks against the declarations with the repo's TypeScript (tsc 7, the native compiler, run
// as a process on a tsconfig written to a temporary folder — the compiler options the page
// recommends, read from its jsonc block); deliberately wrong calls are reported, so the check is
// not vacuous; and the names the sandbox defines (Sigil.Actions, its lazily installed globals) are
// each declared and documented. Also the page's example convention itself: an example without its
// expected answer is an error, so no example can go untested.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { codeBlocks, examplesOf, readActionsDoc } from "../harness/actionsDoc.ts";

const DTS = fileURLToPath(new URL("../../sdk/sigil-actions.d.ts", import.meta.url));
const CORE_JS = fileURLToPath(new URL("../../enclave/sandbox/globals/core.js", import.meta.url));
/** The repo's TypeScript (7, native: the script only starts the compiler's binary), run with this Node. */
const TSC = fileURLToPath(new URL("../../node_modules/.bin/tsc", import.meta.url));

const { markdown, examples } = readActionsDoc();

/** The compiler options of the page's recommended tsconfig (its jsonc block), comments dropped. */
function documentedCompilerOptions(): Record<string, unknown> {
  const jsonc = codeBlocks(markdown).filter((b) => b.lang === "jsonc");
  expect(jsonc).toHaveLength(1);
  const json = (jsonc[0]?.content ?? "")
    .split("\n")
    .filter((line) => !/^\s*\/\//.test(line))
    .join("\n");
  return (JSON.parse(json) as { compilerOptions: Record<string, unknown> }).compilerOptions;
}

type Diagnostic = { file: string; line: number; code: string; message: string };

/** Runs tsc on `files` (name → source) with the page's options and the declarations; its diagnostics. */
function typeCheck(dir: string, files: Record<string, string>): Diagnostic[] {
  for (const [name, source] of Object.entries(files)) writeFileSync(join(dir, name), source);
  const tsconfig = { compilerOptions: documentedCompilerOptions(), files: [DTS, ...Object.keys(files)] };
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify(tsconfig, null, 2));
  const r = spawnSync(process.execPath, [TSC, "-p", join(dir, "tsconfig.json"), "--pretty", "false"], {
    cwd: dir,
    encoding: "utf8",
    timeout: 120_000,
  });
  if (r.error) throw r.error;
  const out = `${r.stdout}${r.stderr}`;
  const diagnostics: Diagnostic[] = [];
  for (const line of out.split("\n")) {
    const m = /^(.+?)\((\d+),\d+\): error (TS\d+): (.*)$/.exec(line);
    if (m)
      diagnostics.push({
        file: (m[1] as string).split(/[\\/]/).pop() as string,
        line: Number(m[2]),
        code: m[3] as string,
        message: m[4] as string,
      });
  }
  // Anything else tsc says (a bad option, a file it cannot read) is a failure of this test itself.
  const other = out
    .split("\n")
    .filter((l) => l.trim() !== "" && !/^(.+?)\(\d+,\d+\): error TS\d+: /.test(l) && !/^\s/.test(l));
  expect(other, out).toEqual([]);
  expect(r.status === 0, out).toBe(diagnostics.length === 0);
  return diagnostics;
}

/**
 * Wrong calls, one a line, each marked `// wrong:`: every marked line must get an error, and no
 * other line. They stand for what the declarations must catch in a script.
 */
const WRONG = `/** @type {Sigil.Main<{ wallet: Sigil.Address }>} */
async function main({ wallet }) {
  await Sigil.Actions.signMessage({ message: 1 }); // wrong: no pkpId, and a message is text or {raw}
  await Sigil.Actions.signMessage({ pkpId: "abc", message: "x" }); // wrong: a pkpId is 0x…
  await Sigil.Actions.signMessage({ pkpId: wallet, message: { raw: "68656c6c6f" } }); // wrong: raw bytes are 0x…
  await Sigil.Actions.signMessage({ pkpId: wallet, message: new Uint8Array(1) }); // wrong: bytes go as {raw: "0x…"}
  await Sigil.Actions.signDigest({ pkpId: wallet }); // wrong: no digest
  await Sigil.Actions.signSolanaTransaction({ pkpId: wallet, transaction: new Uint8Array(1) }); // wrong: a wire transaction goes as base64 text
  await Sigil.Actions.signTransaction({ pkpId: wallet, transaction: { type: "eip1559", value: 1.5e18, to: "dead" } }); // wrong: "to" is an address
  await Sigil.Actions.getActionPrivateKey({ cid: "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG" }); // wrong: only the code's own key
  (await Sigil.Actions.decrypt({ pkpId: wallet, ciphertext: "0x00", raw: true })).toFixed(); // wrong: raw gives hex text
  (await Sigil.Actions.signDigest({ pkpId: wallet, digest: "0x00" })).recovery; // wrong: it has r, s, v, signature
  Sigil.Actions.keccak256(42); // wrong: text, hex or bytes
  Sigil.Actions.sha256("x").then(() => {}); // wrong: synchronous, not a promise
  Sigil.Actions.sendTransaction({}); // wrong: there is no such function
  Sigil.Actions = Sigil.Actions; // wrong: Sigil is frozen
  Sigil.request.cid = "Qm"; // wrong: read-only
  setInterval(() => {}, 10); // wrong: there is no setInterval
  crypto.subtle.digest("SHA-256", new Uint8Array(1)); // wrong: there is no crypto.subtle
  crypto.getRandomValues(new Float64Array(1)); // wrong: integer typed arrays only
  new Response("made by a script"); // wrong: responses come from fetch
  await fetch("https://example.com", { signal: null }); // wrong: fetch takes no signal
  new URL("https://example.com").protocol = "http:"; // wrong: only href, pathname, search and hash can be set
  document.title; // wrong: no DOM
  process.env; // wrong: no Node
  return wallet.toFixed(); // wrong: an address is text
}
`;

describe("sdk/sigil-actions.d.ts", () => {
  let dir: string;
  let diagnostics: Diagnostic[];
  const exampleFile = (i: number) => `example-${String(i).padStart(2, "0")}.js`;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "sigil-actions-types-"));
    const files: Record<string, string> = { "wrong.js": WRONG };
    for (const example of examples) files[exampleFile(example.index)] = example.code;
    diagnostics = typeCheck(dir, files);
  }, 120_000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("type-checks every example of docs/actions.md without an error (strict, checkJs, the page's own compiler options)", () => {
    expect(examples.length).toBeGreaterThan(30);
    const inExamples = diagnostics.filter((d) => d.file !== "wrong.js");
    const shown = inExamples.map((d) => {
      const example = examples[Number(/\d+/.exec(d.file)?.[0]) - 1];
      return `docs/actions.md:${(example?.line ?? 0) + d.line - 1} (example ${example?.index}): ${d.code} ${d.message}`;
    });
    expect(shown).toEqual([]);
  });

  it("reports each deliberately wrong call, on its own line, and nothing else in that file", () => {
    const lines = WRONG.split("\n");
    const wrong = lines.flatMap((line, i) => (line.includes("// wrong:") ? [i + 1] : []));
    expect(wrong.length).toBeGreaterThan(20);
    const reported = [...new Set(diagnostics.filter((d) => d.file === "wrong.js").map((d) => d.line))].sort(
      (a, b) => a - b,
    );
    const unreported = wrong.filter((l) => !reported.includes(l)).map((l) => lines[l - 1]?.trim());
    expect(unreported, "wrong calls the declarations let through").toEqual([]);
    expect(
      reported.filter((l) => !wrong.includes(l)).map((l) => `${l}: ${lines[l - 1]}`),
      "errors on lines that are right",
    ).toEqual([]);
  });

  it("the first wrong call is reported as the error it is: signMessage's argument has no pkpId and its message is not text or {raw}", () => {
    const first = diagnostics.filter((d) => d.file === "wrong.js" && d.line === 3);
    expect(first.map((d) => `${d.code} ${d.message}`)).toEqual([
      "TS2322 Type 'number' is not assignable to type 'SignableMessage'.",
    ]);
  });
});

describe("the sandbox's names, declared and documented", () => {
  const core = readFileSync(CORE_JS, "utf8");
  const dts = readFileSync(DTS, "utf8");
  const listed = (name: string) =>
    (new RegExp(`const ${name} = apply\\(\\s*P\\.strSplit,\\s*"([^"]+)"`).exec(core)?.[1] ?? "").split(" ");

  it("every function of Sigil.Actions (core.js ACTION_NAMES) has its section in docs/actions.md and its declaration in SigilActions", () => {
    const names = listed("ACTION_NAMES");
    expect(names.length).toBeGreaterThanOrEqual(15);
    const actions = /export interface SigilActions \{([\s\S]*?)\n\}/.exec(dts)?.[1] ?? "";
    const declared = [...new Set([...actions.matchAll(/^ {2}(\w+)\(/gm)].map((m) => m[1]))].sort();
    expect(declared).toEqual([...names].sort());
    const headings = [...markdown.matchAll(/^###\s+(.*)$/gm)].map((m) => m[1] as string);
    for (const name of names)
      expect(
        headings.some((h) => new RegExp(`\\b${name}\\b`).test(h)),
        name,
      ).toBe(true);
  });

  it("every global the sandbox installs (core.js LAZY) is declared in sdk/sigil-actions.d.ts and named in docs/actions.md's Other globals", () => {
    const lazy = listed("LAZY").filter((_, i) => i % 2 === 0);
    expect(lazy).toContain("fetch");
    const globalBlock = dts.slice(dts.indexOf("declare global {"));
    const others = markdown.slice(markdown.indexOf("## Other globals"), markdown.indexOf("## Errors"));
    for (const name of lazy) {
      expect(globalBlock, name).toMatch(new RegExp(`(?:var|function|class|interface) ${name}\\b`));
      expect(others, name).toContain(`\`${name}`);
    }
  });
});

describe("docs/actions.md's example convention", () => {
  const fence = "```";
  const page = (...blocks: string[]) => blocks.join("\n\n");
  const js = `${fence}js\nasync function main() { return 1; }\n${fence}`;
  const json = `${fence}json\n{ "has_error": false, "response": 1 }\n${fence}`;

  it("pairs each js example with the json block right after it", () => {
    expect(examplesOf(page("# A", js, json, "## B", js, json)).map((e) => [e.heading, e.expected.response])).toEqual([
      ["A", 1],
      ["B", 1],
    ]);
  });

  it("refuses an example without its json block, with prose between them, or a json block after no example", () => {
    expect(() => examplesOf(page(js))).toThrow(/not followed by its json block/);
    expect(() => examplesOf(page(js, `${fence}ts\nx\n${fence}`, json))).toThrow(/not followed by its json block/);
    expect(() => examplesOf(page(js, "some prose", json))).toThrow(/not followed by its json block/);
    expect(() => examplesOf(page(json))).toThrow(/follows no js example/);
  });

  it("refuses an example in another language name, and an expectation without has_error or response, or with unknown fields", () => {
    expect(() => examplesOf(page(`${fence}javascript\nasync function main() {}\n${fence}`))).toThrow(
      /a code block in "javascript"/,
    );
    expect(() => examplesOf(page(js, `${fence}json\n{ "response": 1 }\n${fence}`))).toThrow(/has_error/);
    expect(() => examplesOf(page(js, `${fence}json\n{ "has_error": false }\n${fence}`))).toThrow(
      /response is required/,
    );
    expect(() =>
      examplesOf(page(js, `${fence}json\n{ "has_error": false, "response": 1, "respones": 2 }\n${fence}`)),
    ).toThrow(/unknown field respones/);
    expect(() => examplesOf(page(js, `${fence}json\n{ "has_error": true, "response": null }\n${fence}`))).toThrow(
      /code and message/,
    );
  });
});
