// URL and URLSearchParams (docs/design/sandbox.md, Globals), loaded on first use. URLs are parsed by the host.
(function installUrl(G, P, need, kit) {
  "use strict";
  const {
    apply,
    objectKeys,
    String: StringCtor,
    strSlice: sliceStr,
    strIndexOf: indexOfStr,
    strSplit: splitStr,
    Uint8Array: Uint8ArrayCtor,
    TypeError: TypeErrorCtor,
  } = P;
  const iteratorSymbol = P.iterator;
  const { str } = kit;
  // ─── URLSearchParams and URL ─────────────────────────────────────────────────────────────
  // application/x-www-form-urlencoded as the URL standard has it: UTF-8 (a lone surrogate becomes
  // U+FFFD), everything but ASCII alphanumerics and *-._ percent-encoded, space as "+"; decoding
  // leaves a "%" not followed by two hex digits as it is and reads bad UTF-8 as U+FFFD. The native
  // encodeURIComponent/decodeURIComponent (captured) do most of it; string splits and joins, never
  // RegExps, adjust the rest.
  const text = need("text");
  const replaceAll = (s, from, to) =>
    str(s, indexOfStr, [from]) < 0 ? s : apply(P.arrayJoin, str(s, splitStr, [from]), [to]);
  /** A string as the URL standard takes one (a USVString): each lone surrogate becomes U+FFFD. */
  const usv = (v) => str(StringCtor(v), P.toWellFormed, []);
  const formEncode = (s) => {
    let out = P.encodeURIComponent(s);
    // encodeURIComponent leaves !'()~ as they are; the form encoding escapes them.
    out = replaceAll(out, "%20", "+");
    out = replaceAll(out, "!", "%21");
    out = replaceAll(out, "'", "%27");
    out = replaceAll(out, "(", "%28");
    out = replaceAll(out, ")", "%29");
    return replaceAll(out, "~", "%7E");
  };
  const hexValue = (b) =>
    b >= 0x30 && b <= 0x39 ? b - 0x30 : b >= 0x41 && b <= 0x46 ? b - 0x37 : b >= 0x61 && b <= 0x66 ? b - 0x57 : -1;
  const formDecode = (s) => {
    const spaced = replaceAll(usv(s), "+", " ");
    if (str(spaced, indexOfStr, ["%"]) < 0) return spaced;
    try {
      return P.decodeURIComponent(spaced);
    } catch {
      // A "%" without two hex digits, or escapes that are not UTF-8: byte by byte.
    }
    const bytes = text.utf8Encode(spaced);
    const out = new Uint8ArrayCtor(bytes.length);
    let n = 0;
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i];
      if (b === 0x25 && i + 2 < bytes.length && hexValue(bytes[i + 1]) >= 0 && hexValue(bytes[i + 2]) >= 0) {
        out[n++] = hexValue(bytes[i + 1]) * 16 + hexValue(bytes[i + 2]);
        i += 2;
      } else out[n++] = b;
    }
    return text.utf8Decode(new Uint8ArrayCtor(out.buffer, 0, n), false);
  };

  class URLSearchParams {
    #list = [];
    #onChange;
    constructor(init, onChange) {
      this.#onChange = typeof onChange === "function" ? onChange : undefined;
      if (init === undefined) return;
      // null is not a record: it is read as the string "null", as in the URL standard.
      if (init !== null && typeof init === "object" && typeof init[iteratorSymbol] === "function") {
        for (const pair of init) {
          if (pair.length !== 2) throw new TypeErrorCtor("Each query pair must be an iterable [name, value] tuple");
          this.#list[this.#list.length] = [usv(pair[0]), usv(pair[1])];
        }
      } else if (init !== null && typeof init === "object") {
        const keys = objectKeys(init);
        for (let i = 0; i < keys.length; i++) this.#list[this.#list.length] = [usv(keys[i]), usv(init[keys[i]])];
      } else {
        this._parse(StringCtor(init));
      }
    }
    _parse(text) {
      this.#list = [];
      const s = text[0] === "?" ? str(text, sliceStr, [1]) : text;
      if (s === "") return;
      const parts = str(s, splitStr, ["&"]);
      for (let i = 0; i < parts.length; i++) {
        const part = parts[i];
        if (part === "") continue;
        const eq = str(part, indexOfStr, ["="]);
        const name = eq < 0 ? part : str(part, sliceStr, [0, eq]);
        const value = eq < 0 ? "" : str(part, sliceStr, [eq + 1]);
        this.#list[this.#list.length] = [formDecode(name), formDecode(value)];
      }
    }
    #changed() {
      if (this.#onChange) this.#onChange(this.toString());
    }
    get size() {
      return this.#list.length;
    }
    append(name, value) {
      this.#list[this.#list.length] = [usv(name), usv(value)];
      this.#changed();
    }
    delete(name, value) {
      const n = usv(name);
      const kept = [];
      const l = this.#list;
      for (let i = 0; i < l.length; i++)
        if (!(l[i][0] === n && (value === undefined || l[i][1] === usv(value)))) kept[kept.length] = l[i];
      this.#list = kept;
      this.#changed();
    }
    get(name) {
      const n = usv(name);
      const l = this.#list;
      for (let i = 0; i < l.length; i++) if (l[i][0] === n) return l[i][1];
      return null;
    }
    getAll(name) {
      const n = usv(name);
      const l = this.#list;
      const out = [];
      for (let i = 0; i < l.length; i++) if (l[i][0] === n) out[out.length] = l[i][1];
      return out;
    }
    has(name, value) {
      const n = usv(name);
      const l = this.#list;
      for (let i = 0; i < l.length; i++)
        if (l[i][0] === n && (value === undefined || l[i][1] === usv(value))) return true;
      return false;
    }
    set(name, value) {
      const n = usv(name);
      const kept = [];
      let done = false;
      const l = this.#list;
      for (let i = 0; i < l.length; i++) {
        const p = l[i];
        if (p[0] !== n) kept[kept.length] = p;
        else if (!done) {
          kept[kept.length] = [n, usv(value)];
          done = true;
        }
      }
      if (!done) kept[kept.length] = [n, usv(value)];
      this.#list = kept;
      this.#changed();
    }
    sort() {
      const l = this.#list;
      for (let i = 1; i < l.length; i++) {
        const x = l[i];
        let j = i - 1;
        while (j >= 0 && l[j][0] > x[0]) {
          l[j + 1] = l[j];
          j--;
        }
        l[j + 1] = x;
      }
      this.#changed();
    }
    // Indexed loops throughout: `for…of` would use the script's Array.prototype[Symbol.iterator].
    forEach(fn, thisArg) {
      const l = this.#list;
      for (let i = 0; i < l.length; i++) apply(fn, thisArg, [l[i][1], l[i][0], this]);
    }
    *entries() {
      const l = this.#list;
      for (let i = 0; i < l.length; i++) yield [l[i][0], l[i][1]];
    }
    *keys() {
      const l = this.#list;
      for (let i = 0; i < l.length; i++) yield l[i][0];
    }
    *values() {
      const l = this.#list;
      for (let i = 0; i < l.length; i++) yield l[i][1];
    }
    [iteratorSymbol]() {
      return this.entries();
    }
    toString() {
      let out = "";
      const l = this.#list;
      for (let i = 0; i < l.length; i++) out += (i > 0 ? "&" : "") + formEncode(l[i][0]) + "=" + formEncode(l[i][1]);
      return out;
    }
  }

  // The host parses with its WHATWG URL: one implementation, the same answers as everywhere else.
  const parseUrl = (input, base) =>
    kit.syncCall(
      "parseUrl",
      base === undefined ? { input: StringCtor(input) } : { input: StringCtor(input), base: StringCtor(base) },
    );

  class URL {
    #parts;
    #params;
    constructor(input, base) {
      const parts = parseUrl(input, base === undefined ? undefined : StringCtor(base));
      if (parts === null) throw new TypeErrorCtor(`Invalid URL: ${StringCtor(input)}`);
      this.#parts = parts;
    }
    static canParse(input, base) {
      return parseUrl(input, base === undefined ? undefined : StringCtor(base)) !== null;
    }
    #set(href) {
      const parts = parseUrl(href);
      if (parts === null) throw new TypeErrorCtor(`Invalid URL: ${href}`);
      this.#parts = parts;
      if (this.#params) this.#params._parse(parts.search);
    }
    get href() {
      return this.#parts.href;
    }
    set href(v) {
      this.#set(StringCtor(v));
    }
    get protocol() {
      return this.#parts.protocol;
    }
    get username() {
      return this.#parts.username;
    }
    get password() {
      return this.#parts.password;
    }
    get host() {
      return this.#parts.host;
    }
    get hostname() {
      return this.#parts.hostname;
    }
    get port() {
      return this.#parts.port;
    }
    get pathname() {
      return this.#parts.pathname;
    }
    set pathname(v) {
      const p = this.#parts;
      this.#set(
        `${p.protocol}//${p.username ? `${p.username}${p.password ? `:${p.password}` : ""}@` : ""}${p.host}${StringCtor(v)[0] === "/" ? "" : "/"}${StringCtor(v)}${p.search}${p.hash}`,
      );
    }
    get search() {
      return this.#parts.search;
    }
    set search(v) {
      const s = StringCtor(v);
      const p = this.#parts;
      const h = p.href;
      const base = str(h, sliceStr, [0, h.length - p.hash.length - p.search.length]);
      this.#set(`${base}${s === "" || s[0] === "?" ? s : `?${s}`}${p.hash}`);
    }
    get hash() {
      return this.#parts.hash;
    }
    set hash(v) {
      const s = StringCtor(v);
      const p = this.#parts;
      const h = p.href;
      this.#set(`${str(h, sliceStr, [0, h.length - p.hash.length])}${s === "" || s[0] === "#" ? s : `#${s}`}`);
    }
    get origin() {
      return this.#parts.origin;
    }
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
    toString() {
      return this.#parts.href;
    }
    toJSON() {
      return this.#parts.href;
    }
  }

  return { URL, URLSearchParams };
});
