// Evaluated inside QuickJS before every script, and kept small because it runs on every run
// (sandbox.md, Globals). It captures every built-in the sandbox's own code uses ("primordials"),
// before the script can tamper with them; installs the globals lazily — each from its own chunk in
// this folder, evaluated by the host the first time a script touches it — blocks eval/Function,
// and returns the internal functions the host drives the run with. The host's entry points are
// passed in and never reachable from the script.
(function installCore(G, host, requestJson) {
  "use strict";
  const P = Object.freeze({
    apply: Reflect.apply,
    ownKeys: Reflect.ownKeys,
    defineProperty: Object.defineProperty,
    freeze: Object.freeze,
    getPrototypeOf: Object.getPrototypeOf,
    setPrototypeOf: Object.setPrototypeOf,
    getOwnPropertyDescriptor: Object.getOwnPropertyDescriptor,
    objectKeys: Object.keys,
    ObjectPrototype: Object.prototype,
    objToString: Object.prototype.toString,
    isArray: Array.isArray,
    arrayJoin: Array.prototype.join,
    parse: JSON.parse,
    stringify: JSON.stringify,
    String,
    Number,
    fromCharCode: String.fromCharCode,
    charCodeAt: String.prototype.charCodeAt,
    strSlice: String.prototype.slice,
    strReplace: String.prototype.replace,
    toLowerCase: String.prototype.toLowerCase,
    toUpperCase: String.prototype.toUpperCase,
    strIndexOf: String.prototype.indexOf,
    strSplit: String.prototype.split,
    numToString: Number.prototype.toString,
    fnToString: Function.prototype.toString,
    reTest: RegExp.prototype.test,
    reExec: RegExp.prototype.exec,
    isView: ArrayBuffer.isView,
    abSlice: ArrayBuffer.prototype.slice,
    dateToISOString: Date.prototype.toISOString,
    dateGetTime: Date.prototype.getTime,
    errToString: Error.prototype.toString,
    symbolToString: Symbol.prototype.toString,
    mapGet: Map.prototype.get,
    mapSet: Map.prototype.set,
    mapHas: Map.prototype.has,
    mapDelete: Map.prototype.delete,
    mapEntries: Map.prototype.entries,
    mapSize: Object.getOwnPropertyDescriptor(Map.prototype, "size").get,
    setValues: Set.prototype.values,
    setAdd: Set.prototype.add,
    setSize: Object.getOwnPropertyDescriptor(Set.prototype, "size").get,
    weakHas: WeakSet.prototype.has,
    weakAdd: WeakSet.prototype.add,
    taLength: Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), "length").get,
    taTag: Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), Symbol.toStringTag).get,
    Map,
    Set,
    WeakSet,
    Uint8Array,
    ArrayBuffer,
    DataView,
    Date,
    RegExp,
    Promise,
    promiseResolve: Promise.resolve,
    promiseThen: Promise.prototype.then,
    Error,
    TypeError,
    RangeError,
    EvalError,
    SyntaxError,
    ReferenceError,
    URIError,
    iterator: Symbol.iterator,
    toStringTag: Symbol.toStringTag,
    encodeURIComponent,
    decodeURIComponent,
    parseInt,
    parseFloat,
  });
  const { apply, defineProperty, freeze, parse, mapGet, mapSet, mapDelete, weakHas, weakAdd } = P;
  /**
   * The same object without a prototype: what a script adds to Object.prototype (`toJSON`,
   * accessors such as `get` or `value`) cannot change how it is serialized or read as a descriptor.
   */
  const record = (o) => P.setPrototypeOf(o, null);
  const hostCall = host.call;
  const hostCallAsync = host.callAsync;
  const hostLog = host.log;
  const hostLoad = host.load;

  // ─── lazily loaded chunks ─────────────────────────────────────────────────────────────────
  const chunks = new P.Map();
  function need(name) {
    let exports = apply(mapGet, chunks, [name]);
    if (exports === undefined) {
      const install = apply(hostLoad, undefined, [name]);
      exports = install(G, P, need, kit);
      apply(mapSet, chunks, [name, exports]);
    }
    return exports;
  }

  /** A global that is built the first time it is read, then becomes a plain property. */
  function lazyGlobal(name, chunk) {
    const settle = (value) => defineProperty(G, name, { value, writable: true, enumerable: false, configurable: true });
    defineProperty(G, name, {
      get() {
        const value = need(chunk)[name];
        settle(value);
        return value;
      },
      set(value) {
        settle(value);
      },
      enumerable: false,
      configurable: true,
    });
  }

  // ─── calling the host ─────────────────────────────────────────────────────────────────────
  /** Errors made here on the host's behalf: only these give a run their `code`. */
  const hostErrors = new P.WeakSet();

  function codedError(code, message, name) {
    const Ctor = name === "TypeError" ? P.TypeError : name === "RangeError" ? P.RangeError : P.Error;
    const e = new Ctor(message);
    if (code) {
      defineProperty(e, "code", record({ value: code, enumerable: true, writable: false, configurable: false }));
      apply(weakAdd, hostErrors, [e]);
    }
    return e;
  }

  // BigInts cannot cross as JSON; they travel tagged and the host revives them.
  function replacer(_key, value) {
    return typeof value === "bigint" ? { $bigint: P.String(value) } : value;
  }

  function syncCall(op, args) {
    const r = parse(apply(hostCall, undefined, [op, P.stringify(record(args), replacer)]));
    if (!r.ok) throw codedError(r.code, r.message, r.name);
    return r.value;
  }

  async function asyncCall(op, args) {
    const pending = apply(hostCallAsync, undefined, [op, P.stringify(record(args), replacer)]);
    // `await` reads the promise's `constructor` and, if it is not Promise, calls its `then`: with
    // the real constructor pinned on the promise itself, a script's Promise.prototype tampering
    // never sees (or rewrites) the host's reply.
    defineProperty(pending, "constructor", record({ value: P.Promise }));
    const r = parse(await pending);
    if (!r.ok) throw codedError(r.code, r.message, r.name);
    return r.value;
  }

  let responseSet = false;
  let responseValue = null;
  /** What chunks get besides the primordials: the host calls and the run's own state. */
  const kit = freeze({
    syncCall,
    asyncCall,
    record,
    // `RegExp.prototype.test` looks `exec` up on the regexp: these carry their own, fixed one.
    ownRegExp: (re) => defineProperty(re, "exec", record({ value: P.reExec, writable: false, enumerable: false, configurable: false })),
    request: freeze(parse(requestJson)),
    setResponse(value) {
      responseSet = true;
      responseValue = value;
    },
  });

  // ─── Sigil: non-writable, non-configurable; built (deeply frozen) on first use ─────────────
  let sigil;
  defineProperty(G, "Sigil", {
    get() {
      if (sigil === undefined) sigil = need("actions").Sigil;
      return sigil;
    },
    enumerable: false,
    configurable: false,
  });

  // ─── console: cheap to install; formatting is loaded at the first call ─────────────────────
  const consoleObject = {};
  for (const level of ["log", "info", "warn", "error", "debug"]) {
    consoleObject[level] = function (...args) {
      apply(hostLog, undefined, [level, need("inspect").formatLogLine(args)]);
    };
  }
  defineProperty(G, "console", { value: consoleObject, writable: true, enumerable: false, configurable: true });

  // ─── timers (driven by the host's clock; callbacks run between the run's jobs) ─────────────
  const timers = new P.Map();
  function setTimeout(callback, ms, ...args) {
    if (typeof callback !== "function") throw new P.TypeError("setTimeout: the callback must be a function");
    const delay = +ms > 0 ? +ms : 0;
    const id = syncCall("setTimeout", { ms: delay });
    apply(mapSet, timers, [id, { callback, args }]);
    return id;
  }
  function clearTimeout(id) {
    if (typeof id !== "number") return;
    if (apply(mapDelete, timers, [id])) syncCall("clearTimeout", { id });
  }
  defineProperty(G, "setTimeout", { value: setTimeout, writable: true, enumerable: false, configurable: true });
  defineProperty(G, "clearTimeout", { value: clearTimeout, writable: true, enumerable: false, configurable: true });
  if (typeof G.queueMicrotask !== "function") {
    const resolved = apply(P.promiseResolve, P.Promise, []);
    const queueMicrotask = (fn) => {
      apply(P.promiseThen, resolved, [() => fn()]);
    };
    defineProperty(G, "queueMicrotask", { value: queueMicrotask, writable: true, enumerable: false, configurable: true });
  }

  for (const name of ["TextEncoder", "TextDecoder", "atob", "btoa"]) lazyGlobal(name, "text");
  for (const name of ["URL", "URLSearchParams"]) lazyGlobal(name, "url");
  lazyGlobal("crypto", "crypto");
  lazyGlobal("structuredClone", "clone");
  for (const name of ["fetch", "Headers", "Response"]) lazyGlobal(name, "fetch");

  // ─── no code generation from strings ──────────────────────────────────────────────────────
  const refuse = function () {
    throw new P.EvalError("eval and the Function constructor are disabled in Sigil scripts");
  };
  const blockedConstructor = (prototype) => {
    const blocked = function Function() {
      return refuse();
    };
    blocked.prototype = prototype;
    return blocked;
  };
  for (const fn of [function () {}, async function () {}, function* () {}, async function* () {}]) {
    const prototype = P.getPrototypeOf(fn);
    defineProperty(prototype, "constructor", { value: blockedConstructor(prototype), writable: false, enumerable: false, configurable: false });
  }
  defineProperty(G, "Function", { value: blockedConstructor(Function.prototype), writable: false, enumerable: false, configurable: false });
  defineProperty(G, "eval", { value: refuse, writable: false, enumerable: false, configurable: false });

  // ─── what the host drives the run with ────────────────────────────────────────────────────
  async function callMain(paramsJson, moduleNamespace) {
    const params = parse(paramsJson);
    let main;
    if (moduleNamespace !== undefined) main = typeof moduleNamespace.default === "function" ? moduleNamespace.default : moduleNamespace.main;
    else main = G.main;
    if (typeof main !== "function") throw codedError("script_error", "the script must define main(params)");
    const value = await apply(main, undefined, [params]);
    const out = value === undefined ? (responseSet ? responseValue : null) : value;
    const json = P.stringify(out);
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
        message = typeof m === "string" ? m : P.String(reason);
        if (typeof s === "string") stack = s;
      } else {
        name = "Uncaught";
        message = typeof reason === "symbol" ? apply(P.symbolToString, reason, []) : P.String(reason);
      }
    } catch (e) {
      message = "the script threw a value that cannot be described";
    }
    return P.stringify({ code, name, message, stack });
  }

  return { callMain, fireTimer, classify };
})
