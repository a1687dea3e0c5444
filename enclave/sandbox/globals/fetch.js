// fetch, Headers and Response (docs/design/sandbox.md, Limits), loaded on first use. The host performs every
// request under its network rules (no private addresses, checked after DNS and on every redirect)
// and counts it against the run's limits.
(function installFetch(G, P, need, kit) {
  "use strict";
  const { apply, objectKeys, isArray, parse, String: StringCtor, isView, mapGet, mapSet, mapDelete } = P;
  const { Uint8Array: Uint8ArrayCtor, ArrayBuffer: ArrayBufferCtor, TypeError: TypeErrorCtor } = P;
  const { asyncCall } = kit;
  const text = need("text");
  const btoaFn = text.btoa;
  const encoder = new text.TextEncoder();
  const decoder = new text.TextDecoder();
  const encode = text.TextEncoder.prototype.encode;
  const decode = text.TextDecoder.prototype.decode;
  function requireObject(value, fn) {
    if (value === null || typeof value !== "object") throw new TypeErrorCtor(`${fn} expects an object argument`);
    return value;
  }
  // ─── fetch (performed by the host with its network rules and counters) ──────────────────
  function headerPairs(init) {
    const out = [];
    if (init === undefined || init === null) return out;
    if (init instanceof HeadersClass) {
      for (const pair of init.entries()) out[out.length] = [pair[0], pair[1]];
      return out;
    }
    if (isArray(init)) {
      for (const pair of init) out[out.length] = [StringCtor(pair[0]), StringCtor(pair[1])];
      return out;
    }
    for (const key of objectKeys(init)) out[out.length] = [key, StringCtor(init[key])];
    return out;
  }

  class HeadersClass {
    #map = new P.Map();
    constructor(init) {
      for (const [k, v] of headerPairs(init)) this.append(k, v);
    }
    append(name, value) {
      const key = apply(P.toLowerCase, StringCtor(name), []);
      const old = apply(mapGet, this.#map, [key]);
      apply(mapSet, this.#map, [key, old === undefined ? StringCtor(value) : `${old}, ${value}`]);
    }
    set(name, value) {
      apply(mapSet, this.#map, [apply(P.toLowerCase, StringCtor(name), []), StringCtor(value)]);
    }
    get(name) {
      const v = apply(mapGet, this.#map, [apply(P.toLowerCase, StringCtor(name), [])]);
      return v === undefined ? null : v;
    }
    has(name) {
      return apply(mapGet, this.#map, [apply(P.toLowerCase, StringCtor(name), [])]) !== undefined;
    }
    delete(name) {
      apply(mapDelete, this.#map, [apply(P.toLowerCase, StringCtor(name), [])]);
    }
    *entries() {
      for (const pair of this.#map) yield pair;
    }
    *keys() {
      for (const pair of this.#map) yield pair[0];
    }
    *values() {
      for (const pair of this.#map) yield pair[1];
    }
    forEach(fn, thisArg) {
      for (const [k, v] of this.#map) apply(fn, thisArg, [v, k, this]);
    }
    [P.iterator]() {
      return this.entries();
    }
  }

  function bodyBase64(body) {
    if (body === undefined || body === null) return undefined;
    let bytes;
    if (typeof body === "string") bytes = apply(encode, encoder, [body]);
    else if (body instanceof ArrayBufferCtor) bytes = new Uint8ArrayCtor(body);
    else if (isView(body)) bytes = new Uint8ArrayCtor(body.buffer, body.byteOffset, body.byteLength);
    else if (body instanceof need("url").URLSearchParams) bytes = apply(encode, encoder, [StringCtor(body)]);
    else throw new TypeErrorCtor("fetch: body must be a string, an ArrayBuffer, a typed array or URLSearchParams");
    let binary = "";
    for (let i = 0; i < bytes.length; i++) binary += P.fromCharCode(bytes[i]);
    return btoaFn(binary);
  }

  class ResponseClass {
    #bytes;
    #used = false;
    constructor(r) {
      this.status = r.status;
      this.statusText = r.statusText;
      this.ok = r.status >= 200 && r.status < 300;
      this.url = r.url;
      this.redirected = r.redirected;
      this.headers = new HeadersClass(r.headers);
      // The host copied the body into the VM as an ArrayBuffer of its own.
      this.#bytes = new Uint8ArrayCtor(r.body);
    }
    #take() {
      if (this.#used) throw new TypeErrorCtor("the response body has already been read");
      this.#used = true;
      return this.#bytes;
    }
    get bodyUsed() {
      return this.#used;
    }
    async arrayBuffer() {
      const b = this.#take();
      return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
    }
    async bytes() {
      return this.#take();
    }
    async text() {
      return apply(decode, decoder, [this.#take()]);
    }
    async json() {
      return parse(apply(decode, decoder, [this.#take()]));
    }
  }

  async function fetchFn(input, init) {
    const options = init === undefined || init === null ? {} : requireObject(init, "fetch: init");
    const url =
      typeof input === "string"
        ? input
        : input !== null && typeof input === "object" && "href" in input
          ? StringCtor(input.href)
          : StringCtor(input);
    const method = options.method === undefined ? "GET" : apply(P.toUpperCase, StringCtor(options.method), []);
    const r = await asyncCall("fetch", {
      url,
      method,
      headers: headerPairs(options.headers),
      body: bodyBase64(options.body),
      redirect: options.redirect,
    });
    return new ResponseClass(r);
  }

  return { fetch: fetchFn, Headers: HeadersClass, Response: ResponseClass };
});
