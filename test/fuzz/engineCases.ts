// Memory-safety probes of the QuickJS engine (issue 26): the known memory-safety fixes of both
// engines' public histories (Bellard's QuickJS and quickjs-ng), each turned into a probe, and probes of
// the same classes written here (resizable and detached buffers under typed arrays and DataViews,
// species and getter tricks, GC and re-entrancy paths). quickjs-emscripten 0.32 ships Bellard's
// QuickJS at f1139494 ("2025-09-13" line, vendored 2026-02-15; the sandbox's build) and quickjs-ng
// v0.12.1. Each probe is an expression (an immediately called function, sync or async) that checks
// itself and answers { verdict: "safe" | "violation" | "refused", detail }:
//   violation: memory-unsafety was observed (a view or read longer than its allocation, bytes never
//              written showing up, a write landing in another object, a freed value read back…);
//   refused:   the engine (or the sandbox, which removed what it needs) threw at the dangerous step;
//   safe:      the dangerous step completed and nothing unsafe was observed.
// A probe that makes WebAssembly trap or the engine abort ends its run; the sandbox drops that
// instance (engine.test.ts checks it did no harm). Every probe is deterministic. `upstream` names the
// fix a probe comes from ("own probe" when it was written here); `heavy` probes take gigabytes and
// run only on request.

export type EngineCase = { id: string; title: string; area: string; upstream: string; body: string; heavy?: boolean };

// ---- helpers prepended to every case (kept tiny on purpose) ----
/** The helpers every probe may use (kept small). */
export const HELPERS = `
var V = (verdict, detail) => ({ verdict, detail: String(detail).slice(0, 400) });
var R = (e) => V("refused", (e && e.name) + ": " + (e && e.message));
// run the cycle collector: allocate and drop enough small objects to pass the GC threshold
function churn(n) { for (let r = 0; r < (n || 3); r++) { let a = []; for (let i = 0; i < 20000; i++) a.push({ i }); a = null; } }
// allocate zeroed buffers; the allocator tends to hand out memory that was just freed
function spray(n, size) { const v = []; for (let i = 0; i < (n || 48); i++) v.push(new Uint8Array(size || 160)); return v; }
// how many bytes equal to b ended up in the sprayed (zero-initialised) buffers
function hits(vs, b) { let c = 0; for (const v of vs) for (let i = 0; i < v.length; i++) if (v[i] === b) c++; return c; }
`;

export const MARK = 0x5a; // planted pattern for bytes that must never be seen again
const heavy = (x: EngineCase): EngineCase => ({ ...x, heavy: true });
// every case's code starts with a comment saying what it checks and where the bug came from
const c = (id: string, area: string, upstream: string, title: string, body: string): EngineCase => ({
  id,
  title,
  area,
  upstream,
  body: body.trim(),
});

export const ENGINE_CASES: EngineCase[] = [
  // =====================================================================
  // 1. SharedArrayBuffer growth (the review finding) and its close relatives
  // =====================================================================
  c(
    "sab-grow-read",
    "SharedArrayBuffer",
    "own probe",
    "grow() of a growable SAB only bumps byte_length; a view then reads past the 8-byte allocation [related: outside review finding]",
    `
(() => {
  // only the initial 8 bytes are allocated when no SAB allocator hook is installed;
  // grow() just sets byte_length, so the view covers foreign heap memory
  let v;
  try { const s = new SharedArrayBuffer(8, { maxByteLength: 65536 }); s.grow(65536); v = new Uint8Array(s); }
  catch (e) { return R(e); }
  let nz = 0; for (let i = 8; i < v.length; i++) if (v[i] !== 0) nz++;
  return nz ? V("violation", "grown view of " + v.length + " bytes shows " + nz + " non-zero bytes never written (heap past the 8-byte allocation)")
            : V("safe", "grown bytes read back as zero");
})()`,
  ),

  c(
    "sab-grow-dataview",
    "SharedArrayBuffer/DataView",
    "own probe",
    "length-tracking DataView over a grown SAB reads past the allocation [related: outside review finding]",
    `
(() => {
  let dv;
  try { const s = new SharedArrayBuffer(16, { maxByteLength: 65536 }); dv = new DataView(s); s.grow(65536); }
  catch (e) { return R(e); }
  let nz = 0;
  try { for (let i = 16; i + 4 <= dv.byteLength; i += 4) if (dv.getUint32(i) !== 0) nz++; } catch (e) { return R(e); }
  return nz ? V("violation", "DataView of " + dv.byteLength + " bytes: " + nz + " non-zero words past the 16-byte allocation")
            : V("safe", "all grown words zero");
})()`,
  ),

  c(
    "sab-grow-write",
    "SharedArrayBuffer",
    "own probe",
    "writes through a grown SAB land in other objects' memory [related: outside review finding]",
    `
(() => {
  // buffers allocated right after the SAB are likely to sit behind its 8-byte block
  let s, victims;
  try { s = new SharedArrayBuffer(8, { maxByteLength: 2048 }); } catch (e) { return R(e); }
  victims = spray(64, 24);
  try { s.grow(2048); new Uint8Array(s).fill(0x77, 8); } catch (e) { return R(e); }
  const h = hits(victims, 0x77);
  return h ? V("violation", h + " bytes written through the SAB view appeared inside other ArrayBuffers")
           : V("safe", "no write observed in neighbours (byteLength " + s.byteLength + ")");
})()`,
  ),

  c(
    "sab-slice-into-grown",
    "SharedArrayBuffer",
    "own probe",
    "SAB.prototype.slice whose species constructor returns a grown (under-allocated) SAB: memcpy overflows it [related: outside review finding]",
    `
(() => {
  let src, out, victims;
  try {
    src = new SharedArrayBuffer(1024); new Uint8Array(src).fill(0x77);
    src.constructor = { [Symbol.species]: function (n) {
      const t = new SharedArrayBuffer(8, { maxByteLength: 1024 }); victims = spray(48, 24); t.grow(n); return t; } };
    out = src.slice(0, 1024);
  } catch (e) { return R(e); }
  const h = hits(victims, 0x77);
  return h ? V("violation", "slice() copied into an 8-byte block claiming " + out.byteLength + " bytes; " + h + " bytes landed in neighbours")
           : V("safe", "no overflow observed (target byteLength " + out.byteLength + ")");
})()`,
  ),

  // =====================================================================
  // 2. Resizable ArrayBuffer / TypedArray / DataView: own probes
  // =====================================================================
  c(
    "rab-shrink-fixed-ta",
    "ArrayBuffer resize/TypedArray",
    "own probe",
    "fixed-length Uint8Array created before a shrink must become out of bounds",
    `
(() => {
  const rab = new ArrayBuffer(4096, { maxByteLength: 4096 });
  const ta = new Uint8Array(rab, 0, 4096); ta.fill(${MARK});
  rab.resize(8);
  let seen = 0, len;
  try { len = ta.length; for (let i = 0; i < 4096; i += 16) if (ta[i] === ${MARK}) seen++; } catch (e) { return R(e); }
  if (seen > 1 || len > 8) return V("violation", "view length " + len + ", " + seen + " stale marker bytes read after shrink to 8");
  return V("safe", "length " + len + " after shrink");
})()`,
  ),

  c(
    "rab-shrink-dataview-fixed",
    "ArrayBuffer resize/DataView",
    "bellard/quickjs 7cfddd0 (2025-11-03); quickjs-ng/quickjs 57fe819 (2025-03-23)",
    "fixed-length DataView created before a shrink must throw on access",
    `
(() => {
  const rab = new ArrayBuffer(4096, { maxByteLength: 4096 });
  new Uint8Array(rab).fill(${MARK});
  const dv = new DataView(rab, 0, 4096);
  rab.resize(8);
  let v;
  try { v = dv.getUint32(1000); } catch (e) { return R(e); }
  return v === 0x5a5a5a5a ? V("violation", "getUint32(1000) on a shrunk 8-byte buffer returned the stale marker")
                          : V("violation", "getUint32(1000) past an 8-byte buffer did not throw (returned " + v + ")");
})()`,
  ),

  c(
    "rab-shrink-dataview-tracking",
    "ArrayBuffer resize/DataView",
    "bellard/quickjs 7cfddd0 (2025-11-03); quickjs-ng/quickjs 57fe819 (2025-03-23)",
    "length-tracking DataView: byteLength must follow a shrink and reads past it must throw",
    `
(() => {
  const rab = new ArrayBuffer(4096, { maxByteLength: 4096 });
  new Uint8Array(rab).fill(${MARK});
  const dv = new DataView(rab, 16);
  rab.resize(32);
  let bl, v;
  try { bl = dv.byteLength; v = dv.getUint8(100); } catch (e) { return bl === 16 ? R(e) : V("violation", "byteLength " + bl + " (expected 16); then " + e.message); }
  return V("violation", "getUint8(100) on a 16-byte view returned " + v + " (byteLength " + bl + ")");
})()`,
  ),

  c(
    "rab-tracking-shrink-regrow",
    "ArrayBuffer resize/TypedArray",
    "own probe",
    "length-tracking view: after shrink and regrow the re-exposed bytes must be zero",
    `
(() => {
  const rab = new ArrayBuffer(4096, { maxByteLength: 4096 });
  const ta = new Uint8Array(rab); ta.fill(${MARK});
  rab.resize(8); spray(16, 64); rab.resize(4096);
  if (ta.length !== 4096) return V("violation", "tracking view length " + ta.length + " after regrow to 4096");
  let seen = 0; for (let i = 8; i < 4096; i++) if (ta[i] !== 0) seen++;
  return seen ? V("violation", seen + " non-zero bytes re-exposed after shrink+grow (must be zero-filled)") : V("safe", "regrown bytes are zero");
})()`,
  ),

  c(
    "rab-fill-valueOf-shrink",
    "TypedArray.prototype.fill",
    "own probe",
    "fill() whose value's valueOf shrinks the buffer must not write past the new end",
    `
(() => {
  const rab = new ArrayBuffer(4096, { maxByteLength: 4096 });
  const ta = new Uint8Array(rab);
  let victims;
  try { ta.fill({ valueOf() { rab.resize(8); victims = spray(); return 0x77; } }); } catch (e) { return R(e); }
  const h = hits(victims, 0x77);
  return h ? V("violation", "fill wrote " + h + " bytes into buffers allocated after the shrink") : V("safe", "no stray writes; length " + ta.length);
})()`,
  ),

  c(
    "rab-copyWithin-valueOf-shrink",
    "TypedArray.prototype.copyWithin",
    "own probe",
    "copyWithin() whose end argument shrinks the buffer must clamp the copy",
    `
(() => {
  const rab = new ArrayBuffer(4096, { maxByteLength: 4096 });
  const ta = new Uint8Array(rab); ta.fill(0x77, 0, 2048);
  let victims;
  try { ta.copyWithin(2048, 0, { valueOf() { rab.resize(8); victims = spray(); return 2048; } }); } catch (e) { return R(e); }
  const h = hits(victims, 0x77);
  return h ? V("violation", "copyWithin moved " + h + " bytes into buffers allocated after the shrink") : V("safe", "no stray writes");
})()`,
  ),

  c(
    "rab-set-arraylike-shrink",
    "TypedArray.prototype.set",
    "own probe",
    "set(arrayLike) whose element getter shrinks the target must stop writing",
    `
(() => {
  const rab = new ArrayBuffer(4096, { maxByteLength: 4096 });
  const ta = new Uint8Array(rab);
  let victims, first = true;
  const src = new Proxy({ length: 4000 }, { get(t, k) {
    if (k === "length") return 4000;
    if (first) { first = false; rab.resize(8); victims = spray(); }
    return 0x77; } });
  try { ta.set(src); } catch (e) { return R(e); }
  const h = hits(victims, 0x77);
  return h ? V("violation", "set() wrote " + h + " bytes into buffers allocated after the shrink") : V("safe", "no stray writes");
})()`,
  ),

  c(
    "rab-set-offset-shrink",
    "TypedArray.prototype.set",
    "own probe",
    "set(typedArray, offset) whose offset valueOf shrinks the target",
    `
(() => {
  const rab = new ArrayBuffer(4096, { maxByteLength: 4096 });
  const ta = new Uint8Array(rab);
  const src = new Uint8Array(1000).fill(0x77);
  let victims;
  try { ta.set(src, { valueOf() { rab.resize(8); victims = spray(); return 100; } }); } catch (e) { return R(e); }
  const h = hits(victims, 0x77);
  return h ? V("violation", "set() wrote " + h + " bytes past the shrunk buffer") : V("safe", "no stray writes");
})()`,
  ),

  c(
    "rab-search-fromIndex-shrink",
    "TypedArray indexOf/lastIndexOf/includes",
    "bellard/quickjs c927eca (2025-08-25); quickjs-ng/quickjs 0721419 (2025-09-26), a4439a0 (2026-07-25)",
    "indexOf/lastIndexOf/includes whose fromIndex valueOf shrinks the buffer must not scan freed bytes",
    `
(() => {
  const out = [];
  for (const m of ["indexOf", "lastIndexOf", "includes"]) {
    const rab = new ArrayBuffer(4096, { maxByteLength: 4096 });
    const ta = new Uint8Array(rab); ta.fill(${MARK}); ta.fill(0, 0, 8);
    let r;
    try { r = ta[m](${MARK}, { valueOf() { rab.resize(8); return m === "lastIndexOf" ? 4000 : 100; } }); }
    catch (e) { out.push(m + ": threw " + e.name); continue; }
    if (r === true || (typeof r === "number" && r >= 8)) return V("violation", m + " found the stale marker in freed memory (result " + r + ")");
    out.push(m + ": " + r);
  }
  return V("safe", out.join("; "));
})()`,
  ),

  c(
    "rab-join-separator-shrink",
    "TypedArray.prototype.join",
    "own probe",
    "join() whose separator toString shrinks the buffer must not read freed elements",
    `
(() => {
  const rab = new ArrayBuffer(256, { maxByteLength: 256 });
  const ta = new Uint8Array(rab); ta.fill(${MARK});
  let s;
  try { s = ta.join({ toString() { rab.resize(4); return ","; } }); } catch (e) { return R(e); }
  const n = s.split(",").filter((x) => x === "${MARK}").length;
  return n > 4 ? V("violation", "join emitted " + n + " marker elements after shrink to 4") : V("safe", "join emitted " + n + " elements with the marker");
})()`,
  ),

  c(
    "dataview-set-valueOf-shrink",
    "DataView.prototype.setUint32",
    "own probe",
    "DataView.setUint32 whose value valueOf shrinks the buffer must re-check bounds",
    `
(() => {
  const rab = new ArrayBuffer(4096, { maxByteLength: 4096 });
  const dv = new DataView(rab);
  let victims;
  try { for (let off = 64; off < 4000; off += 64) dv.setUint32(off, { valueOf() { if (!victims) { rab.resize(8); victims = spray(); } return 0x77777777; } }); }
  catch (e) { return R(e); }
  const h = hits(victims, 0x77);
  return h ? V("violation", "setUint32 wrote " + h + " bytes past the shrunk buffer") : V("safe", "no stray writes");
})()`,
  ),

  c(
    "dataview-get-offset-shrink",
    "DataView.prototype.getUint32",
    "own probe",
    "DataView.getUint32 whose offset valueOf shrinks the buffer must re-check bounds",
    `
(() => {
  const rab = new ArrayBuffer(4096, { maxByteLength: 4096 });
  new Uint8Array(rab).fill(${MARK});
  const dv = new DataView(rab);
  let v;
  try { v = dv.getUint32({ valueOf() { rab.resize(8); return 2000; } }); } catch (e) { return R(e); }
  return V("violation", "getUint32(2000) on an 8-byte buffer returned 0x" + v.toString(16));
})()`,
  ),

  c(
    "ta-elem-set-valueOf-shrink",
    "TypedArray [[Set]]",
    "own probe",
    "ta[i] = {valueOf(){shrink}} must bounds-check after the conversion",
    `
(() => {
  const rab = new ArrayBuffer(4096, { maxByteLength: 4096 });
  const ta = new Uint32Array(rab);
  let victims;
  try { ta[900] = { valueOf() { rab.resize(8); victims = spray(); return 0x77777777; } };
        Reflect.set(ta, 901, { valueOf() { return 0x77777777; } });
        Object.defineProperty(ta, 1, { value: { valueOf() { rab.resize(4); return 0x77777777; } } }); }
  catch (e) { if (!victims) return R(e); }
  const h = hits(victims, 0x77);
  return h ? V("violation", h + " bytes written past the shrunk buffer") : V("safe", "no stray writes");
})()`,
  ),

  c(
    "ta-ctor-offset-valueOf-shrink",
    "TypedArray constructor",
    "own probe",
    "new Uint8Array(rab, offset{valueOf: shrink}, length) must validate after the conversions",
    `
(() => {
  const rab = new ArrayBuffer(4096, { maxByteLength: 4096 });
  new Uint8Array(rab).fill(${MARK});
  let ta;
  try { ta = new Uint8Array(rab, 0, { valueOf() { rab.resize(8); return 4000; } }); } catch (e) { return R(e); }
  let seen = 0; for (let i = 0; i < ta.length; i++) if (ta[i] === ${MARK}) seen++;
  return seen > 8 || ta.length > 8 ? V("violation", "view of length " + ta.length + " over an 8-byte buffer; " + seen + " stale markers")
                                    : V("safe", "length " + ta.length);
})()`,
  ),

  c(
    "rab-transfer-old-views",
    "ArrayBuffer.prototype.transfer",
    "bellard/quickjs 75b5230 (2025-11-03, #450); quickjs-ng/quickjs c952c93 (2025-10-20, #1209)",
    "views of a transferred buffer must be detached (not alias the new owner or freed memory)",
    `
(() => {
  const ab = new ArrayBuffer(64, { maxByteLength: 8192 });
  const ta = new Uint8Array(ab), lt = new Uint8Array(ab, 8), dv = new DataView(ab);
  ta.fill(1);
  let nb;
  try { nb = ab.transfer(8192); } catch (e) { return R(e); }   // realloc: old block is freed
  const victims = spray(32, 56);
  for (const v of victims) v.fill(0x77);
  new Uint8Array(nb).fill(0x66);
  const bad = [];
  if (ta.length || ta[0] !== undefined) bad.push("ta.length " + ta.length + " ta[0] " + ta[0]);
  if (lt.length || lt[0] !== undefined) bad.push("lt.length " + lt.length);
  try { bad.push("dv.getUint8(0) " + dv.getUint8(0)); } catch (e) {}
  return bad.length ? V("violation", "old views still usable after transfer: " + bad.join(", ")) : V("safe", "old views detached");
})()`,
  ),

  c(
    "rab-transfer-in-valueOf",
    "ArrayBuffer.prototype.transfer/TypedArray.fill",
    "own probe",
    "fill() whose valueOf transfers (detaches + reallocates) the buffer must not write into freed memory",
    `
(() => {
  const ab = new ArrayBuffer(2048, { maxByteLength: 65536 });
  const ta = new Uint8Array(ab);
  let nb, victims;
  try { ta.fill({ valueOf() { nb = ab.transfer(65536); victims = spray(); return 0x77; } }); } catch (e) { return R(e); }
  const h = hits(victims, 0x77), hn = new Uint8Array(nb).filter((x) => x === 0x77).length;
  return h || hn ? V("violation", "fill wrote through a detached view: " + h + " bytes in later allocations, " + hn + " in the new owner")
                 : V("safe", "no writes after detach");
})()`,
  ),

  c(
    "rab-sort-comparator-shrink",
    "TypedArray.prototype.sort",
    "bellard/quickjs 0989d4c (2026-03-21, #477); quickjs-ng/quickjs 53eefbc (2026-01-05, #1297)",
    "sort() comparator that shrinks the buffer: the write-back must only use values from the array",
    `
(() => {
  // values are all distinct 0x3c3c0000+i; anything else in the result was read from outside the array
  for (const at of [1, 50, 200, 400, 700, 1000, 1400]) {
    const rab = new ArrayBuffer(256 * 4, { maxByteLength: 256 * 4 });
    const ta = new Uint32Array(rab);
    for (let i = 0; i < 256; i++) ta[i] = 0x3c3c0000 + ((i * 97) & 255);
    let n = 0;
    try { ta.sort((a, b) => { if (++n === at) { rab.resize(40); spray(24, 1000).forEach((v) => v.fill(0x77)); } return a - b; }); }
    catch (e) { return R(e); }
    for (let i = 0; i < ta.length; i++) if (ta[i] !== 0 && (ta[i] >>> 16) !== 0x3c3c)
      return V("violation", "after shrink at comparator call " + at + ": ta[" + i + "] = 0x" + ta[i].toString(16) + " (not an array value)");
  }
  return V("safe", "sorted results only contain array values");
})()`,
  ),

  c(
    "rab-subarray-tracking-oob",
    "TypedArray.prototype.subarray",
    "quickjs-ng/quickjs 83bd0ab (2026-07-25)",
    "subarray() of a length-tracking view whose begin valueOf shrinks the buffer",
    `
(() => {
  const rab = new ArrayBuffer(4096, { maxByteLength: 4096 });
  const lt = new Uint8Array(rab, 16); new Uint8Array(rab).fill(${MARK});
  let sub;
  try { sub = lt.subarray({ valueOf() { rab.resize(8); return 100; } }); } catch (e) { return R(e); }
  let seen = 0; try { for (let i = 0; i < sub.length; i++) if (sub[i] === ${MARK}) seen++; } catch (e) {}
  return sub.length > 0 || seen ? V("violation", "subarray of an out-of-bounds view has length " + sub.length + ", " + seen + " stale markers")
                                : V("safe", "subarray length " + sub.length);
})()`,
  ),

  c(
    "ta-slice-species-shrink",
    "TypedArray.prototype.slice",
    "bellard/quickjs 3bffe67 (2025-04-22); quickjs-ng/quickjs 8dcdb92 (2024-04-15, #379), 2549a20 (2026-07-25)",
    "slice() whose species constructor shrinks the source must not copy from freed memory",
    `
(() => {
  const rab = new ArrayBuffer(4096, { maxByteLength: 4096 });
  const ta = new Uint8Array(rab); ta.fill(${MARK});
  ta.constructor = { [Symbol.species]: function (n) { rab.resize(8); spray(); return new Uint8Array(n); } };
  let r;
  try { r = ta.slice(0, 4000); } catch (e) { return R(e); }
  let seen = 0; for (let i = 8; i < r.length; i++) if (r[i] === ${MARK}) seen++;
  return seen ? V("violation", "slice copied " + seen + " stale bytes from beyond the shrunk source") : V("safe", "no stale bytes");
})()`,
  ),

  c(
    "ab-slice-species-shrink",
    "ArrayBuffer.prototype.slice",
    "own probe",
    "ArrayBuffer.slice() whose species constructor shrinks the source",
    `
(() => {
  const rab = new ArrayBuffer(4096, { maxByteLength: 4096 });
  new Uint8Array(rab).fill(${MARK});
  rab.constructor = { [Symbol.species]: function (n) { rab.resize(8); spray(); return new ArrayBuffer(n); } };
  let r;
  try { r = rab.slice(0, 4000); } catch (e) { return R(e); }
  const seen = new Uint8Array(r).filter((x) => x === ${MARK}).length;
  return seen > 8 ? V("violation", "slice copied " + seen + " bytes from beyond the shrunk source") : V("safe", "copied " + seen + " marker bytes");
})()`,
  ),

  c(
    "dataview-ctor-newtarget-shrink",
    "DataView constructor",
    "own probe",
    "Reflect.construct(DataView, [rab,0,len], newTarget) whose prototype getter shrinks the buffer [related: DataView analogue of bellard/quickjs #478]",
    `
(() => {
  const rab = new ArrayBuffer(4096, { maxByteLength: 4096 });
  new Uint8Array(rab).fill(${MARK});
  const nt = new Proxy(function () {}, { get(t, k) { if (k === "prototype") { rab.resize(8); return DataView.prototype; } return t[k]; } });
  let dv, v;
  try { dv = Reflect.construct(DataView, [rab, 0, 4096], nt); } catch (e) { return R(e); }
  try { v = dv.getUint32(2000); } catch (e) { return V("safe", "constructed, but access throws: " + e.message); }
  return V("violation", "DataView of byteLength " + dv.byteLength + " over an 8-byte buffer read 0x" + v.toString(16));
})()`,
  ),

  c(
    "ta-ctor-newtarget-shrink",
    "TypedArray constructor",
    "bellard/quickjs 68caa5f (2026-03-21, #478); quickjs-ng/quickjs c5d8083 (2026-01-05, #1296)",
    "Reflect.construct(Uint8Array, [rab, 0, len], newTarget) whose prototype getter shrinks the buffer after validation",
    `
(() => {
  const res = [];
  for (const args of [[0, 4096], [0], [16, 1000]]) {
    const rab = new ArrayBuffer(4096, { maxByteLength: 4096 });
    new Uint8Array(rab).fill(${MARK});
    const nt = new Proxy(function () {}, { get(t, k) { if (k === "prototype") { rab.resize(8); return Uint8Array.prototype; } return t[k]; } });
    let ta;
    try { ta = Reflect.construct(Uint8Array, [rab, ...args], nt); } catch (e) { res.push("threw " + e.name); continue; }
    let seen = 0; for (let i = 0; i < ta.length; i++) if (ta[i] === ${MARK}) seen++;
    if (ta.length > 8 || seen > 8) return V("violation", "view(" + args + ") length " + ta.length + " over an 8-byte buffer, " + seen + " stale markers read");
    res.push("len " + ta.length);
  }
  return res.every((x) => x.startsWith("threw")) ? V("refused", res.join("; ")) : V("safe", res.join("; "));
})()`,
  ),

  c(
    "ta-ctor-newtarget-detach",
    "TypedArray constructor",
    "bellard/quickjs 68caa5f (2026-03-21, #478); quickjs-ng/quickjs c5d8083 (2026-01-05, #1296)",
    "#478 with a plain (non-resizable) ArrayBuffer detached by transfer() inside the prototype getter: no resize needed",
    `
(() => {
  // shows that deleting ArrayBuffer.prototype.resize alone does not neutralise #478 on bellard:
  // transfer() frees/moves the backing store and the new view still gets length 4096
  const ab = new ArrayBuffer(4096); new Uint8Array(ab).fill(${MARK});
  const nt = function () {}.bind();   // a bound function's "prototype" can be an accessor (no Proxy needed)
  Object.defineProperty(nt, "prototype", { get() { ab.transfer(8192); spray(16, 200).forEach((v) => v.fill(0x77)); return Uint8Array.prototype; } });
  let ta;
  try { ta = Reflect.construct(Uint8Array, [ab, 0, 4096], nt); } catch (e) { return R(e); }
  let nz = 0; for (let i = 0; i < ta.length; i++) if (ta[i]) nz++;
  return ta.length ? V("violation", "view of length " + ta.length + " over a detached buffer; " + nz + " non-zero bytes readable (and writable) through it")
                   : V("safe", "view is empty");
})()`,
  ),

  c(
    "ta-ctor-ta-newtarget-shrink",
    "TypedArray constructor (from typed array)",
    "quickjs-ng/quickjs 53aebe6 (2026-01-06, #1305); bellard/quickjs 841dd03 (2026-03-21)",
    "Reflect.construct(Uint8Array, [srcView], newTarget) whose prototype getter shrinks the source buffer: memcpy of the stale length",
    `
(() => {
  const rab = new ArrayBuffer(4096, { maxByteLength: 4096 });
  const src = new Uint8Array(rab); src.fill(${MARK});
  const nt = new Proxy(function () {}, { get(t, k) { if (k === "prototype") { rab.resize(8); spray(16, 200).forEach((v) => v.fill(0x77)); return Uint8Array.prototype; } return t[k]; } });
  let ta;
  try { ta = Reflect.construct(Uint8Array, [src], nt); } catch (e) { return R(e); }
  // spec: the source length is read after the prototype lookup, so the copy must have 8 elements
  let seen = 0, nz = 0; for (let i = 8; i < ta.length; i++) { if (ta[i] === ${MARK} || ta[i] === 0x77) seen++; if (ta[i]) nz++; }
  return ta.length > 8 && (seen || nz) ? V("violation", "copied " + ta.length + " elements out of an 8-byte block: " + nz + " non-zero bytes from beyond it (" + seen + " planted markers)")
       : ta.length > 8 ? V("violation", "result length " + ta.length + " from an 8-byte source (bytes past 8 read as zero)")
       : V("safe", "copy length " + ta.length);
})()`,
  ),

  c(
    "ta-with-valueOf-shrink",
    "TypedArray.prototype.with",
    "bellard/quickjs 841dd03 (2026-03-21, #492); quickjs-ng/quickjs e6e4e76 (2026-03-20)",
    "with() whose value valueOf shrinks the buffer copies the stale length",
    `
(() => {
  const rab = new ArrayBuffer(4096, { maxByteLength: 4096 });
  const ta = new Uint8Array(rab); ta.fill(${MARK});
  let r;
  // after the shrink, refill the freed tail with other objects' data (0x77)
  try { r = ta.with(0, { valueOf() { rab.resize(8); spray(16, 200).forEach((v) => v.fill(0x77)); return 1; } }); } catch (e) { return R(e); }
  // spec: elements past the new length are read as undefined -> 0
  let seen = 0, nz = 0; for (let i = 8; i < r.length; i++) { if (r[i] === ${MARK} || r[i] === 0x77) seen++; if (r[i]) nz++; }
  return nz ? V("violation", "with() result of length " + r.length + " holds " + nz + " non-zero bytes read past the 8-byte buffer (" + seen + " planted markers)")
            : V("safe", "result length " + r.length + ", elements past the shrink are 0");
})()`,
  ),

  c(
    "ta-iterate-shrink",
    "TypedArray iterator",
    "own probe",
    "for-of over a typed array that shrinks mid-iteration must stop at the new length",
    `
(() => {
  const rab = new ArrayBuffer(1024, { maxByteLength: 1024 });
  const ta = new Uint8Array(rab); ta.fill(${MARK});
  let n = 0, stale = 0;
  try { for (const x of ta) { if (n++ === 2) rab.resize(4); if (n > 4 && x === ${MARK}) stale++; if (n > 2000) break; } } catch (e) { return R(e); }
  return stale ? V("violation", "iterator yielded " + stale + " elements past the shrunk end") : V("safe", "iteration stopped after " + n);
})()`,
  ),

  c(
    "ta-array-generic-shrink",
    "Array.prototype methods on TypedArray",
    "own probe",
    "generic Array.prototype methods on a typed array whose callback shrinks it",
    `
(() => {
  const rab = new ArrayBuffer(1024, { maxByteLength: 1024 });
  const ta = new Uint8Array(rab);
  let victims;
  try {
    Array.prototype.copyWithin.call(ta, 512, 0, { valueOf() { ta.fill(0x77); rab.resize(4); victims = spray(); return 512; } });
    Array.prototype.fill.call(ta, 0x77, { valueOf() { return 0; } });
    Array.prototype.reverse.call(ta);
    Array.prototype.sort.call(ta, (a, b) => { rab.resize(0); return a - b; });
    Array.prototype.includes.call(ta, 0x77, { valueOf() { rab.resize(0); return 0; } });
  } catch (e) { if (!victims) return R(e); }
  const h = hits(victims, 0x77);
  return h ? V("violation", h + " bytes written past the shrunk typed array") : V("safe", "no stray writes");
})()`,
  ),

  // =====================================================================
  // 3. Known upstream bugs (fast arrays, GC, generators, iterators, strings, regexp, ...)
  // =====================================================================
  c(
    "array-toReversed-gc-uninit",
    "Array.prototype.toReversed/with/toSpliced/toSorted",
    "bellard/quickjs 4c722ce (2026-03-21, #471)",
    "result array allocated with uninitialised slots; a GC run from a Proxy get trap marks stale bytes as JSValues",
    `
(() => {
  // 1. a Proxy over a real array (so [[HasProperty]] is true and the get trap runs per element)
  const N = 512;
  let calls = 0;
  const p = new Proxy(new Array(N).fill(1), { get(t, k) { if (k === "length") return N; if (++calls === 3) churn(4); return 1; } });
  const toReversed = Array.prototype.toReversed;
  // 2. plant fake object JSValues (NaN-boxed wasm32 layout: low word pointer 0x41414140, high word tag -1)
  //    in a 4 KiB block and free it; toReversed's 4 KiB element array reuses it without initialising it
  let plant = new Uint32Array(N * 2);
  for (let i = 0; i < N * 2; i += 2) { plant[i] = 0x41414140; plant[i + 1] = 0xffffffff; }
  plant = null;
  // 3. the GC in the get trap walks the half-filled result: a wasm trap here means it followed 0x41414140
  let r;
  try { r = toReversed.call(p); } catch (e) { return R(e); }
  return r.length === N && r.every((x) => x === 1) ? V("safe", "no garbage traced") : V("violation", "result holds unexpected values");
})()`,
  ),

  c(
    "array-length-shrink-grow-push",
    "Array fast path (length/push)",
    "quickjs-ng/quickjs da49a37 (2026-05-11), d98ff10 (2026-07-13, #1562)",
    "arr.length shrink then grow then push: count jumps over freed slots (use-after-free)",
    `
(() => {
  const keep = [];
  for (let i = 0; i < 20; i++) {
    const a = [{ a: 1 }, { b: 2 }, { c: 3 }, { d: 4 }, { e: 5 }];
    a.length = 2; a.length = 5; a.push({ f: 6 });
    keep.push(a);
  }
  const spr = []; for (let i = 0; i < 2000; i++) spr.push({ x: i, y: "s" + i });
  for (const a of keep) {
    if (2 in a || 3 in a || 4 in a || a[3] !== undefined)
      return V("violation", "freed element slot readable after length shrink/grow + push: typeof a[3] = " + typeof a[3]);
    if (a.length !== 6 || a[5].f !== 6) return V("violation", "array corrupted: length " + a.length);
  }
  return V("safe", "holes stay holes");
})()`,
  ),

  c(
    "array-delete-last-push",
    "Array fast path (delete)",
    "quickjs-ng/quickjs 1b0b660 (2026-04-03, #1430)",
    "delete of the last element then push: the freed slot is re-exposed",
    `
(() => {
  const arrs = [];
  for (let k = 0; k < 20; k++) { const a = [["a", 0], ["a", 1]]; delete a[1]; a.push(["b", 0], ["b", 1]); arrs.push(a); }
  const spr = []; for (let i = 0; i < 2000; i++) spr.push([i, "x" + i]);
  for (const a of arrs) {
    if (a.length !== 4) return V("violation", "length " + a.length);
    if (1 in a || a[1] !== undefined) return V("violation", "deleted slot is readable again: " + typeof a[1]);
    if (a[2][0] !== "b" || a[3][1] !== 1) return V("violation", "pushed elements corrupted");
  }
  return V("safe", "hole preserved");
})()`,
  ),

  c(
    "array-push-huge-length",
    "Array fast path (push/expand)",
    "quickjs-ng/quickjs a653771 (2026-05-13, #1468), 40e197f (2026-03-29)",
    "push() on an array whose length is 2^31-1: signed size computation under-allocates",
    `
(() => {
  const arr = [1, 2, 3];
  arr.length = 0x7fffffff;
  let r;
  try { r = arr.push(4); } catch (e) { return R(e); }
  return arr[0x7fffffff] === 4 && arr[0] === 1 ? V("safe", "push returned " + r) : V("violation", "array state inconsistent after push: " + r);
})()`,
  ),

  c(
    "mapped-arguments-gc",
    "arguments object / GC",
    "quickjs-ng/quickjs 3973106 (2026-03-12, #1400, CVE-2026-37630)",
    "GC while a mapped arguments object is live marks open var_refs that are not GC objects",
    `
(() => {
  function f(a, b) { const args = arguments; churn(3); a = 7; return args[0] + b + args.length; }
  let r;
  try { r = 0; for (let i = 0; i < 5; i++) r += f(1, 2); } catch (e) { return R(e); }
  churn(2);
  return r === 5 * (7 + 2 + 2) ? V("safe", "arguments intact") : V("violation", "arguments mapping corrupted: " + r);
})()`,
  ),

  c(
    "coroutine-closure-gc",
    "generators/async functions / GC",
    "quickjs-ng/quickjs 7955cfd (2026-07-23)",
    "suspended coroutine reachable only through a closure over its local is collected while live",
    `
(() => {
  let leakedA = null, leakedG = null;
  (function () {
    async function step() { const d = { tag: "A", resolve: null }; d.p = new Promise((r) => (d.resolve = r)); leakedA = () => d; await d.p; }
    step();
    let g;
    function* gen() { const o = { tag: "G" }; leakedG = () => o; yield 1; yield o.tag; }
    g = gen(); g.next();
  })();
  churn(4);
  const spr = []; for (let i = 0; i < 3000; i++) spr.push({ tag: "X" + i, resolve: i });
  let d, o;
  try { d = leakedA(); o = leakedG(); } catch (e) { return R(e); }
  return d && d.tag === "A" && typeof d.resolve === "function" && o && o.tag === "G"
    ? V("safe", "captured locals intact") : V("violation", "captured locals of a suspended coroutine were freed/reused: " + JSON.stringify([d && d.tag, o && o.tag]));
})()`,
  ),

  c(
    "finrec-weakmap-uaf",
    "FinalizationRegistry/WeakMap",
    "quickjs-ng/quickjs 8f62384 (2026-02-19, #1352)",
    "registry kept alive only by a WeakMap entry keyed by its own target: freed then dereferenced",
    `
(() => {
  let calls = 0;
  for (let i = 0; i < 50; i++) {
    let key = Symbol("k" + i), wm = new WeakMap(), fr = new FinalizationRegistry(() => { calls++; });
    fr.register(key, i); wm.set(key, fr); fr = null; key = null;
  }
  churn(3);
  const spr = []; for (let i = 0; i < 3000; i++) spr.push({ i });
  return V("safe", "no crash (" + calls + " callbacks ran synchronously)");
})()`,
  ),

  c(
    "finrec-cycle-uaf",
    "FinalizationRegistry/GC",
    "quickjs-ng/quickjs 78494db (2026-02-26, #1318)",
    "registry in a reference cycle with its target, registered as its own held value: freed with a job still pending",
    `
(async () => {
  const seen = [];
  for (let i = 0; i < 20; i++) {
    let target = {}, fr = new FinalizationRegistry(function (h) { seen.push(typeof h === "object" && h !== null ? typeof h.register : typeof h); });
    fr.register(target, fr); fr.ref = target; target.ref = fr; target = null; fr = null;
  }
  churn(4);
  const spr = []; for (let i = 0; i < 3000; i++) spr.push({ register: i });
  await null; await null; await null;
  const bad = seen.filter((t) => t !== "function");
  return bad.length ? V("violation", "cleanup callback received a freed registry (" + bad.join(",") + ")")
                    : V("safe", seen.length + " callbacks, held values intact");
})()`,
  ),

  heavy(
    c(
      "oom-cyclic-garbage-arraybuffer",
      "OOM handling / GC",
      "own probe",
      "allocate ArrayBuffers up to the runtime memory limit while cyclic garbage is pending: OOM + GC paths must stay consistent [related: OOM at the memory limit; cf. bellard/quickjs 5022f2b #494: GC re-entered from the OOM error path]",
      `
(() => {
  // deterministic allocation pattern (no timing): cyclic garbage that only the cycle collector frees,
  // then allocate 1 MiB, 1 KiB and 64-byte ArrayBuffers until each size fails. Because the memory
  // limit is not enforced on emscripten builds (see memory-limit-accounting) this runs the wasm heap
  // into its 2 GiB ceiling: ~2.2 GB RSS and 2-4 s per run, hence "heavy" (run.mjs --heavy)
  let n = 0;
  for (let pass = 0; pass < 4; pass++) {
    for (let i = 0; i < 300; i++) { const t = { i }; t.self = t; }
    const hog = [];
    for (const sz of [1 << 20, 1 << 10, 64]) { try { for (;;) { hog.push(new ArrayBuffer(sz)); n++; } } catch (e) {} }
    hog.length = 0;
  }
  return V("safe", "survived " + n + " allocations and 12 out-of-memory errors");
})()`,
    ),
  ),

  c(
    "generator-yield-in-forof-head-source",
    "generators (for-of)",
    "bellard/quickjs 69090b9 (2026-03-21, #488)",
    "the same yield in a for-of head written in the script's own source (the probe above needs eval, which scripts do not have): the bytecode check refuses the script before it runs",
    `
(() => {
  function* g() { for (const x of yield 1) {} }
  const it = g();
  it.next();
  let r;
  try { r = it.return(5); } catch (e) { return R(e); }
  return V("safe", "return() gave " + JSON.stringify(r));
})()`,
  ),

  c(
    "asyncgen-reentrant-return",
    "async generators",
    "quickjs-ng/quickjs 5d48f1d (2026-02-19, #1355); bellard/quickjs e7b9f21 (2026-03-21)",
    "re-entrant return()/next() from a then-getter drives an async generator into an unexpected state (UAF / assertion)",
    `
(async () => {
  const defer = () => { let resolve; const promise = new Promise((f) => (resolve = f)); return { promise, resolve }; };
  let it, a, b, c2, hit = 0, inside = false;
  Object.defineProperty(Object.prototype, "then", { configurable: true, get() {
    if (inside || !it) return undefined;
    inside = true;
    try { if (hit === 0) it.return(0); else if (hit === 1) { it.next(1); it.return(1); } hit++; } catch (_) {}
    inside = false; return undefined; } });
  async function* g() { try { await a.promise; yield 1; await b.promise; yield 2; await c2.promise; } finally { await c2.promise; } }
  try {
    a = defer(); b = defer(); c2 = defer(); it = g();
    it.next(); a.resolve({}); await Promise.resolve(); await Promise.resolve();
    b.resolve({}); c2.resolve({}); await Promise.resolve();
    for (let i = 0; i < 10; i++) await Promise.resolve();
  } catch (e) { delete Object.prototype.then; return R(e); }
  delete Object.prototype.then;
  churn(2);
  return V("safe", "no crash (then-getter hits: " + hit + ")");
})()`,
  ),

  c(
    "generator-yield-in-forof-head",
    "generators (for-of)",
    "bellard/quickjs 69090b9 (2026-03-21, #488); quickjs-ng/quickjs dcfa6c1 (2026-03-10)",
    "return() while suspended at a yield inside the for-of iterable expression closes a not-yet-created iterator (stack underflow)",
    `
(() => {
  // compiled through Function() so that a compile-time rejection is observable as "refused"
  let x;
  try { x = Function("return function* () { const keep = [1]; for (var e of yield keep) {} }")(); } catch (e) { return R(e); }
  for (let i = 0; i < 20; i++) {
    const g = x(); g.next();
    let r;
    try { r = g.return("t" + i); } catch (e) { return R(e); }
    if (!r || r.value !== "t" + i || r.done !== true) return V("violation", "return() produced " + JSON.stringify(r));
  }
  churn(2);
  return V("safe", "return() completed cleanly");
})()`,
  ),

  c(
    "iterator-concat-return-reentry",
    "Iterator.concat",
    "quickjs-ng/quickjs daab4ad (2026-02-28, #1368), 25b5e70 (2026-04-05, #1440)",
    "return() on the concat iterator from inside the iterable's [Symbol.iterator]: the entry is released twice",
    `
(() => {
  let it; const keep = [];
  for (let k = 0; k < 8; k++) {
    const evil = { tag: "evil" + k, [Symbol.iterator]() { try { it.return(); } catch (e) {} return [][Symbol.iterator](); } };
    keep.push(evil);
    it = Iterator.concat(evil);
    try { it.next(); } catch (e) { return R(e); }
  }
  // if the iterable was released twice, keep[] now points at freed (and reused) objects
  const spr = []; for (let i = 0; i < 3000; i++) spr.push({ tag: "spray" + i });
  const bad = keep.filter((e, k) => e.tag !== "evil" + k);
  return bad.length ? V("violation", bad.length + " iterables were freed while still referenced (tag now " + String(bad[0].tag) + ")")
                    : V("safe", "iterables intact");
})()`,
  ),

  c(
    "regexp-escape-rope",
    "RegExp.escape (rope strings)",
    "quickjs-ng/quickjs ee13c7f (2026-07-15, #1571)",
    "RegExp.escape reads a rope string as if it were a flat string (type confusion)",
    `
(() => {
  for (const [u, n] of [["a", 5000], ["a.b-c|d", 400], ["\\u20ac\\u2603", 400]]) {
    const rope = u.repeat(n) + u.repeat(n), flat = u.repeat(2 * n);
    let er, ef;
    try { er = RegExp.escape(rope); ef = RegExp.escape(flat); } catch (e) { return R(e); }
    if (er !== ef) return V("violation", "escape(rope) differs from escape(flat): lengths " + er.length + " vs " + ef.length);
  }
  return V("safe", "rope and flat strings escape identically");
})()`,
  ),

  c(
    "regexp-v-flag-unterminated-class",
    "RegExp parser (v flag)",
    "quickjs-ng/quickjs 48ececf (2026-02-19, #1354)",
    "new RegExp('[', 'v') reads past the end of the pattern while checking reserved double punctuators",
    `
(() => {
  const out = [];
  for (const p of ["[", "[&", "[&&", "[a--", "[\\\\q{", "[[a]&&[b"]) {
    try { new RegExp(p, "v"); out.push(p + ": accepted"); } catch (e) { out.push(p + ": " + e.name); if (e.name !== "SyntaxError") return V("violation", p + " -> " + e.name + ": " + e.message); }
  }
  return out.some((x) => x.endsWith("accepted")) ? V("violation", out.join(", ")) : V("refused", "all rejected with SyntaxError");
})()`,
  ),

  c(
    "proxy-ownkeys-size-wrap",
    "Proxy ownKeys (32-bit size overflow)",
    "quickjs-ng/quickjs 252209d (2026-07-28); same code in bellard/quickjs",
    "ownKeys trap result with length 2^29+1: sizeof(entry)*len wraps to 8 bytes on wasm32; the error path then frees 2^29+1 'entries'",
    `
(() => {
  // a correct engine fails the ~4 GiB key-table allocation before reading element 0.
  // We return a non-string at index 0 so nothing is written; the cleanup still walks len
  // entries of the 8-byte table (expect a wasm trap on affected builds)
  let askedFor0 = false;
  const keys = new Proxy({}, { get(t, k) { if (k === "length") return 0x20000001; if (k === "0") askedFor0 = true; return 0; } });
  const p = new Proxy({}, { ownKeys() { return keys; } });
  try { Object.keys(p); } catch (e) {
    return askedFor0 ? V("violation", "engine allocated a key table for 2^29+1 entries within a 64 MiB limit (32-bit size wrap) and began filling it: " + e.message)
                     : R(e);
  }
  return V("violation", "Object.keys succeeded on a 2^29+1-key trap result");
})()`,
  ),

  c(
    "string-huge-sizes",
    "String padStart/padEnd/repeat/concat sizes",
    "own probe",
    "huge string sizes must raise RangeError/OOM, not wrap in 32-bit size computations [related: 32-bit size arithmetic]",
    `
(() => {
  const res = [];
  const tries = [() => "ab".repeat(2 ** 29), () => "x".padEnd(2 ** 30 - 2, "yz"), () => "x".padStart(2 ** 31, "y"),
                 () => "\\u20ac".repeat(2 ** 28 + 1), () => ["a".repeat(1 << 20)].concat(Array(2000).fill("b".repeat(1 << 20))).join("")];
  for (const f of tries) {
    let s;
    try { s = f(); } catch (e) { res.push(e.name); continue; }
    if (typeof s !== "string" || s.length < 2 ** 20) return V("violation", "huge string op produced length " + (s && s.length));
    res.push("len " + s.length);
  }
  return res.every((x) => /Error/.test(x)) ? V("refused", res.join(", ")) : V("safe", res.join(", "));
})()`,
  ),

  c(
    "bigint-radix-roundtrip",
    "BigInt toString/parse",
    "bellard/quickjs 9ce5442 (2025-08-25); quickjs-ng/quickjs 1cd5e67 (2025-09-26)",
    "BigInt toString in radices whose digit straddles limbs read one limb past the end",
    `
(() => {
  let x = 1n;
  for (let i = 0; i < 200; i++) {
    x = x * 6364136223846793005n + 1442695040888963407n; x &= (1n << BigInt(64 + i * 7)) - 1n;
    for (const [r, pre] of [[8, "0o"], [2, "0b"], [16, "0x"]]) {
      let s;
      try { s = x.toString(r); } catch (e) { return R(e); }
      if (BigInt(pre + s) !== x) return V("violation", "radix " + r + " round trip failed at bit length " + x.toString(2).length);
    }
  }
  return V("safe", "round trips exact");
})()`,
  ),

  c(
    "bigint-parse-huge",
    "BigInt parse",
    "bellard/quickjs e1c18be (2025-08-25); quickjs-ng/quickjs 2f8616c (2025-09-26)",
    "BigInt() of a 4-million-digit string: limb count computed in int arithmetic",
    `
(() => {
  let b;
  try { b = BigInt("1".repeat(1 << 22)); } catch (e) { return R(e); }
  return b % 10n === 1n ? V("safe", "parsed") : V("violation", "wrong value");
})()`,
  ),

  c(
    "add-loc-toprimitive-reassign",
    "interpreter OP_add_loc",
    "bellard/quickjs 1168c21 (2025-08-25)",
    "s += obj where obj's toString reassigns s: in-place concat on a freed string",
    `
(() => {
  function f() { let s = "abc".repeat(40); const o = { toString() { s = 1; return "x".repeat(16); } }; s += o; return s; }
  let r;
  try { r = f(); for (let i = 0; i < 50; i++) f(); } catch (e) { return R(e); }
  return r === "abc".repeat(40) + "x".repeat(16) || r === "1" + "x".repeat(16) ? V("safe", "result length " + r.length) : V("violation", "concat produced " + JSON.stringify(String(r).slice(0, 40)));
})()`,
  ),

  c(
    "json-stringify-deep",
    "JSON.stringify nesting",
    "bellard/quickjs dfd9c93 (2025-03-13); quickjs-ng/quickjs 40c7971 (2025-03-13)",
    "deeply nested JSON.stringify must hit the stack check, not the wasm stack",
    `
(() => {
  let o = []; for (let i = 0; i < 200000; i++) o = [o];
  try { JSON.stringify(o); } catch (e) { return R(e); }
  return V("safe", "stringified");
})()`,
  ),

  c(
    "proxy-isarray-chain",
    "Proxy / Array.isArray",
    "bellard/quickjs 03cc5ec (2023-12-01, #178, CVE-2023-31922)",
    "Array.isArray on a long proxy chain must hit the stack check",
    `
(() => {
  let p = [];
  for (let i = 0; i < 200000; i++) p = new Proxy(p, {});
  try { Array.isArray(p); } catch (e) { return R(e); }
  return V("safe", "completed");
})()`,
  ),

  c(
    "json-parse-reviver-shrink",
    "JSON.parse reviver",
    "own probe",
    "reviver that truncates the holder array while it is being walked",
    `
(() => {
  let r;
  try { r = JSON.parse("[[1,2,3,4,5,6,7,8],[9,10]]", function (k, v) { if (Array.isArray(this) && this.length > 2) this.length = 1; return v; }); }
  catch (e) { return R(e); }
  churn(1);
  return V("safe", JSON.stringify(r));
})()`,
  ),

  c(
    "array-sort-comparator-shrink",
    "Array.prototype.sort",
    "own probe",
    "Array.prototype.sort comparator that empties and refills the array: no freed values may come back",
    `
(() => {
  const a = []; for (let i = 0; i < 200; i++) a.push({ v: i });
  let n = 0;
  try { a.sort((x, y) => { if (++n === 50) { a.length = 0; for (let i = 0; i < 300; i++) a.push({ other: i }); churn(2); } return (x.v || 0) - (y.v || 0); }); }
  catch (e) { return R(e); }
  for (const x of a) if (x !== undefined && typeof x !== "object") return V("violation", "sort left a non-object value: " + typeof x);
  return V("safe", "length " + a.length);
})()`,
  ),

  c(
    "array-search-fromIndex-shrink",
    "Array indexOf/lastIndexOf/includes fast path",
    "own probe",
    "fromIndex valueOf that truncates a fast array: search must not read freed slots",
    `
(() => {
  const needle = { needle: 1 };
  for (const m of ["indexOf", "lastIndexOf", "includes"]) {
    const a = []; for (let i = 0; i < 1000; i++) a.push(i === 900 ? needle : { i });
    let r;
    try { r = a[m](needle, { valueOf() { a.length = 10; churn(1); return m === "lastIndexOf" ? 999 : 0; } }); } catch (e) { return R(e); }
    if (r === true || r === 900) return V("violation", m + " found an element that had been removed (" + r + ")");
  }
  return V("safe", "removed elements not found");
})()`,
  ),

  c(
    "array-with-index-shrink",
    "Array.prototype.with / copy paths",
    "own probe",
    "Array.prototype.with / toSpliced / splice whose argument valueOf truncates the array",
    `
(() => {
  const mk = () => { const a = []; for (let i = 0; i < 500; i++) a.push({ i }); return a; };
  let a = mk(), r;
  try {
    r = a.with({ valueOf() { a.length = 1; churn(1); return 0; } }, "x");
    if (r.length !== 500 || r.slice(1).some((x) => x !== undefined && !(x && typeof x.i === "number"))) return V("violation", "with() copied freed values");
    a = mk(); r = a.toSpliced(0, { valueOf() { a.length = 1; churn(1); return 1; } });
    if (r.some((x) => x !== undefined && !(x && typeof x.i === "number"))) return V("violation", "toSpliced() copied freed values");
    a = mk(); r = a.splice(0, { valueOf() { a.length = 1; churn(1); return 400; } });
    if (r.some((x) => x !== undefined && !(x && typeof x.i === "number"))) return V("violation", "splice() returned freed values");
  } catch (e) { return R(e); }
  return V("safe", "no freed values copied");
})()`,
  ),

  c(
    "array-concat-spreadable-getter",
    "Array.prototype.concat / flat",
    "own probe",
    "Symbol.isConcatSpreadable getter that truncates an array already measured",
    `
(() => {
  const b = []; for (let i = 0; i < 300; i++) b.push({ i });
  const a = [1]; Object.defineProperty(a, Symbol.isConcatSpreadable, { get() { b.length = 1; churn(1); return true; } });
  let r;
  try { r = a.concat(b); } catch (e) { return R(e); }
  for (const x of r.slice(1)) if (x !== undefined && !(x && typeof x.i === "number")) return V("violation", "concat copied freed element");
  try { r = [b, [b, [b]]].flat(Infinity); } catch (e) { return R(e); }
  return V("safe", "concat length " + r.length);
})()`,
  ),

  c(
    "function-apply-arraylike-getter",
    "Function.prototype.apply / Reflect.apply",
    "own probe",
    "apply() with a fast array truncated by a getter of the target function's arguments",
    `
(() => {
  const a = []; for (let i = 0; i < 2000; i++) a.push({ i });
  let r;
  try {
    r = Reflect.apply(function () { let bad = 0; a.length = 0; churn(1); for (let i = 0; i < arguments.length; i++) if (!arguments[i] || typeof arguments[i].i !== "number") bad++; return bad; }, null, a);
  } catch (e) { return R(e); }
  return r ? V("violation", r + " arguments were freed while in use") : V("safe", "arguments intact");
})()`,
  ),

  // =====================================================================
  // 4. Host-stack exhaustion (QuickJS' stack limit is measured on the wasm shadow stack,
  //    but the recursion also consumes the host's native stack)
  // =====================================================================
  c(
    "host-stack-parser-nesting",
    "parser recursion / host stack",
    "own probe",
    "3000 nested parentheses: the parser overflows the host (V8) stack before QuickJS' own stack check fires [related: cf. bellard/quickjs 03cc5ec CVE-2023-31922 class]",
    `
(() => {
  try { (0, eval)("(".repeat(3000) + "1" + ")".repeat(3000)); } catch (e) { return R(e); }
  return V("safe", "parsed");
})()`,
  ),

  c(
    "host-stack-js-recursion",
    "interpreter recursion / host stack",
    "own probe",
    "plain JS recursion with a 1 MiB QuickJS stack limit overflows the host stack first",
    `
(() => {
  function rec(n) { return n ? rec(n - 1) + 1 : 0; }
  try { rec(1e6); } catch (e) { return R(e); }
  return V("safe", "completed");
})()`,
  ),

  c(
    "json-parse-deep",
    "JSON.parse nesting",
    "own probe",
    "JSON.parse of 100000 nested arrays must hit the stack check [related: JSON.stringify counterpart: bellard/quickjs dfd9c93]",
    `
(() => {
  try { JSON.parse("[".repeat(100000) + "]".repeat(100000)); } catch (e) { return R(e); }
  return V("safe", "parsed");
})()`,
  ),

  // =====================================================================
  // 5. More engine internals
  // =====================================================================
  c(
    "arguments-delete-last-push",
    "arguments object fast path (delete)",
    "quickjs-ng/quickjs 1b0b660 (2026-04-03, #1430; the removed special case also covered mapped arguments)",
    "delete the last mapped argument, then push onto arguments: the released var_ref is used again",
    `
(() => {
  function f(a, b, c) {
    delete arguments[2];
    Array.prototype.push.call(arguments, { p: 1 });
    churn(1);
    const spr = []; for (let i = 0; i < 2000; i++) spr.push({ q: i });
    return [typeof arguments[2], 2 in arguments, arguments.length, arguments[3] && arguments[3].p, typeof c];
  }
  let r;
  try { r = f({ x: 1 }, { y: 2 }, { z: 3 }); } catch (e) { return R(e); }
  return r[0] === "undefined" && r[1] === false && r[2] === 4 && r[3] === 1 ? V("safe", JSON.stringify(r)) : V("violation", "arguments state " + JSON.stringify(r));
})()`,
  ),

  c(
    "regexp-replace-crafted-exec",
    "RegExp.prototype[Symbol.replace]",
    "own probe",
    "user exec() returning out-of-range index, non-string captures and getter groups",
    `
(() => {
  const re = /x/g; let k = 0;
  re.exec = function () { if (k++ > 3) return null; return { index: [1e9, -5, 3, 2 ** 32 + 1][k - 1], 0: "xyz".repeat(k), length: 3, 1: "A",
    2: { toString() { return "B"; } }, groups: { get n() { return "N" + k; } } }; };
  let r;
  try { r = "abcdef".replace(re, "[$1$2$<n>$&$\`$']"); } catch (e) { return R(e); }
  return /^[abcdefxyzABN0-9\\[\\]]*$/.test(r) && r.length < 200 ? V("safe", JSON.stringify(r)) : V("violation", "replacement contains foreign data: " + JSON.stringify(r.slice(0, 80)));
})()`,
  ),

  c(
    "map-mutate-during-iteration",
    "Map/Set hash resize",
    "bellard/quickjs 4941398 (2025-03-22); quickjs-ng/quickjs 8dda2a0 (2025-04-04)",
    "delete/insert during Map iteration forces rehash while the iterator holds a record",
    `
(() => {
  const m = new Map(); for (let i = 0; i < 100; i++) m.set(i, { i });
  let n = 0;
  try { for (const [k, v] of m) { if (n++ > 1000) break; m.delete(k); m.set(k + 1000, { i: k }); if (n % 7 === 0) churn(1);
    if (!v || typeof v.i !== "number") return V("violation", "iterator yielded a freed record"); } } catch (e) { return R(e); }
  return V("safe", n + " steps");
})()`,
  ),

  c(
    "weakref-cycle-deref",
    "WeakRef/GC",
    "own probe",
    "WeakRef targets that die in a cycle: deref must give undefined or the intact object",
    `
(() => {
  const wrs = []; for (let i = 0; i < 100; i++) { const o = { i }; o.self = o; wrs.push(new WeakRef(o)); }
  churn(3);
  const spr = []; for (let i = 0; i < 3000; i++) spr.push({ i: "s" + i });
  for (const w of wrs) { const d = w.deref(); if (d !== undefined && (typeof d.i !== "number" || d.self !== d)) return V("violation", "deref returned a reused object"); }
  return V("safe", "deref consistent");
})()`,
  ),

  c(
    "error-preparestacktrace-reentrant",
    "Error.prepareStackTrace / captureStackTrace (ng)",
    "own probe",
    "prepareStackTrace that creates errors itself, keeps CallSites and captureStackTrace on exotic objects [related: cf. quickjs-ng/quickjs c846cb1, e1c1e41 (2026)]",
    `
(() => {
  let depth = 0, kept;
  try {
    Error.prepareStackTrace = function (e, cs) { kept = cs; if (depth++ < 3) new Error("inner").stack; return cs.map((c) => String(c.getFunctionName()) + ":" + c.getLineNumber()).join("|"); };
    const s = new Error("x").stack;
    Error.prepareStackTrace = undefined;
    churn(1);
    if (kept) for (const c of kept) String(c.getFunctionName()), c.getLineNumber(), c.isNative && c.isNative();
    if (Error.captureStackTrace) { Error.captureStackTrace(new Proxy({}, {})); try { Error.captureStackTrace(Object.freeze({})); } catch (e) {} }
  } catch (e) { return R(e); }
  return V("safe", "no crash");
})()`,
  ),

  c(
    "memory-limit-accounting",
    "runtime memory limit (resource limit, not corruption)",
    "own probe",
    "with JS_SetMemoryLimit(64 MiB) the script can still hold 128 MiB: only 8 bytes of overhead are counted per allocation [related: js_def_malloc_usable_size returns 0 under EMSCRIPTEN in bellard; js__malloc_usable_size likewise in ng]",
    `
(() => {
  const hog = [];
  try { for (let i = 0; i < 128; i++) hog.push(new ArrayBuffer(1 << 20)); } catch (e) { return R(e); }
  return V("violation", "allocated " + hog.length + " MiB of ArrayBuffer data under a 64 MiB runtime memory limit");
})()`,
  ),
];

/**
 * A probe as a sandbox script: its helpers, then `main`, which keeps a canary of the run's (params)
 * as strings, as a tenant's secret would be, and answers the probe's verdict.
 */
export function engineCaseScript(probe: EngineCase): string {
  return `// ${probe.id}: ${probe.title.replace(/\n/g, " ")}\n// upstream: ${probe.upstream}\n${HELPERS}\nasync function main(p) {\n  const keep = [];\n  for (let i = 0; i < 64; i++) keep.push(p.canary + i);\n  return await (${probe.body});\n}\n`;
}
