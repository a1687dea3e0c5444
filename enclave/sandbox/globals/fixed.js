// Object.defineProperty, Object.defineProperties and Reflect.defineProperty as the language has them,
// for the global properties the sandbox fixes (core.js: Sigil, eval and Function, non-writable and
// non-configurable): QuickJS lets [[DefineOwnProperty]] on the global object change the value of
// such a data property (measured: Object.defineProperty(globalThis, "Sigil", {value: 1}) replaced
// it), which the language forbids. Here that change is refused, as the language says (TypeError, or
// false from Reflect); every other definition goes to the real function, the key converted once.
// Loaded the first time a script reads one of the three.
(function installFixed(G, P) {
  "use strict";
  const { apply, getOwnPropertyDescriptor, is } = P;
  const FIXED = P.freeze(["Sigil", "eval", "Function"]);
  const changesFixed = (o, k, d) =>
    o === G &&
    (k === "Sigil" || k === "eval" || k === "Function") &&
    d !== null &&
    typeof d === "object" &&
    "value" in d &&
    !is(d.value, G[k]);
  const refuse = (k) => {
    throw new P.TypeError(`Cannot redefine property: ${k}`);
  };
  const key = (p) => (typeof p === "symbol" ? p : P.String(p));
  // Method syntax: each has the built-in's name and length and is no constructor.
  const fixed = {
    defineProperty(o, p, attributes) {
      const k = key(p);
      if (changesFixed(o, k, attributes)) refuse(k);
      return apply(P.defineProperty, undefined, [o, k, attributes]);
    },
    defineProperties(o, properties) {
      if (o === G && properties !== null && typeof properties === "object") {
        for (let i = 0; i < FIXED.length; i++) {
          const k = FIXED[i];
          if (getOwnPropertyDescriptor(properties, k) !== undefined && changesFixed(o, k, properties[k])) refuse(k);
        }
      }
      return apply(P.defineProperties, undefined, [o, properties]);
    },
  };
  const reflect = {
    defineProperty(o, p, attributes) {
      const k = key(p);
      return changesFixed(o, k, attributes) ? false : apply(P.reflectDefineProperty, undefined, [o, k, attributes]);
    },
  };
  return {
    objectDefineProperty: fixed.defineProperty,
    defineProperties: fixed.defineProperties,
    reflectDefineProperty: reflect.defineProperty,
  };
});
