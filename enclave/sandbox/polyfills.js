// Evaluated inside QuickJS before every script: the Web globals QuickJS lacks (sandbox.md,
// Globals) — TextEncoder/TextDecoder, atob/btoa, URL/URLSearchParams (parsed by the host's WHATWG
// URL), crypto.getRandomValues/randomUUID (host CSPRNG), structuredClone — and the formatter
// console uses (like Node's util.inspect at depth 2, on one line). Built-ins are captured at install
// time so that a script tampering with prototypes cannot break these.
// hooks.parseUrl(input, base?) -> JSON text of {href, protocol, …} or "null"; hooks.randomBytes(n) -> hex.
(function installPolyfills(G, hooks) {
  "use strict";
  const apply = Reflect.apply;
  const defineProperty = Object.defineProperty;
  const ownKeys = Reflect.ownKeys;
  const objectKeys = Object.keys;
  const getPrototypeOf = Object.getPrototypeOf;
  const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  const isArray = Array.isArray;
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  const StringCtor = String;
  const fromCharCode = String.fromCharCode;
  const charCodeAt = String.prototype.charCodeAt;
  const codePointAt = String.prototype.codePointAt;
  const sliceStr = String.prototype.slice;
  const replaceStr = String.prototype.replace;
  const toLowerCase = String.prototype.toLowerCase;
  const indexOfStr = String.prototype.indexOf;
  const splitStr = String.prototype.split;
  const objToString = Object.prototype.toString;
  const fnToString = Function.prototype.toString;
  const reTest = RegExp.prototype.test;
  const isView = ArrayBuffer.isView;
  const abSlice = ArrayBuffer.prototype.slice;
  const dateToISOString = Date.prototype.toISOString;
  const dateGetTime = Date.prototype.getTime;
  const errToString = Error.prototype.toString;
  const mapGet = Map.prototype.get;
  const mapSet = Map.prototype.set;
  const mapHas = Map.prototype.has;
  const mapEntries = Map.prototype.entries;
  const setValues = Set.prototype.values;
  const setAdd = Set.prototype.add;
  const mapSize = getOwnPropertyDescriptor(Map.prototype, "size").get;
  const setSize = getOwnPropertyDescriptor(Set.prototype, "size").get;
  const typedArrayProto = getPrototypeOf(Uint8Array.prototype);
  const taLength = getOwnPropertyDescriptor(typedArrayProto, "length").get;
  const taTag = getOwnPropertyDescriptor(typedArrayProto, Symbol.toStringTag).get;
  const symbolToString = Symbol.prototype.toString;
  const MapCtor = Map;
  const SetCtor = Set;
  const Uint8ArrayCtor = Uint8Array;
  const ArrayBufferCtor = ArrayBuffer;
  const DateCtor = Date;
  const RegExpCtor = RegExp;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const RangeErrorCtor = RangeError;
  const iteratorSymbol = Symbol.iterator;

  const arrayJoin = Array.prototype.join;
  const str = (s, fn, args) => apply(fn, s, args);
  const join = (items) => apply(arrayJoin, items, [", "]);
  const tag = (v) => apply(objToString, v, []);
  const define = (obj, name, value) => defineProperty(obj, name, { value, writable: true, enumerable: false, configurable: true });
  const namedError = (name, message) => {
    const e = new ErrorCtor(message);
    define(e, "name", name);
    return e;
  };

  // ─── UTF-8 ───────────────────────────────────────────────────────────────────────────────
  function utf8Encode(input) {
    const s = StringCtor(input);
    const out = [];
    for (let i = 0; i < s.length; i++) {
      let c = str(s, charCodeAt, [i]);
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
        const d = str(s, charCodeAt, [i + 1]);
        if (d >= 0xdc00 && d <= 0xdfff) {
          c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
          i++;
        } else c = 0xfffd;
      } else if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
      if (c < 0x80) out[out.length] = c;
      else if (c < 0x800) { out[out.length] = 0xc0 | (c >> 6); out[out.length] = 0x80 | (c & 63); }
      else if (c < 0x10000) { out[out.length] = 0xe0 | (c >> 12); out[out.length] = 0x80 | ((c >> 6) & 63); out[out.length] = 0x80 | (c & 63); }
      else { out[out.length] = 0xf0 | (c >> 18); out[out.length] = 0x80 | ((c >> 12) & 63); out[out.length] = 0x80 | ((c >> 6) & 63); out[out.length] = 0x80 | (c & 63); }
    }
    return new Uint8ArrayCtor(out);
  }

  function utf8Decode(bytes, fatal) {
    let out = "";
    let chunk = [];
    const flush = () => { if (chunk.length) { out += apply(fromCharCode, undefined, chunk); chunk = []; } };
    const push = (cp) => {
      if (cp > 0xffff) { cp -= 0x10000; chunk[chunk.length] = 0xd800 + (cp >> 10); chunk[chunk.length] = 0xdc00 + (cp & 0x3ff); }
      else chunk[chunk.length] = cp;
      if (chunk.length > 8000) flush();
    };
    const bad = () => { if (fatal) throw new TypeErrorCtor("The encoded data was not valid utf-8"); push(0xfffd); };
    for (let i = 0; i < bytes.length; ) {
      const b = bytes[i];
      let need = 0, cp = 0, min = 0;
      if (b < 0x80) { push(b); i++; continue; }
      else if (b >= 0xc2 && b <= 0xdf) { need = 1; cp = b & 0x1f; min = 0x80; }
      else if (b >= 0xe0 && b <= 0xef) { need = 2; cp = b & 0x0f; min = 0x800; }
      else if (b >= 0xf0 && b <= 0xf4) { need = 3; cp = b & 0x07; min = 0x10000; }
      else { bad(); i++; continue; }
      let j = 1;
      for (; j <= need; j++) {
        const n = bytes[i + j];
        if (n === undefined || (n & 0xc0) !== 0x80) break;
        cp = (cp << 6) | (n & 0x3f);
      }
      if (j <= need || cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) { bad(); i += j > 1 ? j : 1; continue; }
      push(cp);
      i += need + 1;
    }
    flush();
    return out;
  }

  function toBytes(input) {
    if (input === undefined) return new Uint8ArrayCtor(0);
    if (input instanceof ArrayBufferCtor) return new Uint8ArrayCtor(input);
    if (isView(input)) return new Uint8ArrayCtor(input.buffer, input.byteOffset, input.byteLength);
    throw new TypeErrorCtor("The provided value is not an ArrayBuffer or ArrayBufferView");
  }

  class TextEncoder {
    get encoding() { return "utf-8"; }
    encode(input = "") { return utf8Encode(input); }
    encodeInto(source, destination) {
      const bytes = utf8Encode(source);
      const n = bytes.length < destination.length ? bytes.length : destination.length;
      for (let i = 0; i < n; i++) destination[i] = bytes[i];
      return { read: StringCtor(source).length, written: n };
    }
  }

  class TextDecoder {
    #fatal;
    #ignoreBOM;
    constructor(label = "utf-8", options = {}) {
      const l = str(StringCtor(label), toLowerCase, []);
      if (l !== "utf-8" && l !== "utf8" && l !== "unicode-1-1-utf-8") throw new RangeErrorCtor(`The encoding "${label}" is not supported`);
      this.#fatal = !!(options && options.fatal);
      this.#ignoreBOM = !!(options && options.ignoreBOM);
    }
    get encoding() { return "utf-8"; }
    get fatal() { return this.#fatal; }
    get ignoreBOM() { return this.#ignoreBOM; }
    decode(input) {
      let bytes = toBytes(input);
      if (!this.#ignoreBOM && bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3);
      return utf8Decode(bytes, this.#fatal);
    }
  }

  // ─── base64 ──────────────────────────────────────────────────────────────────────────────
  const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const B64_INDEX = new MapCtor();
  for (let i = 0; i < 64; i++) apply(mapSet, B64_INDEX, [B64[i], i]);

  function btoa(input) {
    const s = StringCtor(input);
    let out = "";
    for (let i = 0; i < s.length; i += 3) {
      const a = str(s, charCodeAt, [i]);
      const b = i + 1 < s.length ? str(s, charCodeAt, [i + 1]) : 0;
      const c = i + 2 < s.length ? str(s, charCodeAt, [i + 2]) : 0;
      if (a > 255 || b > 255 || c > 255) throw namedError("InvalidCharacterError", "Invalid character: the string contains characters outside of the Latin1 range");
      out += B64[a >> 2] + B64[((a & 3) << 4) | (b >> 4)] + (i + 1 < s.length ? B64[((b & 15) << 2) | (c >> 6)] : "=") + (i + 2 < s.length ? B64[c & 63] : "=");
    }
    return out;
  }

  function atob(input) {
    let s = str(StringCtor(input), replaceStr, [/[\t\n\f\r ]/g, ""]);
    if (s.length % 4 === 0) s = str(s, replaceStr, [/==?$/, ""]);
    if (s.length % 4 === 1 || !apply(reTest, /^[A-Za-z0-9+/]*$/, [s])) throw namedError("InvalidCharacterError", "The string to be decoded is not correctly encoded");
    let out = "";
    let buffer = 0, bits = 0;
    for (let i = 0; i < s.length; i++) {
      buffer = (buffer << 6) | apply(mapGet, B64_INDEX, [s[i]]);
      bits += 6;
      if (bits >= 8) { bits -= 8; out += fromCharCode((buffer >> bits) & 255); }
    }
    return out;
  }

  // ─── URLSearchParams and URL ─────────────────────────────────────────────────────────────
  const formEncode = (s) =>
    str(encodeURIComponent(s), replaceStr, [/%20/g, "+"]);
  const formDecode = (s) => {
    try { return decodeURIComponent(str(s, replaceStr, [/\+/g, " "])); } catch { return s; }
  };

  class URLSearchParams {
    #list = [];
    #onChange;
    constructor(init, onChange) {
      this.#onChange = typeof onChange === "function" ? onChange : undefined;
      if (init === undefined || init === null) return;
      if (typeof init === "object" && typeof init[iteratorSymbol] === "function") {
        for (const pair of init) {
          if (pair.length !== 2) throw new TypeErrorCtor("Each query pair must be an iterable [name, value] tuple");
          this.#list[this.#list.length] = [StringCtor(pair[0]), StringCtor(pair[1])];
        }
      } else if (typeof init === "object") {
        for (const k of objectKeys(init)) this.#list[this.#list.length] = [k, StringCtor(init[k])];
      } else {
        this._parse(StringCtor(init));
      }
    }
    _parse(text) {
      this.#list = [];
      const s = text[0] === "?" ? str(text, sliceStr, [1]) : text;
      if (s === "") return;
      for (const part of str(s, splitStr, ["&"])) {
        if (part === "") continue;
        const eq = str(part, indexOfStr, ["="]);
        const name = eq < 0 ? part : str(part, sliceStr, [0, eq]);
        const value = eq < 0 ? "" : str(part, sliceStr, [eq + 1]);
        this.#list[this.#list.length] = [formDecode(name), formDecode(value)];
      }
    }
    #changed() { if (this.#onChange) this.#onChange(this.toString()); }
    get size() { return this.#list.length; }
    append(name, value) { this.#list[this.#list.length] = [StringCtor(name), StringCtor(value)]; this.#changed(); }
    delete(name, value) {
      const n = StringCtor(name);
      const kept = [];
      for (const p of this.#list) if (!(p[0] === n && (value === undefined || p[1] === StringCtor(value)))) kept[kept.length] = p;
      this.#list = kept;
      this.#changed();
    }
    get(name) { const n = StringCtor(name); for (const p of this.#list) if (p[0] === n) return p[1]; return null; }
    getAll(name) { const n = StringCtor(name); const out = []; for (const p of this.#list) if (p[0] === n) out[out.length] = p[1]; return out; }
    has(name, value) { const n = StringCtor(name); for (const p of this.#list) if (p[0] === n && (value === undefined || p[1] === StringCtor(value))) return true; return false; }
    set(name, value) {
      const n = StringCtor(name);
      const kept = [];
      let done = false;
      for (const p of this.#list) {
        if (p[0] !== n) kept[kept.length] = p;
        else if (!done) { kept[kept.length] = [n, StringCtor(value)]; done = true; }
      }
      if (!done) kept[kept.length] = [n, StringCtor(value)];
      this.#list = kept;
      this.#changed();
    }
    sort() {
      const l = this.#list;
      for (let i = 1; i < l.length; i++) { const x = l[i]; let j = i - 1; while (j >= 0 && l[j][0] > x[0]) { l[j + 1] = l[j]; j--; } l[j + 1] = x; }
      this.#changed();
    }
    forEach(fn, thisArg) { for (const p of this.#list) apply(fn, thisArg, [p[1], p[0], this]); }
    *entries() { for (const p of this.#list) yield [p[0], p[1]]; }
    *keys() { for (const p of this.#list) yield p[0]; }
    *values() { for (const p of this.#list) yield p[1]; }
    [iteratorSymbol]() { return this.entries(); }
    toString() {
      let out = "";
      for (const p of this.#list) out += (out ? "&" : "") + formEncode(p[0]) + "=" + formEncode(p[1]);
      return out;
    }
  }

  const parseUrl = (input, base) => parse(apply(hooks.parseUrl, undefined, base === undefined ? [StringCtor(input)] : [StringCtor(input), StringCtor(base)]));

  class URL {
    #parts;
    #params;
    constructor(input, base) {
      const parts = parseUrl(input, base === undefined ? undefined : StringCtor(base));
      if (parts === null) throw new TypeErrorCtor(`Invalid URL: ${StringCtor(input)}`);
      this.#parts = parts;
    }
    static canParse(input, base) { return parseUrl(input, base === undefined ? undefined : StringCtor(base)) !== null; }
    #set(href) {
      const parts = parseUrl(href);
      if (parts === null) throw new TypeErrorCtor(`Invalid URL: ${href}`);
      this.#parts = parts;
      if (this.#params) this.#params._parse(parts.search);
    }
    get href() { return this.#parts.href; }
    set href(v) { this.#set(StringCtor(v)); }
    get protocol() { return this.#parts.protocol; }
    get username() { return this.#parts.username; }
    get password() { return this.#parts.password; }
    get host() { return this.#parts.host; }
    get hostname() { return this.#parts.hostname; }
    get port() { return this.#parts.port; }
    get pathname() { return this.#parts.pathname; }
    set pathname(v) { const p = this.#parts; this.#set(`${p.protocol}//${p.username ? `${p.username}${p.password ? `:${p.password}` : ""}@` : ""}${p.host}${StringCtor(v)[0] === "/" ? "" : "/"}${StringCtor(v)}${p.search}${p.hash}`); }
    get search() { return this.#parts.search; }
    set search(v) { const s = StringCtor(v); const p = this.#parts; const h = p.href; const base = str(h, sliceStr, [0, h.length - p.hash.length - p.search.length]); this.#set(`${base}${s === "" || s[0] === "?" ? s : `?${s}`}${p.hash}`); }
    get hash() { return this.#parts.hash; }
    set hash(v) { const s = StringCtor(v); const p = this.#parts; const h = p.href; this.#set(`${str(h, sliceStr, [0, h.length - p.hash.length])}${s === "" || s[0] === "#" ? s : `#${s}`}`); }
    get origin() { return this.#parts.origin; }
    get searchParams() {
      if (!this.#params) {
        this.#params = new URLSearchParams(this.#parts.search, (query) => {
          const p = this.#parts;
          const h = p.href;
          const base = str(h, sliceStr, [0, h.length - p.hash.length - p.search.length]);
          const parts = parseUrl(`${base}${query ? `?${query}` : ""}${p.hash}`);
          if (parts !== null) this.#parts = parts;
        });
      }
      return this.#params;
    }
    toString() { return this.#parts.href; }
    toJSON() { return this.#parts.href; }
  }

  // ─── crypto ──────────────────────────────────────────────────────────────────────────────
  function hexToBytesInto(hex, target) {
    for (let i = 0; i < target.length; i++) target[i] = parseInt(str(hex, sliceStr, [i * 2, i * 2 + 2]), 16);
  }
  const cryptoObject = {
    getRandomValues(array) {
      if (!isView(array) || array instanceof DataView || /Float|Big/.test(apply(taTag, array, []) || "")) {
        if (!(isView(array) && /BigInt/.test(apply(taTag, array, []) || ""))) throw namedError("TypeMismatchError", "getRandomValues needs an integer typed array");
      }
      if (array.byteLength > 65536) throw namedError("QuotaExceededError", `getRandomValues: ${array.byteLength} bytes requested, at most 65536 allowed`);
      const bytes = new Uint8ArrayCtor(array.buffer, array.byteOffset, array.byteLength);
      hexToBytesInto(apply(hooks.randomBytes, undefined, [array.byteLength]), bytes);
      return array;
    },
    randomUUID() {
      const b = new Uint8ArrayCtor(16);
      hexToBytesInto(apply(hooks.randomBytes, undefined, [16]), b);
      b[6] = (b[6] & 0x0f) | 0x40;
      b[8] = (b[8] & 0x3f) | 0x80;
      let h = "";
      for (let i = 0; i < 16; i++) { h += (b[i] < 16 ? "0" : "") + b[i].toString(16); if (i === 3 || i === 5 || i === 7 || i === 9) h += "-"; }
      return h;
    },
  };

  // ─── structuredClone ─────────────────────────────────────────────────────────────────────
  function structuredClone(value) {
    const seen = new MapCtor();
    const clone = (v) => {
      if (typeof v === "symbol" || typeof v === "function") throw namedError("DataCloneError", `${typeof v === "symbol" ? "Symbol()" : "function"} could not be cloned`);
      if (v === null || typeof v !== "object") return v;
      if (apply(mapHas, seen, [v])) return apply(mapGet, seen, [v]);
      const t = tag(v);
      let out;
      if (isArray(v)) {
        out = [];
        apply(mapSet, seen, [v, out]);
        for (let i = 0; i < v.length; i++) if (i in v) out[i] = clone(v[i]);
        return out;
      }
      switch (t) {
        case "[object Date]": out = new DateCtor(apply(dateGetTime, v, [])); break;
        case "[object RegExp]": out = new RegExpCtor(v.source, v.flags); break;
        case "[object ArrayBuffer]": out = apply(abSlice, v, [0]); break;
        case "[object Map]": {
          out = new MapCtor();
          apply(mapSet, seen, [v, out]);
          for (const [k, x] of apply(mapEntries, v, [])) apply(mapSet, out, [clone(k), clone(x)]);
          return out;
        }
        case "[object Set]": {
          out = new SetCtor();
          apply(mapSet, seen, [v, out]);
          for (const x of apply(setValues, v, [])) apply(setAdd, out, [clone(x)]);
          return out;
        }
        case "[object Error]": { const E = { TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError }[v.name] || ErrorCtor; out = new E(v.message); break; }
        case "[object Boolean]": case "[object Number]": case "[object String]": case "[object BigInt]": out = Object(v.valueOf()); break;
        case "[object DataView]": { const buf = clone(v.buffer); out = new DataView(buf, v.byteOffset, v.byteLength); break; }
        case "[object Object]": {
          out = {};
          apply(mapSet, seen, [v, out]);
          for (const k of objectKeys(v)) out[k] = clone(v[k]);
          return out;
        }
        default:
          if (isView(v)) { const buf = clone(v.buffer); const C = v.constructor; out = new C(buf, v.byteOffset, apply(taLength, v, [])); break; }
          throw namedError("DataCloneError", `${t} could not be cloned`);
      }
      apply(mapSet, seen, [v, out]);
      return out;
    };
    return clone(value);
  }

  // ─── inspect (console formatting) ────────────────────────────────────────────────────────
  const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
  function quote(s) {
    const escaped = str(str(str(s, replaceStr, [/\\/g, "\\\\"]), replaceStr, [/\n/g, "\\n"]), replaceStr, [/'/g, "\\'"]);
    return `'${escaped}'`;
  }

  function inspect(value, options) {
    const maxDepth = options && typeof options.depth === "number" ? options.depth : 2;
    const seen = [];
    const circular = new MapCtor();
    const fmt = (v, depth) => {
      try {
        switch (typeof v) {
          case "string": return depth === 0 ? v : quote(v);
          case "number": return v === 0 && 1 / v < 0 ? "-0" : StringCtor(v);
          case "bigint": return `${StringCtor(v)}n`;
          case "boolean": case "undefined": return StringCtor(v);
          case "symbol": return apply(symbolToString, v, []);
          case "function": {
            const src = apply(fnToString, v, []);
            if (apply(reTest, /^class[\s{]/, [src])) return `[class ${v.name || "(anonymous)"}]`;
            return v.name ? `[Function: ${v.name}]` : "[Function (anonymous)]";
          }
        }
        if (v === null) return "null";
        for (let i = 0; i < seen.length; i++) {
          if (seen[i] === v) {
            if (!apply(mapHas, circular, [v])) apply(mapSet, circular, [v, apply(mapSize, circular, []) + 1]);
            return `[Circular *${apply(mapGet, circular, [v])}]`;
          }
        }
        const t = tag(v);
        if (t === "[object Date]") { const time = apply(dateGetTime, v, []); return time === time ? apply(dateToISOString, v, []) : "Invalid Date"; }
        if (t === "[object RegExp]") return `/${v.source}/${v.flags}`;
        if (t === "[object Error]") { const s = v.stack; const head = apply(errToString, v, []); return typeof s === "string" && s ? str(`${head}\n${s}`, replaceStr, [/\n$/, ""]) : `[${head}]`; }
        if (depth > maxDepth) return isArray(v) ? "[Array]" : "[Object]";
        seen[seen.length] = v;
        let body;
        if (isArray(v)) {
          const items = [];
          const n = v.length > 100 ? 100 : v.length;
          for (let i = 0; i < n; i++) items[items.length] = i in v ? fmt(v[i], depth + 1) : "<1 empty item>";
          if (v.length > 100) items[items.length] = `... ${v.length - 100} more items`;
          for (const k of objectKeys(v)) if (!apply(reTest, /^\d+$/, [k])) items[items.length] = `${apply(reTest, IDENT, [k]) ? k : quote(k)}: ${fmt(v[k], depth + 1)}`;
          body = items.length ? `[ ${join(items)} ]` : "[]";
        } else if (t === "[object Map]") {
          const items = [];
          for (const [k, x] of apply(mapEntries, v, [])) items[items.length] = `${fmt(k, depth + 1)} => ${fmt(x, depth + 1)}`;
          body = `Map(${apply(mapSize, v, [])}) ${items.length ? `{ ${join(items)} }` : "{}"}`;
        } else if (t === "[object Set]") {
          const items = [];
          for (const x of apply(setValues, v, [])) items[items.length] = fmt(x, depth + 1);
          body = `Set(${apply(setSize, v, [])}) ${items.length ? `{ ${join(items)} }` : "{}"}`;
        } else if (isView(v) && !(v instanceof DataView)) {
          const len = apply(taLength, v, []);
          const items = [];
          for (let i = 0; i < len && i < 100; i++) items[items.length] = fmt(v[i], depth + 1);
          if (len > 100) items[items.length] = `... ${len - 100} more items`;
          body = `${apply(taTag, v, [])}(${len}) ${items.length ? `[ ${join(items)} ]` : "[]"}`;
        } else if (t === "[object ArrayBuffer]") {
          body = `ArrayBuffer { byteLength: ${v.byteLength} }`;
        } else if (t === "[object Promise]") {
          body = "Promise { <unknown> }";
        } else {
          const items = [];
          for (const k of ownKeys(v)) {
            const d = getOwnPropertyDescriptor(v, k);
            if (!d || !d.enumerable) continue;
            const name = typeof k === "symbol" ? `[${apply(symbolToString, k, [])}]` : apply(reTest, IDENT, [k]) ? k : quote(k);
            const shown = d.get ? (d.set ? "[Getter/Setter]" : "[Getter]") : d.set ? "[Setter]" : fmt(d.value, depth + 1);
            items[items.length] = `${name}: ${shown}`;
          }
          const proto = getPrototypeOf(v);
          const ctor = proto && proto !== Object.prototype && typeof proto.constructor === "function" ? proto.constructor.name : "";
          const prefix = proto === null ? "[Object: null prototype] " : ctor && ctor !== "Object" ? `${ctor} ` : "";
          body = `${prefix}${items.length ? `{ ${join(items)} }` : "{}"}`;
        }
        seen.length--;
        const ref = apply(mapGet, circular, [v]);
        return ref ? `<ref *${ref}> ${body}` : body;
      } catch {
        return "[object]";
      }
    };
    return fmt(value, 0);
  }

  function formatLogLine(args) {
    if (args.length === 0) return "";
    let first = args[0];
    let rest = 1;
    let out;
    if (typeof first === "string" && str(first, indexOfStr, ["%"]) >= 0) {
      out = str(first, replaceStr, [/%[sdifjoOc%]/g, (m) => {
        if (m === "%%") return "%";
        if (rest >= args.length) return m;
        const a = args[rest++];
        switch (m) {
          case "%s": return typeof a === "string" ? a : typeof a === "bigint" ? `${a}n` : typeof a === "object" && a !== null ? inspect(a, { depth: 1 }) : StringCtor(a);
          case "%d": case "%i": return typeof a === "bigint" ? `${a}n` : typeof a === "symbol" ? "NaN" : StringCtor(m === "%i" ? parseInt(a) : Number(a));
          case "%f": return typeof a === "symbol" ? "NaN" : StringCtor(parseFloat(a));
          case "%j": try { return stringify(a); } catch { return "[Circular]"; }
          case "%o": case "%O": return inspect(a, { depth: m === "%o" ? 4 : 2 });
          case "%c": return "";
        }
        return m;
      }]);
    } else {
      out = typeof first === "string" ? first : inspect(first);
    }
    for (let i = rest; i < args.length; i++) out += " " + (typeof args[i] === "string" ? args[i] : inspect(args[i]));
    return out;
  }

  define(G, "TextEncoder", TextEncoder);
  define(G, "TextDecoder", TextDecoder);
  define(G, "atob", atob);
  define(G, "btoa", btoa);
  define(G, "URL", URL);
  define(G, "URLSearchParams", URLSearchParams);
  define(G, "crypto", cryptoObject);
  define(G, "structuredClone", structuredClone);
  if (typeof G.queueMicrotask !== "function") {
    define(G, "queueMicrotask", (fn) => { Promise.resolve().then(() => fn()); });
  }
  return { inspect, formatLogLine };
})
