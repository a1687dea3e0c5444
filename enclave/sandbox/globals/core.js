// Evaluated inside QuickJS before every script, and kept small because it runs on every run
// (docs/design/sandbox.md, Globals). It captures every built-in the sandbox's own code uses ("primordials"),
// before the script can tamper with them; installs the globals lazily — each from its own chunk in
// this folder, evaluated by the host the first time a script touches it — blocks eval/Function,
// and returns the internal functions the host drives the run with. The host's entry points are
// passed in and never reachable from the script.
(function installCore(G, host) {
  "use strict";
  const P = Object.freeze({
    apply: Reflect.apply,
    ownKeys: Reflect.ownKeys,
    defineProperty: Object.defineProperty,
    freeze: Object.freeze,
    getPrototypeOf: Object.getPrototypeOf,
    setPrototypeOf: Object.setPrototypeOf,
    getOwnPropertyDescriptor: Object.getOwnPropertyDescriptor,
    is: Object.is,
    defineProperties: Object.defineProperties,
    reflectDefineProperty: Reflect.defineProperty,
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
    toWellFormed: String.prototype.toWellFormed,
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
    imul: Math.imul,
  });
  const { apply, defineProperty, freeze, parse, mapGet, mapSet } = P;
  const hostLoad = host.load;

  // ─── lazily loaded chunks ─────────────────────────────────────────────────────────────────
  const chunks = new P.Map();
  function need(name) {
    let exports = apply(mapGet, chunks, [name]);
    if (exports === undefined) {
      const install = apply(hostLoad, undefined, [name]);
      exports = install(G, P, need, name === "host" || name === "console" || name === "fixed" ? hostKit : kit());
      apply(mapSet, chunks, [name, exports]);
    }
    return exports;
  }

  /** Makes `name` of `holder` the plain property it stands for. */
  function settle(holder, name, value) {
    // A descriptor without a prototype: the script may have put `get` or `set` on Object.prototype.
    defineProperty(holder, name, { __proto__: null, value, writable: true, enumerable: false, configurable: true });
    return value;
  }
  /** A global (or a built-in's method, on `holder`) that is built the first time it is read, then becomes a plain property. */
  function lazyGlobal(name, chunk, holder = G, key = name) {
    defineProperty(holder, name, {
      get: () => settle(holder, name, need(chunk)[key]),
      set: (value) => settle(holder, name, value),
      enumerable: false,
      configurable: true,
    });
  }

  const hostKit = freeze({ host });
  /** What the other chunks get besides the primordials: the host calls and the run's own state (host.js makes it). */
  const kit = () => need("host").kit;

  // Sigil: a data property, non-writable and non-configurable, deeply frozen, defined when the run
  // begins (its `request` is the run's {requestId, correlationId, cid}). Each function of
  // Sigil.Actions is a small stub here that forwards to the actions chunk, which is parsed only at the
  // first call (or ahead of it, when the host prepares a runtime while idle): a run that never signs
  // does not pay for it. The names must match actions.js (the sandbox's tests compare them).
  const ACTION_NAMES = apply(
    P.strSplit,
    "signMessage signTypedData signTransaction sendTransaction speedUpTransaction signDigest getPublicKey getPrivateKey getSolanaAddress signSolanaMessage signSolanaTransaction encrypt decrypt getActionWalletAddress getActionPublicKey signMessageAsAction getActionPrivateKey setResponse keccak256 sha256",
    [" "],
  );
  const Actions = {};
  for (let i = 0; i < ACTION_NAMES.length; i++) {
    const name = ACTION_NAMES[i];
    // The computed key gives each stub its name (Sigil.Actions.signMessage.name === "signMessage").
    Actions[name] = freeze({ [name]: (args) => need("actions").Actions[name](args) }[name]);
  }
  freeze(Actions);
  // Each lazy global followed by its chunk, as one string: a literal is the cheapest thing to parse.
  const LAZY = apply(
    P.strSplit,
    "console console setTimeout timers clearTimeout timers queueMicrotask timers TextEncoder text TextDecoder text atob text btoa text URL url URLSearchParams url crypto crypto structuredClone clone fetch fetch Headers fetch Response fetch",
    [" "],
  );
  for (let i = 0; i < LAZY.length; i += 2) lazyGlobal(LAZY[i], LAZY[i + 1]);

  // The global properties the sandbox fixes (Sigil, eval, Function) stay fixed against the three
  // ways to define a property, which QuickJS would let change them (fixed.js): loaded at first use.
  lazyGlobal("defineProperty", "fixed", Object, "objectDefineProperty");
  lazyGlobal("defineProperties", "fixed", Object);
  lazyGlobal("defineProperty", "fixed", Reflect, "reflectDefineProperty");

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
    defineProperty(prototype, "constructor", {
      value: blockedConstructor(prototype),
      writable: false,
      enumerable: false,
      configurable: false,
    });
  }
  defineProperty(G, "Function", {
    value: blockedConstructor(Function.prototype),
    writable: false,
    enumerable: false,
    configurable: false,
  });
  defineProperty(G, "eval", { value: refuse, writable: false, enumerable: false, configurable: false });

  // ─── what this QuickJS build gets wrong ─────────────────────────────────────────────────────
  // Built-ins with memory-safety bugs in this build (Bellard's QuickJS f1139494, in quickjs-emscripten
  // 0.32), found by the sandbox's probes (test/fuzz/engineCases.ts) and fixed upstream only later,
  // are gone before the image is taken, or replaced where scripts may want them. The instance's
  // memory is made the image again after every run whatever a script does (image.ts): this is what
  // keeps a script from corrupting its own run's engine. docs/actions.md says what is not there.
  //
  // No shared memory: scripts have no threads to share it with, and a growable SharedArrayBuffer is
  // allocated at its initial length only, so that `grow` gave a view over whatever lay past it
  // (issue 26). Its prototype's `grow` goes too, in case a reference to it survives somewhere.
  const SharedArrayBufferCtor = G.SharedArrayBuffer;
  if (SharedArrayBufferCtor !== undefined) delete SharedArrayBufferCtor.prototype.grow;
  delete G.SharedArrayBuffer;
  delete G.Atomics;
  // No resizing or detaching an ArrayBuffer: a typed array made (upstream #478), copied (#492's
  // `with`) or filled while a getter shrinks or detaches its buffer keeps its old length, over bytes
  // that are no longer its own. Without resize, transfer and transferToFixedLength a buffer keeps
  // its length for life (the `maxByteLength` option is still accepted; nothing can use it).
  const ArrayBufferPrototype = ArrayBuffer.prototype;
  delete ArrayBufferPrototype.resize;
  delete ArrayBufferPrototype.transfer;
  delete ArrayBufferPrototype.transferToFixedLength;
  // No FinalizationRegistry: its cleanup frees what a collection re-entered from it still uses
  // (upstream #494), and a run has no use for finalizers.
  delete G.FinalizationRegistry;
  // Array's copying methods, here in JavaScript: the built-ins fill a new array whose slots are not
  // initialized while the script's getters run, and a collection then follows whatever those slots
  // held (upstream #471). These follow the specification's steps (ECMA-262, Array.prototype).
  const { floor, max, min } = Math;
  const ObjectCtor = Object;
  const ArrayCtor = Array;
  const toInteger = (v) => {
    const n = +v;
    return n !== n ? 0 : n === Infinity || n === -Infinity ? n : n < 0 ? -floor(-n) : floor(n);
  };
  const objectOf = (v, name) => {
    if (v === null || v === undefined) throw new P.TypeError(`Array.prototype.${name} called on null or undefined`);
    return ObjectCtor(v);
  };
  const lengthOf = (o) => {
    const n = toInteger(o.length);
    return n <= 0 ? 0 : n > 9007199254740991 ? 9007199254740991 : n;
  };
  const arrayOf = (length) => {
    if (length > 4294967295) throw new P.RangeError("invalid array length");
    return new ArrayCtor(length);
  };
  const put = (array, index, value) =>
    defineProperty(array, index, { __proto__: null, value, writable: true, enumerable: true, configurable: true });
  const arraySort = ArrayCtor.prototype.sort;
  const copying = {
    toReversed() {
      const o = objectOf(this, "toReversed");
      const length = lengthOf(o);
      const a = arrayOf(length);
      for (let k = 0; k < length; k++) put(a, k, o[length - 1 - k]);
      return a;
    },
    toSorted(comparefn) {
      if (comparefn !== undefined && typeof comparefn !== "function")
        throw new P.TypeError("The comparison function must be either a function or undefined");
      const o = objectOf(this, "toSorted");
      const length = lengthOf(o);
      const a = arrayOf(length);
      for (let k = 0; k < length; k++) put(a, k, o[k]);
      return apply(arraySort, a, [comparefn]);
    },
    toSpliced(start, skipCount, ...items) {
      const o = objectOf(this, "toSpliced");
      const length = lengthOf(o);
      const relative = toInteger(start);
      const from = relative === -Infinity ? 0 : relative < 0 ? max(length + relative, 0) : min(relative, length);
      const skip =
        arguments.length === 0
          ? 0
          : arguments.length === 1
            ? length - from
            : min(max(toInteger(skipCount), 0), length - from);
      const newLength = length + items.length - skip;
      if (newLength > 9007199254740991) throw new P.TypeError("invalid array length");
      const a = arrayOf(newLength);
      let i = 0;
      for (; i < from; i++) put(a, i, o[i]);
      for (let j = 0; j < items.length; j++) put(a, i++, items[j]);
      for (let r = from + skip; r < length; r++) put(a, i++, o[r]);
      return a;
    },
    with(index, value) {
      const o = objectOf(this, "with");
      const length = lengthOf(o);
      const relative = toInteger(index);
      const actual = relative >= 0 ? relative : length + relative;
      if (actual >= length || actual < 0) throw new P.RangeError("invalid array index");
      const a = arrayOf(length);
      for (let k = 0; k < length; k++) put(a, k, k === actual ? value : o[k]);
      return a;
    },
  };
  for (const name of ["toReversed", "toSorted", "toSpliced", "with"]) {
    defineProperty(ArrayCtor.prototype, name, {
      __proto__: null,
      value: copying[name],
      writable: true,
      enumerable: false,
      configurable: true,
    });
  }

  // ─── Math.random, seeded for each run ────────────────────────────────────────────────────────
  // Every run starts from the same image of this runtime (image.ts), QuickJS's own generator state
  // included: it would give every run the same numbers. This one (xoshiro128**) is seeded by the
  // host with 128 fresh random bits at `begin`. Not for cryptography (crypto.getRandomValues is).
  let s0 = 1,
    s1 = 0,
    s2 = 0,
    s3 = 0;
  const rotl = (x, k) => (x << k) | (x >>> (32 - k));
  const next32 = () => {
    const out = P.imul(rotl(P.imul(s1, 5), 7), 9) >>> 0;
    const t = s1 << 9;
    s2 ^= s0;
    s3 ^= s1;
    s1 ^= s2;
    s0 ^= s3;
    s2 ^= t;
    s3 = rotl(s3, 11);
    return out;
  };
  const random = {
    random() {
      // 53 random bits: 27 from one draw, 26 from the next.
      return ((next32() >>> 5) * 67108864 + (next32() >>> 6)) / 9007199254740992;
    },
  }.random;
  defineProperty(Math, "random", {
    __proto__: null,
    value: random,
    writable: true,
    enumerable: false,
    configurable: true,
  });
  const seed = (hex) => {
    s0 = P.parseInt(apply(P.strSlice, hex, [0, 8]), 16) | 0;
    s1 = P.parseInt(apply(P.strSlice, hex, [8, 16]), 16) | 0;
    s2 = P.parseInt(apply(P.strSlice, hex, [16, 24]), 16) | 0;
    s3 = P.parseInt(apply(P.strSlice, hex, [24, 32]), 16) | 0;
    if ((s0 | s1 | s2 | s3) === 0) s0 = 1;
  };

  // What the host drives the run with.
  async function callMain(paramsJson, moduleNamespace) {
    const params = parse(paramsJson);
    let main;
    if (moduleNamespace !== undefined)
      main = typeof moduleNamespace.default === "function" ? moduleNamespace.default : moduleNamespace.main;
    else main = G.main;
    if (typeof main !== "function")
      throw need("host").codedError("script_error", "the script must define main(params)");
    const value = await apply(main, undefined, [params]);
    // A response given to Sigil.Actions.setResponse lives in host.js, loaded by any Sigil call.
    const out =
      value !== undefined ? value : apply(mapGet, chunks, ["host"]) === undefined ? null : need("host").response();
    let json;
    try {
      json = P.stringify(out);
    } catch (e) {
      // A BigInt has no JSON form: host.js gives it its decimal string (only then: a replacer is
      // called for every value of the response).
      if (!(e instanceof P.TypeError)) throw e;
      json = need("host").stringifyWithBigInts(out);
    }
    return json === undefined ? "null" : json;
  }
  const fireTimer = (id) => need("timers").fire(id);
  const classify = (reason) => need("host").classify(reason);
  // Before the run: the run's own facts, and Math.random's seed (32 hex digits).
  const begin = (json, randomSeed) => {
    seed(randomSeed);
    const Sigil = freeze({ Actions, request: freeze(parse(json)) });
    defineProperty(G, "Sigil", {
      __proto__: null,
      value: Sigil,
      writable: false,
      enumerable: false,
      configurable: false,
    });
  };
  // When the runtime is prepared, before its image is taken: every chunk parsed once, so that no run
  // pays to parse what it touches (the globals stay lazy: the first read of each still settles it).
  // The host names the chunks (runtime.ts), space-separated.
  const preload = (chunkNames) => {
    const names = apply(P.strSplit, chunkNames, [" "]);
    for (let i = 0; i < names.length; i++) need(names[i]);
  };
  return { callMain, fireTimer, classify, begin, preload };
});
