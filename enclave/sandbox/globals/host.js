// How the sandbox's JavaScript calls the host (loaded with the first host call): JSON in and out,
// errors the host makes carrying their `code` — the only errors whose code a run reports — and the
// description of a failed run. Uses only the primordials `P` captured before the script ran.
(function installHost(G, P, need, kit) {
  "use strict";
  const { apply, defineProperty, parse, weakHas, weakAdd } = P;
  const hostCall = kit.host.call;
  const hostCallAsync = kit.host.callAsync;
  /**
   * The same object without a prototype: what a script adds to Object.prototype (`toJSON`,
   * accessors such as `get` or `value`) cannot change how it is serialized or read as a descriptor.
   */
  const record = (o) => P.setPrototypeOf(o, null);
  // `RegExp.prototype.test` looks `exec` up on the regexp: these carry their own, fixed one.
  const ownRegExp = (re) =>
    defineProperty(re, "exec", record({ value: P.reExec, writable: false, enumerable: false, configurable: false }));
  /** Errors made here on the host's behalf: only these give a run their `code`. */
  const hostErrors = new P.WeakSet();

  function codedError(code, message, name, details) {
    const Ctor = name === "TypeError" ? P.TypeError : name === "RangeError" ? P.RangeError : P.Error;
    const e = new Ctor(message);
    if (code) {
      defineProperty(e, "code", record({ value: code, enumerable: true, writable: false, configurable: false }));
      apply(weakAdd, hostErrors, [e]);
    }
    // What the host says of it beyond the message (a guardrail's refusal: its rule and the value seen).
    if (details !== undefined)
      defineProperty(e, "details", record({ value: details, enumerable: true, writable: false, configurable: false }));
    return e;
  }

  // BigInts cannot cross as JSON; they travel tagged and the host revives them.
  function replacer(_key, value) {
    return typeof value === "bigint" ? { $bigint: P.String(value) } : value;
  }

  function syncCall(op, args) {
    const r = parse(apply(hostCall, undefined, [op, P.stringify(record(args), replacer)]));
    if (!r.ok) throw codedError(r.code, r.message, r.name, r.details);
    return r.value;
  }

  async function asyncCall(op, args) {
    const pending = apply(hostCallAsync, undefined, [op, P.stringify(record(args), replacer)]);
    // `await` reads the promise's `constructor` and, if it is not Promise, calls its `then`: with
    // the real constructor pinned on the promise itself, a script's Promise.prototype tampering
    // never sees (or rewrites) the host's reply.
    defineProperty(pending, "constructor", record({ value: P.Promise }));
    const reply = await pending;
    // A reply with bytes (a fetch's body) comes as {json, body} (no prototype): the bytes copied
    // straight into the VM as an ArrayBuffer, not through JSON.
    const r = typeof reply === "string" ? parse(reply) : parse(reply.json);
    if (!r.ok) throw codedError(r.code, r.message, r.name, r.details);
    if (typeof reply !== "string") r.value.body = reply.body;
    return r.value;
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
    } catch {
      return P.stringify(
        record({
          code: null,
          name: "Error",
          message: "the script threw a value that cannot be described",
          undescribable: true,
        }),
      );
    }
    return P.stringify(record({ code, name, message, stack }));
  }

  // The response given to Sigil.Actions.setResponse (main's returned value, when not undefined, wins).
  let responseSet = false;
  let responseValue = null;

  /** What the other chunks get besides the primordials (core.js hands it out as `kit`). */
  const chunkKit = P.freeze({
    syncCall,
    asyncCall,
    record,
    ownRegExp,
    /** `s.fn(...args)` through the captured method `fn`, whatever the script did to prototypes. */
    str: (s, fn, args) => apply(fn, s, args),
    /** An Error whose `name` is `name` (DOMException-like errors the Web APIs throw). */
    namedError(name, message) {
      const e = new P.Error(message);
      defineProperty(e, "name", {
        __proto__: null,
        value: name,
        writable: true,
        enumerable: false,
        configurable: true,
      });
      return e;
    },
    setResponse(value) {
      responseSet = true;
      responseValue = value;
    },
  });

  /** A response as JSON, with every BigInt as its decimal string (JSON has no BigInt). */
  const stringifyWithBigInts = (value) => P.stringify(value, (_key, v) => (typeof v === "bigint" ? P.String(v) : v));

  return {
    record,
    ownRegExp,
    codedError,
    syncCall,
    asyncCall,
    classify,
    stringifyWithBigInts,
    kit: chunkKit,
    response: () => (responseSet ? responseValue : null),
  };
});
