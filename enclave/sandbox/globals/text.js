// The text globals (docs/design/sandbox.md, Globals), loaded the first time a script touches one of them:
// TextEncoder / TextDecoder (UTF-8) and atob / btoa with the Web's exact rules. Uses only the
// primordials `P` captured before the script ran.
(function installText(G, P, need, kit) {
  "use strict";
  const {
    apply,
    String: StringCtor,
    fromCharCode,
    charCodeAt,
    strSlice: sliceStr,
    toLowerCase,
    isView,
    Uint8Array: Uint8ArrayCtor,
    ArrayBuffer: ArrayBufferCtor,
    TypeError: TypeErrorCtor,
    RangeError: RangeErrorCtor,
  } = P;
  const { str, namedError } = kit;
  // ─── UTF-8 ───────────────────────────────────────────────────────────────────────────────
  function utf8Encode(input) {
    const s = StringCtor(input);
    const out = [];
    for (let i = 0; i < s.length; i++) {
      let c = str(s, charCodeAt, [i]);
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
        const d = str(s, charCodeAt, [i + 1]);
        if (d >= 0xdc00 && d <= 0xdfff) {
          c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
          i++;
        } else c = 0xfffd;
      } else if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
      if (c < 0x80) out[out.length] = c;
      else if (c < 0x800) {
        out[out.length] = 0xc0 | (c >> 6);
        out[out.length] = 0x80 | (c & 63);
      } else if (c < 0x10000) {
        out[out.length] = 0xe0 | (c >> 12);
        out[out.length] = 0x80 | ((c >> 6) & 63);
        out[out.length] = 0x80 | (c & 63);
      } else {
        out[out.length] = 0xf0 | (c >> 18);
        out[out.length] = 0x80 | ((c >> 12) & 63);
        out[out.length] = 0x80 | ((c >> 6) & 63);
        out[out.length] = 0x80 | (c & 63);
      }
    }
    // Without a prototype the array is read by index: `new Uint8Array(array)` would otherwise
    // iterate it with the script's Array.prototype[Symbol.iterator].
    return new Uint8ArrayCtor(P.setPrototypeOf(out, null));
  }

  function utf8Decode(bytes, fatal) {
    let out = "";
    let chunk = [];
    const flush = () => {
      if (chunk.length) {
        out += apply(fromCharCode, undefined, chunk);
        chunk = [];
      }
    };
    const push = (cp) => {
      if (cp > 0xffff) {
        cp -= 0x10000;
        chunk[chunk.length] = 0xd800 + (cp >> 10);
        chunk[chunk.length] = 0xdc00 + (cp & 0x3ff);
      } else chunk[chunk.length] = cp;
      if (chunk.length > 8000) flush();
    };
    const bad = () => {
      if (fatal) throw new TypeErrorCtor("The encoded data was not valid utf-8");
      push(0xfffd);
    };
    for (let i = 0; i < bytes.length; ) {
      const b = bytes[i];
      let need = 0,
        cp = 0,
        min = 0;
      if (b < 0x80) {
        push(b);
        i++;
        continue;
      } else if (b >= 0xc2 && b <= 0xdf) {
        need = 1;
        cp = b & 0x1f;
        min = 0x80;
      } else if (b >= 0xe0 && b <= 0xef) {
        need = 2;
        cp = b & 0x0f;
        min = 0x800;
      } else if (b >= 0xf0 && b <= 0xf4) {
        need = 3;
        cp = b & 0x07;
        min = 0x10000;
      } else {
        bad();
        i++;
        continue;
      }
      // The WHATWG decoder's bounds for the second byte: no overlong forms, surrogates or code
      // points past U+10FFFF; a byte out of bounds ends the bad sequence (one U+FFFD per maximal subpart).
      const lower = b === 0xe0 ? 0xa0 : b === 0xf0 ? 0x90 : 0x80;
      const upper = b === 0xed ? 0x9f : b === 0xf4 ? 0x8f : 0xbf;
      let j = 1;
      for (; j <= need; j++) {
        const n = bytes[i + j];
        if (n === undefined || n < (j === 1 ? lower : 0x80) || n > (j === 1 ? upper : 0xbf)) break;
        cp = (cp << 6) | (n & 0x3f);
      }
      if (j <= need || cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        bad();
        i += j;
        continue;
      }
      push(cp);
      i += need + 1;
    }
    flush();
    return out;
  }

  /** The label without leading and trailing ASCII whitespace, as the Encoding standard reads it. */
  function trimAscii(s) {
    const ws = (c) => c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d || c === 0x20;
    let start = 0;
    let end = s.length;
    while (start < end && ws(str(s, charCodeAt, [start]))) start++;
    while (end > start && ws(str(s, charCodeAt, [end - 1]))) end--;
    return str(s, sliceStr, [start, end]);
  }

  function toBytes(input) {
    if (input === undefined) return new Uint8ArrayCtor(0);
    if (input instanceof ArrayBufferCtor) return new Uint8ArrayCtor(input);
    if (isView(input)) return new Uint8ArrayCtor(input.buffer, input.byteOffset, input.byteLength);
    throw new TypeErrorCtor("The provided value is not an ArrayBuffer or ArrayBufferView");
  }

  class TextEncoder {
    get encoding() {
      return "utf-8";
    }
    encode(input = "") {
      return utf8Encode(input);
    }
    encodeInto(source, destination) {
      if (!(destination instanceof Uint8ArrayCtor))
        throw new TypeErrorCtor("encodeInto: the destination must be a Uint8Array");
      // Whole characters only: one that does not fit ends the copy, and `read` counts the UTF-16
      // code units of the characters written.
      const s = StringCtor(source);
      const room = destination.length;
      let read = 0;
      let written = 0;
      while (read < s.length) {
        let c = str(s, charCodeAt, [read]);
        let units = 1;
        if (c >= 0xd800 && c <= 0xdbff && read + 1 < s.length) {
          const d = str(s, charCodeAt, [read + 1]);
          if (d >= 0xdc00 && d <= 0xdfff) {
            c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
            units = 2;
          }
        }
        if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
        const n = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
        if (written + n > room) break;
        if (n === 1) destination[written] = c;
        else {
          destination[written] = n === 2 ? 0xc0 | (c >> 6) : n === 3 ? 0xe0 | (c >> 12) : 0xf0 | (c >> 18);
          for (let k = 1; k < n; k++) destination[written + k] = 0x80 | ((c >> (6 * (n - 1 - k))) & 63);
        }
        written += n;
        read += units;
      }
      return { read, written };
    }
  }

  class TextDecoder {
    #fatal;
    #ignoreBOM;
    constructor(label = "utf-8", options = {}) {
      const l = str(trimAscii(StringCtor(label)), toLowerCase, []);
      if (
        l !== "utf-8" &&
        l !== "utf8" &&
        l !== "unicode-1-1-utf-8" &&
        l !== "unicode11utf8" &&
        l !== "unicode20utf8" &&
        l !== "x-unicode20utf8"
      )
        throw new RangeErrorCtor(`The encoding "${label}" is not supported`);
      this.#fatal = !!(options && options.fatal);
      this.#ignoreBOM = !!(options && options.ignoreBOM);
    }
    get encoding() {
      return "utf-8";
    }
    get fatal() {
      return this.#fatal;
    }
    get ignoreBOM() {
      return this.#ignoreBOM;
    }
    decode(input) {
      let bytes = toBytes(input);
      if (!this.#ignoreBOM && bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf)
        bytes = new Uint8ArrayCtor(bytes.buffer, bytes.byteOffset + 3, bytes.length - 3);
      return utf8Decode(bytes, this.#fatal);
    }
  }

  // ─── base64 ──────────────────────────────────────────────────────────────────────────────
  const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

  function btoa(input) {
    const s = StringCtor(input);
    let out = "";
    for (let i = 0; i < s.length; i += 3) {
      const a = str(s, charCodeAt, [i]);
      const b = i + 1 < s.length ? str(s, charCodeAt, [i + 1]) : 0;
      const c = i + 2 < s.length ? str(s, charCodeAt, [i + 2]) : 0;
      if (a > 255 || b > 255 || c > 255)
        throw namedError(
          "InvalidCharacterError",
          "Invalid character: the string contains characters outside of the Latin1 range",
        );
      out +=
        B64[a >> 2] +
        B64[((a & 3) << 4) | (b >> 4)] +
        (i + 1 < s.length ? B64[((b & 15) << 2) | (c >> 6)] : "=") +
        (i + 2 < s.length ? B64[c & 63] : "=");
    }
    return out;
  }

  // The forgiving-base64 decode in one pass, without RegExps (the script may have replaced their
  // methods): ASCII whitespace is skipped; "=" may only end the input, once or twice, where the
  // padded length is a multiple of 4. A table without a prototype maps each character.
  const SPACE = -1;
  const PAD = -2;
  const B64_TABLE = { __proto__: null, "\t": SPACE, "\n": SPACE, "\f": SPACE, "\r": SPACE, " ": SPACE, "=": PAD };
  for (let i = 0; i < 64; i++) B64_TABLE[B64[i]] = i;
  function atob(input) {
    const s = StringCtor(input);
    const invalid = () => namedError("InvalidCharacterError", "The string to be decoded is not correctly encoded");
    let out = "";
    let chunk = [];
    let data = 0,
      pads = 0;
    let buffer = 0,
      bits = 0;
    for (let i = 0; i < s.length; i++) {
      const v = B64_TABLE[s[i]];
      if (v === SPACE) continue;
      if (v === PAD) {
        pads++;
        continue;
      }
      if (v === undefined || pads > 0) throw invalid();
      data++;
      buffer = ((buffer << 6) | v) & 0xffffff;
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        chunk[chunk.length] = (buffer >> bits) & 255;
        if (chunk.length === 8192) {
          out += apply(fromCharCode, undefined, chunk);
          chunk = [];
        }
      }
    }
    if (pads > 2 || (pads > 0 && (data + pads) % 4 !== 0) || data % 4 === 1) throw invalid();
    return chunk.length === 0 ? out : out + apply(fromCharCode, undefined, chunk);
  }

  return { TextEncoder, TextDecoder, atob, btoa, utf8Encode, utf8Decode };
});
