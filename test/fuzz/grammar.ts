// Scripts for the sandbox's fuzzing (issue 26), generated from a grammar of typed-array, ArrayBuffer,
// DataView, String, RegExp, JSON and Array operations: sizes at and around limits, buffers resized
// and detached, and the tricks that let a script run code in the middle of a built-in (a valueOf
// that resizes the buffer being filled, a comparator that detaches the array being sorted, a
// species constructor that answers a smaller buffer, a getter met by JSON.stringify).
//
// Each script checks itself for what a memory-unsafe engine would show: it plants a canary in its
// own heap (strings it keeps), and at its end it looks for the canary's bytes in every buffer it
// holds — bytes it never wrote there, read from outside the buffer — and checks that every view's
// extent lies within its buffer. It answers { violations, ops } (the harness, runner.ts, adds the
// checks from outside: the canary in memory after the run, the image, the next run's world).
//
// Deterministic: a seed gives the same script every time (xorshift, no Math.random).

/** A small deterministic generator (xorshift32). */
export class Rng {
  #s: number;
  constructor(seed: number) {
    this.#s = seed >>> 0 || 0x9e3779b9;
  }
  next(): number {
    let x = this.#s;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.#s = x >>> 0;
    return this.#s;
  }
  int(n: number): number {
    return this.next() % n;
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }
  chance(p: number): boolean {
    return this.next() / 2 ** 32 < p;
  }
}

/** Sizes and indices at and around the limits that matter to buffers, views and strings. */
const SIZES = [
  "0",
  "1",
  "2",
  "3",
  "7",
  "8",
  "9",
  "15",
  "16",
  "17",
  "63",
  "64",
  "65",
  "255",
  "256",
  "257",
  "4095",
  "4096",
  "4097",
  "65535",
  "65536",
  "65537",
  "(1 << 20)",
  "(1 << 20) + 1",
  "(1 << 24)",
];
const HUGE = [
  "-1",
  "-0",
  "NaN",
  "Infinity",
  "-Infinity",
  "2 ** 31 - 1",
  "2 ** 31",
  "2 ** 32 - 1",
  "2 ** 32",
  "2 ** 53",
  "1e9",
  "0.5",
  "undefined",
  "null",
  '"8"',
];
const TYPES = [
  "Uint8Array",
  "Int8Array",
  "Uint8ClampedArray",
  "Int16Array",
  "Uint16Array",
  "Int32Array",
  "Uint32Array",
  "Float32Array",
  "Float64Array",
  "BigInt64Array",
  "BigUint64Array",
  "Float16Array",
];

export type GeneratedScript = { seed: number; code: string; ops: number };

/** The script for `seed`: `ops` operations of the grammar between the planting and the checks. */
export function generateScript(seed: number, ops = 12): GeneratedScript {
  const r = new Rng(seed);
  const size = () => (r.chance(0.85) ? r.pick(SIZES) : r.pick(HUGE));
  const small = () => r.pick(["0", "1", "2", "3", "4", "7", "8", "16", "-1", "-8", "100"]);
  const buf = () => `B[${r.int(4)}]`;
  const view = () => `V[${r.int(6)}]`;
  /** A value that runs the script's code when a built-in converts it: resize or detach a buffer first. */
  const tricky = (value: string) => {
    switch (r.int(5)) {
      case 0:
        return `({ valueOf() { try { ${buf()}.resize(${small()}) } catch {} return ${value} } })`;
      case 1:
        return `({ valueOf() { try { ${buf()} = ${buf()}.transfer() } catch {} return ${value} } })`;
      case 2:
        return `({ valueOf() { try { ${buf()}.resize(${size()}) } catch {} return ${value} } })`;
      default:
        return value;
    }
  };
  const typed = () => r.pick(TYPES);
  const element = (type: string) =>
    type.startsWith("Big")
      ? r.pick(["0n", "1n", "-1n", "2n ** 63n"])
      : r.pick(["0", "1", "-1", "255", "256", "65537", "0.5", "NaN", "1e300"]);

  const grammar: Array<() => string> = [
    // Buffers: fixed and resizable, resized, transferred (the old one detached), sliced with a species.
    () => `${buf()} = new ArrayBuffer(${size()})`,
    () => `${buf()} = new ArrayBuffer(${size()}, { maxByteLength: ${size()} })`,
    () => `${buf()}.resize(${tricky(size())})`,
    () => `${buf()} = ${buf()}.transfer(${r.chance(0.5) ? tricky(size()) : ""})`,
    () => `${buf()} = ${buf()}.transferToFixedLength(${r.chance(0.5) ? size() : ""})`,
    // Shared memory (gone from the sandbox: issue 26's growable SharedArrayBuffer read past its allocation).
    () => `${buf()} = new SharedArrayBuffer(${size()}, { maxByteLength: ${size()} })`,
    () => `${buf()}.grow(${tricky(size())})`,
    () =>
      `{ const b = new SharedArrayBuffer(${small()}, { maxByteLength: ${size()} }); ${view()} = new ${typed()}(b); b.grow(${size()}); ${buf()} = b }`,
    () => `${buf()} = ${buf()}.slice(${tricky(small())}, ${tricky(size())})`,
    () =>
      `{ const b = ${buf()}; b.constructor = { [Symbol.species]: function (n) { return new ArrayBuffer(${small()}) } }; ${buf()} = b.slice(${small()}, ${size()}) }`,
    // Views over them: typed arrays (fixed and length-tracking) and DataViews.
    () =>
      `${view()} = new ${typed()}(${buf()}${r.chance(0.6) ? `, ${r.pick(["0", "8", "16", "1", "-8"])}` : ""}${r.chance(0.4) ? `, ${small()}` : ""})`,
    () => `${view()} = new ${typed()}(${size()})`,
    () =>
      `${view()} = new DataView(${buf()}${r.chance(0.6) ? `, ${r.pick(["0", "1", "8"])}` : ""}${r.chance(0.4) ? `, ${small()}` : ""})`,
    () => `${view()} = ${view()}.subarray(${tricky(small())}, ${tricky(small())})`,
    // Typed-array methods with arguments that run code, comparators and callbacks that resize.
    () => {
      const t = typed();
      return `${view()}.fill(${tricky(element(t))}, ${tricky(small())}, ${tricky(size())})`;
    },
    () =>
      `${view()}.set(${r.chance(0.5) ? view() : `[${element("Uint8Array")}, ${element("Uint8Array")}, ${element("Uint8Array")}]`}, ${tricky(small())})`,
    () => `${view()}.copyWithin(${tricky(small())}, ${tricky(small())}, ${tricky(size())})`,
    () => `${view()} = ${view()}.slice(${tricky(small())}, ${tricky(size())})`,
    () => `${view()}.sort((a, b) => { try { ${buf()}.resize(${small()}) } catch {} return a < b ? -1 : 1 })`,
    () => `${view()}.sort((a, b) => { try { ${buf()} = ${buf()}.transfer() } catch {} return 0 })`,
    () => `${view()}.indexOf(${element("Uint8Array")}, ${tricky(small())})`,
    () => `${view()}.lastIndexOf(${element("Uint8Array")}, ${tricky(small())})`,
    () => `${view()}.includes(${element("Uint8Array")}, ${tricky(small())})`,
    () => `${view()}.join({ toString() { try { ${buf()}.resize(${small()}) } catch {} return "," } })`,
    () => `${view()}.reverse()`,
    () => `${view()} = ${view()}.with(${tricky(small())}, ${tricky("1")})`,
    () => `${view()} = ${view()}.toSorted()`,
    () => `${view()} = ${view()}.toReversed()`,
    () => `${view()} = ${view()}.map((x, i) => { if (i === 1) try { ${buf()}.resize(${small()}) } catch {} return x })`,
    () =>
      `${view()} = ${view()}.filter((x, i) => { if (i === 0) try { ${buf()}.resize(${small()}) } catch {} return true })`,
    () =>
      `{ const v = ${view()}; v.constructor = { [Symbol.species]: function () { return new Uint8Array(${small()}) } }; ${view()} = v.${r.pick(["map((x) => x)", "filter(() => true)", "slice(0)", "subarray(0)"])} }`,
    () => `${view()} = ${typed()}.from(${view()}, (x) => { try { ${buf()}.resize(${small()}) } catch {} return x })`,
    () => `${view()}[${tricky(small())}] = ${element("Uint8Array")}`,
    () => `void ${view()}.at(${tricky(small())})`,
    () =>
      `void Array.prototype.${r.pick(["join", "indexOf", "lastIndexOf", "includes", "reverse", "copyWithin", "fill", "sort"])}.call(${view()}, ${tricky(small())}, ${tricky(small())})`,
    () => `void Array.from(${view()})`,
    () => `void [].concat(${view()}, ${view()})`,
    // DataView accessors at offsets around their ends.
    () =>
      `${view()}.${r.pick(["getInt8", "getUint16", "getInt32", "getFloat32", "getFloat64", "getBigInt64", "getFloat16"])}(${tricky(small())}, ${r.chance(0.5)})`,
    () =>
      `${view()}.${r.pick(["setInt8", "setUint16", "setInt32", "setFloat32", "setFloat64"])}(${tricky(small())}, ${element("Uint8Array")}, ${r.chance(0.5)})`,
    () => `${view()}.setBigInt64(${tricky(small())}, ${element("BigInt64Array")})`,
    // Strings at sizes near the limits, built from views and back.
    () => `S = S.padEnd(${r.pick(["0", "16", "4097", "65537", "(1 << 20)"])}, ${r.pick(['"ab"', '"\\u2603"', '""'])})`,
    () => `S = String.fromCharCode.apply(null, Array.from(${view()}).slice(0, 4096))`,
    () => `S = new TextDecoder().decode(${view()})`,
    () => `${view()} = new TextEncoder().encode(S.slice(0, ${size()}))`,
    () => `S = S.repeat(${r.pick(["0", "1", "2", "3"])}).slice(0, 1 << 20)`,
    () => `S = S.normalize(${r.pick(['"NFC"', '"NFD"', '"NFKC"', '"NFKD"'])})`,
    () => `S = btoa(S.replace(/[^\\x00-\\xff]/g, "")).slice(0, 1 << 20)`,
    // RegExp with sizes and state the script controls.
    () =>
      `{ const re = new RegExp(${r.pick(['"(a|b)*c"', '"(?<n>x)+"', '"[\\\\u0000-\\\\uffff]"', '"(?:a{0,8}){0,8}b"', '"\\\\b"'])}, "g"); re.lastIndex = ${tricky(small())}; void re.exec(S) }`,
    () =>
      `S = S.replace(/(?<first>.)(.)/g, ${r.pick(['"$<first>$2$1"', "(m, a, b) => { try { " + "B[0].resize(1)" + " } catch {} return b + a }", '"$$&"'])}).slice(0, 1 << 20)`,
    () => `void S.split(${r.pick(['""', "/(?:)/u", '","'])}, ${tricky(small())})`,
    () =>
      `{ const re = /x/g; re.exec = function () { try { ${buf()}.resize(${small()}) } catch {} return null }; void re[Symbol.replace](S, "y") }`,
    // JSON over objects with getters and toJSON that change buffers mid-walk; parse with a reviver.
    () =>
      `void JSON.stringify({ a: ${view()}, get b() { try { ${buf()}.resize(${small()}) } catch {} return [1, 2] }, c: { toJSON() { try { ${buf()} = ${buf()}.transfer() } catch {} return S.slice(0, 64) } } })`,
    () =>
      `void JSON.parse(JSON.stringify(Array.from(${view()}).slice(0, 512)), (k, v) => { try { ${buf()}.resize(${small()}) } catch {} return v })`,
    () => `void JSON.stringify(${view()}, null, ${r.pick(["0", "2", "10", '"\\t"'])})`,
    // Arrays: lengths at the limits, holes, sorting and splicing with callbacks that change them.
    // (A length of 2 ** 32 - 1 is refused nowhere, and then every generic method walks it for minutes in
    // one built-in call: the pool's watchdog ends such a run, this harness has none.)
    () => `A.length = ${r.pick(["0", "1", "100", "4096"])}`,
    () => `A = Array.from({ length: ${r.pick(["0", "8", "4096"])} }, (_, i) => i)`,
    () => `A.sort((a, b) => { A.length = ${r.pick(["0", "1", "3"])}; return a - b })`,
    () => `void A.splice(${tricky(small())}, ${tricky(small())}, ...Array.from(${view()}).slice(0, 16))`,
    () => `A = A.concat(Array.from(${view()}).slice(0, 64)).flat(${r.pick(["1", "Infinity"])})`,
    () => `void A.copyWithin(${tricky(small())}, ${tricky(small())})`,
    () => `void A.join(S.slice(0, 8))`,
  ];

  const lines: string[] = [];
  for (let i = 0; i < ops; i++) lines.push(`  try { ${r.pick(grammar)()} } catch (e) { errors++ }`);
  const code = `// sandbox fuzz seed ${seed}
async function main(p) {
  // The canary, planted in the heap as strings this run keeps to its end.
  const keep = [];
  for (let i = 0; i < 64; i++) keep.push(p.canary + i);
  const B = [new ArrayBuffer(16), new ArrayBuffer(64, { maxByteLength: 4096 }), new ArrayBuffer(8, { maxByteLength: 1 << 20 }), new ArrayBuffer(0)];
  const V = [new Uint8Array(B[0]), new Int32Array(B[1]), new Float64Array(B[2]), new DataView(B[1]), new Uint16Array(B[1], 2), new Uint8Array(B[2], 0, 4)];
  let S = p.canary.slice(0, 8) + "\\u00e9\\u2603";
  let A = [3, 1, 2];
  let errors = 0;
${lines.join("\n")}
  // More canary, now: a view that reaches past its allocation covers what is allocated after it.
  for (let i = 0; i < 256; i++) keep.push(p.canary + "/" + i);
  // What a memory-safe engine never shows.
  const violations = [];
  const needle = new TextEncoder().encode(p.canary.slice(0, 16));
  const holds = (bytes) => {
    for (let i = 0; i + needle.length <= bytes.length; i++) {
      let j = 0;
      while (j < needle.length && bytes[i + j] === needle[j]) j++;
      if (j === needle.length) return true;
    }
    return false;
  };
  const seen = new Set();
  for (const v of V) {
    if (!v || typeof v !== "object" || !("buffer" in v)) continue;
    let b, offset, length;
    try { b = v.buffer; offset = v.byteOffset; length = v.byteLength } catch (e) { continue }
    if (b && typeof b.byteLength === "number" && b.byteLength > 0 && offset + length > b.byteLength) violations.push("a view reaches past its buffer: " + offset + "+" + length + " > " + b.byteLength);
    if (!ArrayBuffer.isView(v) || v instanceof DataView || typeof v.length !== "number") continue;
    if (v.length * v.BYTES_PER_ELEMENT !== v.byteLength) violations.push("a view's length and byteLength disagree: " + v.length + " * " + v.BYTES_PER_ELEMENT + " != " + v.byteLength);
    seen.add(b);
  }
  const Shared = globalThis.SharedArrayBuffer;
  for (const b of [...B, ...seen]) {
    const shared = Shared !== undefined && b instanceof Shared;
    if (!(b instanceof ArrayBuffer || shared) || b.detached) continue;
    if (b.byteLength > (b.resizable || b.growable ? b.maxByteLength : b.byteLength)) violations.push("a buffer longer than its maximum");
    // Its first 256 KiB: a view past its allocation shows what lies just beyond it first.
    if (holds(new Uint8Array(b, 0, Math.min(b.byteLength, 1 << 18)))) violations.push("a buffer holds the canary, which was never written to one");
  }
  return { violations, errors, ops: ${ops}, kept: keep.length };
}`;
  return { seed, code, ops };
}
