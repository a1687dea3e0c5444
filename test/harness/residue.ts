// The residue oracle (issue 26): reads every QuickJS instance's linear memory in a process — every
// page each memory has, from outside the sandbox, through /proc/<pid>/mem — and looks for canaries a
// run planted, in every form a run's secrets take in memory: UTF-8 (QuickJS's 8-bit strings, C
// strings the host reads back), UTF-16 (QuickJS's wide strings), lower- and upper-case hex of their
// bytes (in either string width), and raw bytes for keys and digests. It does not ask the sandbox
// what it thinks is clean; it looks at the bytes, independently of any exploit.
//
// A WebAssembly memory of V8 on x64 is one reservation of 8 GiB whose first part, the memory's
// present size, is readable and writable (rw-p) and the rest inaccessible (---p): two adjacent
// mappings, together 8 GiB. A QuickJS instance's memory is told from other WebAssembly memories by
// its static data: the build's read-only data segment sits at its offset in every instance's memory.
import { createHash, randomBytes } from "node:crypto";
import { openSync, readFileSync, readSync, closeSync } from "node:fs";
import { createRequire } from "node:module";

const RESERVATION = 8n << 30n;

/** The QuickJS build's first data segment (read-only data): its offset and its first bytes. */
function quickjsSignature(): { offset: number; bytes: Buffer } {
  const wasm = readFileSync(createRequire(import.meta.url).resolve("@jitl/quickjs-wasmfile-release-sync/wasm"));
  const uleb = (at: number): [number, number] => {
    let value = 0;
    let shift = 0;
    let b: number;
    do {
      b = wasm[at++] as number;
      value += (b & 0x7f) * 2 ** shift;
      shift += 7;
    } while (b & 0x80);
    return [value, at];
  };
  let at = 8;
  while (at < wasm.length) {
    const id = wasm[at++] as number;
    let size: number;
    [size, at] = uleb(at);
    if (id === 11) {
      let p: number;
      [, p] = uleb(at); // count
      [, p] = uleb(p); // flags of the first segment (0: active, memory 0)
      // i32.const <offset> end
      let offset = 0;
      let shift = 0;
      let b: number;
      p++;
      do {
        b = wasm[p++] as number;
        offset |= (b & 0x7f) << shift;
        shift += 7;
      } while (b & 0x80);
      p++;
      const [length, start] = uleb(p);
      p = start;
      return { offset, bytes: Buffer.from(wasm.subarray(p, p + Math.min(length, 256))) };
    }
    at += size;
  }
  throw new Error("the QuickJS build has no data section");
}

export type WasmMemory = { start: bigint; bytes: Buffer };

/** Every QuickJS instance's memory in process `pid` (its whole present size, read now). */
export function quickjsMemories(pid: number | "self"): WasmMemory[] {
  const signature = quickjsSignature();
  const maps = readFileSync(`/proc/${pid}/maps`, "utf8")
    .trim()
    .split("\n")
    .map((line) => {
      const [range, prot, , , inode] = line.split(/\s+/);
      const [from, to] = (range as string).split("-").map((h) => BigInt(`0x${h}`)) as [bigint, bigint];
      return { from, to, prot: prot as string, anonymous: inode === "0" };
    });
  const fd = openSync(`/proc/${pid}/mem`, "r");
  try {
    const found: WasmMemory[] = [];
    for (let i = 0; i + 1 < maps.length; i++) {
      const used = maps[i]!;
      const guard = maps[i + 1]!;
      if (
        used.prot !== "rw-p" ||
        guard.prot !== "---p" ||
        !used.anonymous ||
        used.to !== guard.from ||
        guard.to - used.from !== RESERVATION
      )
        continue;
      const bytes = Buffer.alloc(Number(used.to - used.from));
      try {
        readSync(fd, bytes, 0, bytes.length, used.from);
      } catch (err) {
        // A memory freed between reading the maps and reading it (V8 unmaps on another thread): its
        // pages are gone from the process.
        if ((err as NodeJS.ErrnoException).code === "EIO") continue;
        throw err;
      }
      if (bytes.subarray(signature.offset, signature.offset + signature.bytes.length).equals(signature.bytes))
        found.push({ start: used.from, bytes });
    }
    return found;
  } finally {
    closeSync(fd);
  }
}

/** What a run plants: text it handles, or the bytes of a key or a digest. */
export type Canary = string | Uint8Array;

/** The forms a canary's bytes may take in an instance's memory, by name. */
export function canaryForms(canary: Canary): Record<string, Buffer> {
  const forms: Record<string, Buffer> = {};
  const bytes = typeof canary === "string" ? Buffer.from(canary, "utf8") : Buffer.from(canary);
  const hex = bytes.toString("hex");
  if (typeof canary === "string") {
    forms.utf8 = bytes;
    forms.utf16 = Buffer.from(canary, "utf16le");
    // A string of Latin-1 characters only is 8-bit in QuickJS: one byte per character.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the Latin-1 range, control characters included
    if (/^[\u0000-\u00ff]*$/.test(canary)) forms.latin1 = Buffer.from(canary, "latin1");
  } else {
    forms.raw = bytes;
  }
  forms.hex = Buffer.from(hex, "latin1");
  forms.hexUpper = Buffer.from(hex.toUpperCase(), "latin1");
  forms.hex16 = Buffer.from(hex, "utf16le");
  forms.hexUpper16 = Buffer.from(hex.toUpperCase(), "utf16le");
  return forms;
}

export type ResidueHit = { canary: string; form: string; memory: string; offset: number };

/**
 * Every place in `memories` where one of `canaries` (by name) is found, in any of its forms. Reads
 * the memories given, whole.
 */
export function findResidue(
  memories: WasmMemory[],
  canaries: Record<string, Canary>,
  only?: readonly string[],
): ResidueHit[] {
  // Memories with the same bytes are searched once: idle instances that were made the same image
  // again are byte for byte alike (and with many canaries, each searched alone, that is most of the cost).
  const alike = new Map<string, WasmMemory[]>();
  for (const memory of memories) {
    const key = `${memory.bytes.length}:${createHash("sha256").update(memory.bytes).digest("hex")}`;
    alike.set(key, [...(alike.get(key) ?? []), memory]);
  }
  const hits: ResidueHit[] = [];
  for (const [name, canary] of Object.entries(canaries)) {
    for (const [form, needle] of Object.entries(canaryForms(canary))) {
      if (only && !only.includes(form)) continue;
      if (needle.length < 8) throw new Error(`canary ${name} is too short to be told from chance`);
      for (const group of alike.values()) {
        const bytes = (group[0] as WasmMemory).bytes;
        for (let at = bytes.indexOf(needle); at !== -1; at = bytes.indexOf(needle, at + 1)) {
          for (const memory of group)
            hits.push({ canary: name, form, memory: `0x${memory.start.toString(16)}`, offset: at });
        }
      }
    }
  }
  return hits;
}

/**
 * Reads the QuickJS memories of `pid` now and returns every canary found in them (in every form, or
 * in the forms named in `only`).
 */
export function scanResidue(
  pid: number | "self",
  canaries: Record<string, Canary>,
  only?: readonly string[],
): { memories: number; bytes: number; hits: ResidueHit[] } {
  const memories = quickjsMemories(pid);
  return {
    memories: memories.length,
    bytes: memories.reduce((n, m) => n + m.bytes.length, 0),
    hits: findResidue(memories, canaries, only),
  };
}

/**
 * A tenant's script: every kind of secret a run handles passes through it — its params (8-bit and
 * wide strings), a fetch body, a wallet's key it asks for, a digest it signs, its logs, an error
 * message (with `fail`), its response — and it keeps hundreds of strings built from them (the
 * review's reproductions kept 300 made from a key, and 3 000 from a param).
 */
export const TENANT_SCRIPT = `async function main(p) {
  const keep = [];
  for (let i = 0; i < 300; i++) keep.push(p.secret + i, p.wide + i);
  const fetched = await (await fetch(p.target + "/sha256?text=" + p.token)).text();
  const key = await Sigil.Actions.getPrivateKey({ pkpId: p.wallet });
  const signed = await Sigil.Actions.signDigest({ pkpId: p.wallet, digest: p.digest });
  for (let i = 0; i < 300; i++) keep.push(fetched + i, key + i, signed.signature + i);
  const logged = ("log-" + p.logSeed).toUpperCase();
  console.log(logged);
  keep.push(logged);
  const error = new Error(("error-" + p.errorSeed).toUpperCase());
  const answer = ("response-" + p.responseSeed).split("").reverse().join("");
  // While it holds, every secret is in its memory (the oracle's own check that it sees them).
  if (p.hold) await new Promise((r) => setTimeout(r, p.hold));
  if (p.fail) throw error;
  return { answer, fetched, signature: signed.signature, kept: keep.length };
}`;

/**
 * The params of one run of TENANT_SCRIPT with `wallet` (whose private key is `key`) and the fetch
 * target at `target` (emulators/fetchTarget.ts), and the canaries that run leaves if anything of it
 * survives: each made where only one kind of secret carries it.
 */
export function tenantCanaries(options: { target: string; wallet: string; key: Uint8Array }) {
  const hex = (n: number) => randomBytes(n).toString("hex");
  const digest = Uint8Array.from(randomBytes(32));
  const params = {
    secret: `params-${hex(12)}`,
    wide: `wide-${hex(12)}-\u2603`,
    token: hex(16),
    logSeed: hex(12),
    responseSeed: hex(12),
    errorSeed: hex(12),
    digest: `0x${Buffer.from(digest).toString("hex")}`,
    wallet: options.wallet,
    target: options.target,
    fail: false,
    /** Milliseconds the run waits, holding every secret, before it answers. */
    hold: 0,
  };
  const canaries: Record<string, Canary> = {
    params: params.secret,
    wideParams: params.wide,
    fetchBody: createHash("sha256").update(params.token).digest("hex"),
    logs: `log-${params.logSeed}`.toUpperCase(),
    response: `response-${params.responseSeed}`.split("").reverse().join(""),
    errorMessage: `error-${params.errorSeed}`.toUpperCase(),
    walletKey: Uint8Array.from(options.key),
    signedDigest: digest,
  };
  return { params, canaries };
}
