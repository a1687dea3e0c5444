// structuredClone (docs/design/sandbox.md, Globals), loaded on first use: the structured-clone algorithm for
// the types a script can make here, cycles and shared references kept.
(function installClone(G, P, need, kit) {
  "use strict";
  const { apply, defineProperty, objectKeys, isArray, isView, mapGet, mapSet, Error: ErrorCtor } = P;
  const { namedError } = kit;
  // ─── structuredClone ─────────────────────────────────────────────────────────────────────
  /**
   * A copied property is defined, never assigned: assigning "__proto__" would set the copy's
   * prototype, and a setter the script put on Object.prototype would swallow the value.
   */
  const put = (o, k, value) =>
    defineProperty(o, k, { __proto__: null, value, writable: true, enumerable: true, configurable: true });
  const ERRORS = {
    __proto__: null,
    Error: ErrorCtor,
    TypeError: P.TypeError,
    RangeError: P.RangeError,
    SyntaxError: P.SyntaxError,
    ReferenceError: P.ReferenceError,
    EvalError: P.EvalError,
    URIError: P.URIError,
  };
  function structuredClone(value) {
    const seen = new P.Map();
    const clone = (v) => {
      if (typeof v === "symbol" || typeof v === "function")
        throw namedError("DataCloneError", `${typeof v === "symbol" ? "Symbol()" : "function"} could not be cloned`);
      if (v === null || typeof v !== "object") return v;
      if (apply(P.mapHas, seen, [v])) return apply(mapGet, seen, [v]);
      const t = apply(P.objToString, v, []);
      let out;
      if (isArray(v)) {
        // Holes stay holes, the length is kept, and so are properties that are not indices.
        out = [];
        apply(mapSet, seen, [v, out]);
        const keys = objectKeys(v);
        for (let i = 0; i < keys.length; i++) put(out, keys[i], clone(v[keys[i]]));
        out.length = v.length;
        return out;
      }
      switch (t) {
        case "[object Date]":
          out = new P.Date(apply(P.dateGetTime, v, []));
          break;
        case "[object RegExp]":
          out = new P.RegExp(v.source, v.flags);
          break;
        case "[object ArrayBuffer]":
          out = apply(P.abSlice, v, [0]);
          break;
        case "[object Map]": {
          out = new P.Map();
          apply(mapSet, seen, [v, out]);
          for (const entry of apply(P.mapEntries, v, [])) apply(mapSet, out, [clone(entry[0]), clone(entry[1])]);
          return out;
        }
        case "[object Set]": {
          out = new P.Set();
          apply(mapSet, seen, [v, out]);
          for (const x of apply(P.setValues, v, [])) apply(P.setAdd, out, [clone(x)]);
          return out;
        }
        case "[object Error]": {
          const E = ERRORS[v.name] || ErrorCtor;
          out = new E(v.message);
          break;
        }
        case "[object Boolean]":
        case "[object Number]":
        case "[object String]":
        case "[object BigInt]":
          out = Object(v.valueOf());
          break;
        case "[object DataView]": {
          const buf = clone(v.buffer);
          out = new P.DataView(buf, v.byteOffset, v.byteLength);
          break;
        }
        case "[object Object]": {
          out = {};
          apply(mapSet, seen, [v, out]);
          const keys = objectKeys(v);
          for (let i = 0; i < keys.length; i++) put(out, keys[i], clone(v[keys[i]]));
          return out;
        }
        default:
          if (isView(v)) {
            const buf = clone(v.buffer);
            const C = v.constructor;
            out = new C(buf, v.byteOffset, apply(P.taLength, v, []));
            break;
          }
          throw namedError("DataCloneError", `${t} could not be cloned`);
      }
      apply(mapSet, seen, [v, out]);
      return out;
    };
    return clone(value);
  }

  return { structuredClone };
});
