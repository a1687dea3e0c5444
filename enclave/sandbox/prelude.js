// Evaluated inside QuickJS before every script (sandbox.md, Globals): installs `Sigil`, `console`,
// timers and `fetch` over the host's three entry points, blocks eval/Function, and returns the
// internal functions the host drives the run with. The host functions are passed in, never
// reachable from the script afterwards. Every built-in used after the script starts is captured
// here first, so a script that tampers with prototypes cannot change what these functions do.
(function installSigil(G, host, formatLogLine, requestJson) {
  "use strict";
  const apply = Reflect.apply;
  const defineProperty = Object.defineProperty;
  const freeze = Object.freeze;
  const getPrototypeOf = Object.getPrototypeOf;
  const setPrototypeOf = Object.setPrototypeOf;
  const ObjectCtor = Object;
  const PromiseCtor = Promise;
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const isArray = Array.isArray;
  const StringCtor = String;
  const TypeErrorCtor = TypeError;
  const RangeErrorCtor = RangeError;
  const ErrorCtor = Error;
  const reTest = RegExp.prototype.test;
  const reExec = RegExp.prototype.exec;
  const weakHas = WeakSet.prototype.has;
  const weakAdd = WeakSet.prototype.add;
  const mapGet = Map.prototype.get;
  const mapSet = Map.prototype.set;
  const mapDelete = Map.prototype.delete;
  const arrayFrom = Array.from;
  const hostCall = host.call;
  const hostCallAsync = host.callAsync;
  const hostLog = host.log;
  const Uint8ArrayCtor = Uint8Array;
  const ArrayBufferCtor = ArrayBuffer;
  const isView = ArrayBuffer.isView;
  const TextEncoderCtor = G.TextEncoder;
  const TextDecoderCtor = G.TextDecoder;
  const encode = TextEncoderCtor.prototype.encode;
  const decode = TextDecoderCtor.prototype.decode;
  const encoder = new TextEncoderCtor();
  const decoder = new TextDecoderCtor();
  const btoaFn = G.btoa;
  const atobFn = G.atob;

  /** Errors made here on the host's behalf: only these give a run their `code`. */
  const hostErrors = new WeakSet();

  /**
   * The same object without a prototype: what a script adds to Object.prototype (`toJSON`,
   * accessors such as `get` or `value`) cannot change how it is serialized or read as a descriptor.
   */
  const record = (o) => setPrototypeOf(o, null);

  // `RegExp.prototype.test` looks `exec` up on the regexp: these carry their own, fixed one.
  const ownRegExp = (re) => defineProperty(re, "exec", { value: reExec, writable: false, enumerable: false, configurable: false });
  const test = (re, s) => apply(reTest, re, [s]);
  const HEX_ADDRESS = ownRegExp(/^0x[0-9a-fA-F]{40}$/);
  const HEX = ownRegExp(/^0x([0-9a-fA-F]{2})*$/);
  const HEX32 = ownRegExp(/^0x[0-9a-fA-F]{64}$/);

  function codedError(code, message, name) {
    const Ctor = name === "TypeError" ? TypeErrorCtor : name === "RangeError" ? RangeErrorCtor : ErrorCtor;
    const e = new Ctor(message);
    if (code) {
      defineProperty(e, "code", record({ value: code, enumerable: true, writable: false, configurable: false }));
      apply(weakAdd, hostErrors, [e]);
    }
    return e;
  }

  // BigInts cannot cross as JSON; they travel tagged and the host revives them.
  function replacer(_key, value) {
    return typeof value === "bigint" ? { $bigint: StringCtor(value) } : value;
  }

  function syncCall(op, args) {
    const r = parse(apply(hostCall, undefined, [op, stringify(record(args), replacer)]));
    if (!r.ok) throw codedError(r.code, r.message, r.name);
    return r.value;
  }

  async function asyncCall(op, args) {
    const pending = apply(hostCallAsync, undefined, [op, stringify(record(args), replacer)]);
    // `await` reads the promise's `constructor` and, if it is not Promise, calls its `then`: with
    // the real constructor pinned on the promise itself, a script's Promise.prototype tampering
    // never sees (or rewrites) the host's reply.
    defineProperty(pending, "constructor", record({ value: PromiseCtor }));
    const r = parse(await pending);
    if (!r.ok) throw codedError(r.code, r.message, r.name);
    return r.value;
  }

  function requireObject(value, fn) {
    if (value === null || typeof value !== "object") throw new TypeErrorCtor(`${fn} expects an object argument`);
    return value;
  }

  function requirePkpId(args, fn) {
    const pkpId = requireObject(args, fn).pkpId;
    if (typeof pkpId !== "string" || !test(HEX_ADDRESS, pkpId)) {
      throw new TypeErrorCtor(`${fn}: pkpId must be a wallet address (0x followed by 40 hex digits)`);
    }
    return pkpId;
  }

  /** A message to sign: a string (signed as UTF-8 text) or `{raw: "0x…"}` bytes, viem's convention. */
  function messageArg(message, fn) {
    if (typeof message === "string") return message;
    if (message !== null && typeof message === "object" && typeof message.raw === "string" && test(HEX, message.raw)) {
      return record({ raw: message.raw });
    }
    throw new TypeErrorCtor(`${fn}: message must be a string or {raw: "0x…"}`);
  }

  function bytesToHex(bytes) {
    let out = "0x";
    for (let i = 0; i < bytes.length; i++) out += (bytes[i] < 16 ? "0" : "") + bytes[i].toString(16);
    return out;
  }

  function hexOrText(value, fn) {
    if (typeof value === "string") return test(HEX, value) ? { hex: value } : { text: value };
    if (isView(value) || value instanceof ArrayBufferCtor) {
      const bytes = value instanceof ArrayBufferCtor ? new Uint8ArrayCtor(value) : new Uint8ArrayCtor(value.buffer, value.byteOffset, value.byteLength);
      return { hex: bytesToHex(bytes) };
    }
    throw new TypeErrorCtor(`${fn} expects a string (hex or text) or bytes`);
  }

  let responseSet = false;
  let responseValue = null;

  const Actions = {
    signMessage(args) {
      return asyncCall("signMessage", { pkpId: requirePkpId(args, "signMessage"), message: messageArg(args.message, "signMessage") });
    },
    signTypedData(args) {
      const pkpId = requirePkpId(args, "signTypedData");
      requireObject(args.typedData, "signTypedData: typedData");
      return asyncCall("signTypedData", { pkpId, typedData: args.typedData });
    },
    signTransaction(args) {
      const pkpId = requirePkpId(args, "signTransaction");
      requireObject(args.transaction, "signTransaction: transaction");
      return asyncCall("signTransaction", { pkpId, transaction: args.transaction });
    },
    signDigest(args) {
      const pkpId = requirePkpId(args, "signDigest");
      const digest = args.digest;
      if (typeof digest !== "string" || !test(HEX32, digest)) {
        throw new TypeErrorCtor("signDigest: digest must be 0x followed by 64 hex digits");
      }
      return asyncCall("signDigest", { pkpId, digest });
    },
    getPublicKey(args) {
      return asyncCall("getPublicKey", { pkpId: requirePkpId(args, "getPublicKey") });
    },
    getPrivateKey(args) {
      return asyncCall("getPrivateKey", { pkpId: requirePkpId(args, "getPrivateKey") });
    },
    encrypt(args) {
      const pkpId = requirePkpId(args, "encrypt");
      const plaintext = args.plaintext;
      if (typeof plaintext !== "string" && !(plaintext !== null && typeof plaintext === "object" && typeof plaintext.raw === "string" && test(HEX, plaintext.raw))) {
        throw new TypeErrorCtor('encrypt: plaintext must be a string or {raw: "0x…"}');
      }
      return asyncCall("encrypt", { pkpId, plaintext: typeof plaintext === "string" ? plaintext : record({ raw: plaintext.raw }) });
    },
    decrypt(args) {
      const pkpId = requirePkpId(args, "decrypt");
      const ciphertext = args.ciphertext;
      if (typeof ciphertext !== "string" || !test(HEX, ciphertext)) throw new TypeErrorCtor("decrypt: ciphertext must be a 0x hex string");
      return asyncCall("decrypt", { pkpId, ciphertext, raw: args.raw === true });
    },
    getActionWalletAddress(args) {
      const cid = args === undefined || args === null ? undefined : requireObject(args, "getActionWalletAddress").cid;
      if (cid !== undefined && typeof cid !== "string") throw new TypeErrorCtor("getActionWalletAddress: cid must be a string");
      return asyncCall("getActionWalletAddress", { cid });
    },
    getActionPublicKey(args) {
      const cid = args === undefined || args === null ? undefined : requireObject(args, "getActionPublicKey").cid;
      if (cid !== undefined && typeof cid !== "string") throw new TypeErrorCtor("getActionPublicKey: cid must be a string");
      return asyncCall("getActionPublicKey", { cid });
    },
    signMessageAsAction(args) {
      return asyncCall("signMessageAsAction", { message: messageArg(requireObject(args, "signMessageAsAction").message, "signMessageAsAction") });
    },
    getActionPrivateKey() {
      return asyncCall("getActionPrivateKey", {});
    },
    setResponse(value) {
      responseSet = true;
      responseValue = value;
    },
    keccak256(value) {
      return syncCall("keccak256", hexOrText(value, "keccak256"));
    },
    sha256(value) {
      return syncCall("sha256", hexOrText(value, "sha256"));
    },
  };

  const request = parse(requestJson);
  for (const name of ObjectCtor.keys(Actions)) freeze(Actions[name]);
  const Sigil = { Actions: freeze(Actions), request: freeze(request) };
  defineProperty(G, "Sigil", { value: freeze(Sigil), writable: false, enumerable: false, configurable: false });

  // ─── console ──────────────────────────────────────────────────────────────────────────────
  const consoleObject = {};
  for (const level of ["log", "info", "warn", "error", "debug"]) {
    consoleObject[level] = function (...args) {
      apply(hostLog, undefined, [level, formatLogLine(args)]);
    };
  }
  defineProperty(G, "console", { value: consoleObject, writable: true, enumerable: false, configurable: true });

  // ─── timers (driven by the host's clock; callbacks run between the run's jobs) ──────────
  const timers = new Map();
  function setTimeoutFn(callback, ms, ...args) {
    if (typeof callback !== "function") throw new TypeErrorCtor("setTimeout: the callback must be a function");
    const delay = +ms > 0 ? +ms : 0;
    const id = syncCall("setTimeout", { ms: delay });
    apply(mapSet, timers, [id, { callback, args }]);
    return id;
  }
  function clearTimeoutFn(id) {
    if (typeof id !== "number") return;
    if (apply(mapDelete, timers, [id])) syncCall("clearTimeout", { id });
  }
  defineProperty(G, "setTimeout", { value: setTimeoutFn, writable: true, enumerable: false, configurable: true });
  defineProperty(G, "clearTimeout", { value: clearTimeoutFn, writable: true, enumerable: false, configurable: true });

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
    for (const key of ObjectCtor.keys(init)) out[out.length] = [key, StringCtor(init[key])];
    return out;
  }

  class HeadersClass {
    #map = new Map();
    constructor(init) {
      for (const [k, v] of headerPairs(init)) this.append(k, v);
    }
    append(name, value) {
      const key = StringCtor(name).toLowerCase();
      const old = apply(mapGet, this.#map, [key]);
      apply(mapSet, this.#map, [key, old === undefined ? StringCtor(value) : `${old}, ${value}`]);
    }
    set(name, value) {
      apply(mapSet, this.#map, [StringCtor(name).toLowerCase(), StringCtor(value)]);
    }
    get(name) {
      const v = apply(mapGet, this.#map, [StringCtor(name).toLowerCase()]);
      return v === undefined ? null : v;
    }
    has(name) {
      return apply(mapGet, this.#map, [StringCtor(name).toLowerCase()]) !== undefined;
    }
    delete(name) {
      apply(mapDelete, this.#map, [StringCtor(name).toLowerCase()]);
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
    [Symbol.iterator]() {
      return this.entries();
    }
  }

  function bodyBase64(body) {
    if (body === undefined || body === null) return undefined;
    let bytes;
    if (typeof body === "string") bytes = apply(encode, encoder, [body]);
    else if (body instanceof ArrayBufferCtor) bytes = new Uint8ArrayCtor(body);
    else if (isView(body)) bytes = new Uint8ArrayCtor(body.buffer, body.byteOffset, body.byteLength);
    else if (G.URLSearchParams && body instanceof G.URLSearchParams) bytes = apply(encode, encoder, [StringCtor(body)]);
    else throw new TypeErrorCtor("fetch: body must be a string, an ArrayBuffer, a typed array or URLSearchParams");
    let binary = "";
    for (let i = 0; i < bytes.length; i++) binary += StringCtor.fromCharCode(bytes[i]);
    return btoaFn(binary);
  }

  function base64ToBytes(b64) {
    const binary = atobFn(b64);
    const bytes = new Uint8ArrayCtor(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
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
      this.#bytes = base64ToBytes(r.body);
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
    const url = typeof input === "string" ? input : input !== null && typeof input === "object" && "href" in input ? StringCtor(input.href) : StringCtor(input);
    const method = options.method === undefined ? "GET" : StringCtor(options.method).toUpperCase();
    const r = await asyncCall("fetch", { url, method, headers: headerPairs(options.headers), body: bodyBase64(options.body), redirect: options.redirect });
    return new ResponseClass(r);
  }
  defineProperty(G, "fetch", { value: fetchFn, writable: true, enumerable: false, configurable: true });
  defineProperty(G, "Headers", { value: HeadersClass, writable: true, enumerable: false, configurable: true });
  defineProperty(G, "Response", { value: ResponseClass, writable: true, enumerable: false, configurable: true });

  // ─── no code generation from strings ────────────────────────────────────────────────────
  const refuse = function () {
    throw new EvalError("eval and the Function constructor are disabled in Sigil scripts");
  };
  const constructors = [
    Function,
    getPrototypeOf(async function () {}).constructor,
    getPrototypeOf(function* () {}).constructor,
    getPrototypeOf(async function* () {}).constructor,
  ];
  for (const Ctor of constructors) {
    const blocked = function Function() {
      return refuse();
    };
    blocked.prototype = Ctor.prototype;
    defineProperty(Ctor.prototype, "constructor", { value: blocked, writable: false, enumerable: false, configurable: false });
  }
  const blockedFunction = function Function() {
    return refuse();
  };
  blockedFunction.prototype = Function.prototype;
  defineProperty(G, "Function", { value: blockedFunction, writable: false, enumerable: false, configurable: false });
  defineProperty(G, "eval", { value: refuse, writable: false, enumerable: false, configurable: false });

  // ─── what the host drives the run with ──────────────────────────────────────────────────
  const missingMain = "the script must define main(params)";

  async function callMain(paramsJson, moduleNamespace) {
    const params = parse(paramsJson);
    let main;
    if (moduleNamespace !== undefined) main = typeof moduleNamespace.default === "function" ? moduleNamespace.default : moduleNamespace.main;
    else main = G.main;
    if (typeof main !== "function") throw codedError("script_error", missingMain);
    const value = await apply(main, undefined, [params]);
    const out = value === undefined ? (responseSet ? responseValue : null) : value;
    const json = stringify(out);
    return json === undefined ? "null" : json;
  }

  function fireTimer(id) {
    const timer = apply(mapGet, timers, [id]);
    if (timer === undefined) return;
    apply(mapDelete, timers, [id]);
    apply(timer.callback, undefined, timer.args);
  }

  /** What a rejection says, as JSON: a host-made code (or null), the name, message and stack. */
  function classify(reason) {
    let code = null;
    let name = "Error";
    let message = "";
    let stack;
    try {
      if (reason !== null && (typeof reason === "object" || typeof reason === "function")) {
        if (apply(weakHas, hostErrors, [reason])) code = reason.code;
        const n = reason.name;
        const m = reason.message;
        const s = reason.stack;
        if (typeof n === "string") name = n;
        message = typeof m === "string" ? m : StringCtor(reason);
        if (typeof s === "string") stack = s;
      } else {
        name = "Uncaught";
        message = typeof reason === "symbol" ? reason.toString() : StringCtor(reason);
      }
    } catch (e) {
      message = "the script threw a value that cannot be described";
    }
    return stringify(record({ code, name, message, stack }));
  }

  return { callMain, fireTimer, classify };
})
