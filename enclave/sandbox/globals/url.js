// URL and URLSearchParams (sandbox.md, Globals), loaded on first use. URLs are parsed by the host.
(function installUrl(G, P, need, kit) {
  "use strict";
  const { apply, defineProperty, objectKeys, isArray, parse, stringify, String: StringCtor, fromCharCode, charCodeAt } = P;
  const { strSlice: sliceStr, strReplace: replaceStr, toLowerCase, strIndexOf: indexOfStr, strSplit: splitStr, reTest, isView } = P;
  const { mapGet, mapSet, Uint8Array: Uint8ArrayCtor, ArrayBuffer: ArrayBufferCtor, TypeError: TypeErrorCtor, RangeError: RangeErrorCtor, Error: ErrorCtor } = P;
  const iteratorSymbol = P.iterator;
  const str = (s, fn, args) => apply(fn, s, args);
  const namedError = (name, message) => {
    const e = new ErrorCtor(message);
    defineProperty(e, "name", { value: name, writable: true, enumerable: false, configurable: true });
    return e;
  };
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

  // The host parses with its WHATWG URL: one implementation, the same answers as everywhere else.
  const parseUrl = (input, base) => kit.syncCall("parseUrl", base === undefined ? { input: StringCtor(input) } : { input: StringCtor(input), base: StringCtor(base) });

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

  return { URL, URLSearchParams };
})
