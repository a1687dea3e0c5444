// crypto.getRandomValues and crypto.randomUUID (sandbox.md, Globals), from the host's CSPRNG.
(function installCrypto(G, P, need, kit) {
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
  // ─── crypto ──────────────────────────────────────────────────────────────────────────────
  function hexToBytesInto(hex, target) {
    for (let i = 0; i < target.length; i++) target[i] = P.parseInt(str(hex, sliceStr, [i * 2, i * 2 + 2]), 16);
  }
  const cryptoObject = {
    getRandomValues(array) {
      if (!isView(array) || array instanceof P.DataView || apply(reTest, /Float|Big/, [apply(P.taTag, array, []) || ""])) {
        if (!(isView(array) && apply(reTest, /BigInt/, [apply(P.taTag, array, []) || ""]))) throw namedError("TypeMismatchError", "getRandomValues needs an integer typed array");
      }
      if (array.byteLength > 65536) throw namedError("QuotaExceededError", `getRandomValues: ${array.byteLength} bytes requested, at most 65536 allowed`);
      const bytes = new Uint8ArrayCtor(array.buffer, array.byteOffset, array.byteLength);
      hexToBytesInto(kit.syncCall("randomBytes", { n: array.byteLength }), bytes);
      return array;
    },
    randomUUID() {
      const b = new Uint8ArrayCtor(16);
      hexToBytesInto(kit.syncCall("randomBytes", { n: 16 }), b);
      b[6] = (b[6] & 0x0f) | 0x40;
      b[8] = (b[8] & 0x3f) | 0x80;
      let h = "";
      for (let i = 0; i < 16; i++) { h += (b[i] < 16 ? "0" : "") + apply(P.numToString, b[i], [16]); if (i === 3 || i === 5 || i === 7 || i === 9) h += "-"; }
      return h;
    },
  };

  return { crypto: cryptoObject };
})
