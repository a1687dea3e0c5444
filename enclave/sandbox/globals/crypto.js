// crypto.getRandomValues and crypto.randomUUID (docs/design/sandbox.md, Globals), from the host's CSPRNG.
(function installCrypto(G, P, need, kit) {
  "use strict";
  const { apply, strSlice: sliceStr, isView, Uint8Array: Uint8ArrayCtor } = P;
  const { str, namedError } = kit;
  // ─── crypto ──────────────────────────────────────────────────────────────────────────────
  function hexToBytesInto(hex, target) {
    for (let i = 0; i < target.length; i++) target[i] = P.parseInt(str(hex, sliceStr, [i * 2, i * 2 + 2]), 16);
  }
  // The integer typed arrays, by their toStringTag (undefined for a DataView): no RegExp, whose
  // methods the script may have replaced.
  const INTEGER_ARRAYS = {
    __proto__: null,
    Int8Array: true,
    Uint8Array: true,
    Uint8ClampedArray: true,
    Int16Array: true,
    Uint16Array: true,
    Int32Array: true,
    Uint32Array: true,
    BigInt64Array: true,
    BigUint64Array: true,
  };
  const cryptoObject = {
    getRandomValues(array) {
      const tag = isView(array) ? apply(P.taTag, array, []) : undefined;
      if (tag === undefined || INTEGER_ARRAYS[tag] !== true)
        throw namedError("TypeMismatchError", "getRandomValues needs an integer typed array");
      if (array.byteLength > 65536)
        throw namedError(
          "QuotaExceededError",
          `getRandomValues: ${array.byteLength} bytes requested, at most 65536 allowed`,
        );
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
      for (let i = 0; i < 16; i++) {
        h += (b[i] < 16 ? "0" : "") + apply(P.numToString, b[i], [16]);
        if (i === 3 || i === 5 || i === 7 || i === 9) h += "-";
      }
      return h;
    },
  };

  return { crypto: cryptoObject };
});
