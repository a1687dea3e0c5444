// How console output looks (sandbox.md, Globals): values formatted like Node's util.inspect at
// depth 2 on one line, and util.format's %-placeholders. Loaded at a script's first console call.
// Where Node cannot be followed: everything stays on one line (Node breaks arrays of more than 6
// items into rows); a promise's state cannot be read here (`Promise { <unknown> }`); an error is
// its `Name: message` and QuickJS's stack, without Node's indentation or extra properties; %o
// shows no hidden properties. No RegExp is used: the script may have replaced their methods.
(function installInspect(G, P, need, kit) {
  "use strict";
  const { apply, objectKeys, isArray, stringify, String: StringCtor, charCodeAt, isView } = P;
  const { strSlice: sliceStr, strIndexOf: indexOfStr, mapGet, mapSet } = P;
  const { str } = kit;
  const join = (items) => apply(P.arrayJoin, items, [", "]);
  const push = (list, item) => {
    list[list.length] = item;
  };
  // ─── inspect (console formatting) ────────────────────────────────────────────────────────
  /** Node's maxArrayLength and maxStringLength. */
  const MAX_ITEMS = 100;
  const MAX_STRING = 10000;
  const plural = (n, word) => `${n} ${word}${n > 1 ? "s" : ""}`;
  const moreItems = (n) => `... ${plural(n, "more item")}`;
  const hex2 = (n) => (n < 16 ? "0" : "") + str(apply(P.numToString, n, [16]), P.toUpperCase, []);
  const number = (n) => (n === 0 && 1 / n < 0 ? "-0" : StringCtor(n));

  /** A string in quotes, escaped as Node does: single quotes unless the text has some. */
  function quote(s) {
    let q = "'";
    if (str(s, indexOfStr, ["'"]) >= 0) {
      if (str(s, indexOfStr, ['"']) < 0) q = '"';
      else if (str(s, indexOfStr, ["`"]) < 0 && str(s, indexOfStr, ["${"]) < 0) q = "`";
    }
    let out = "";
    let last = 0;
    for (let i = 0; i < s.length; i++) {
      const c = str(s, charCodeAt, [i]);
      let escaped;
      if (c === 0x27 && q === "'") escaped = "\\'";
      else if (c === 0x5c) escaped = "\\\\";
      else if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) {
        escaped =
          c === 8 ? "\\b" : c === 9 ? "\\t" : c === 10 ? "\\n" : c === 12 ? "\\f" : c === 13 ? "\\r" : `\\x${hex2(c)}`;
      } else if (c >= 0xd800 && c <= 0xdfff) {
        if (c <= 0xdbff && i + 1 < s.length) {
          const d = str(s, charCodeAt, [i + 1]);
          if (d >= 0xdc00 && d <= 0xdfff) {
            i++;
            continue;
          }
        }
        escaped = `\\u${apply(P.numToString, c, [16])}`;
      } else continue;
      out += str(s, sliceStr, [last, i]) + escaped;
      last = i + 1;
    }
    return q + out + str(s, sliceStr, [last]) + q;
  }
  const quoteValue = (s) =>
    s.length > MAX_STRING
      ? `${quote(str(s, sliceStr, [0, MAX_STRING]))}... ${plural(s.length - MAX_STRING, "more character")}`
      : quote(s);

  const isDigit = (c) => c >= 0x30 && c <= 0x39;
  /** A key Node prints bare: /^[a-zA-Z_][a-zA-Z_0-9]*$/. */
  function isPlainKey(k) {
    if (k.length === 0) return false;
    for (let i = 0; i < k.length; i++) {
      const c = str(k, charCodeAt, [i]);
      const letter = (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f;
      if (!letter && !(i > 0 && isDigit(c))) return false;
    }
    return true;
  }
  /** An array index ("0", "1", … up to 2^32 - 2, no leading zeros). */
  function isIndex(k) {
    if (typeof k !== "string" || k.length === 0 || k.length > 10 || (k.length > 1 && k[0] === "0")) return false;
    for (let i = 0; i < k.length; i++) if (!isDigit(str(k, charCodeAt, [i]))) return false;
    return P.Number(k) < 4294967295;
  }
  const symbolText = (s) => apply(P.symbolToString, s, []);
  const keyText = (k) =>
    typeof k === "symbol" ? symbolText(k) : k === "__proto__" ? "['__proto__']" : isPlainKey(k) ? k : quote(k);

  /** An own property's descriptor, without a prototype (the script may have put `get` on Object.prototype). */
  const descriptor = (o, k) => {
    const d = P.getOwnPropertyDescriptor(o, k);
    return d === undefined ? undefined : P.setPrototypeOf(d, null);
  };
  /**
   * The enumerable own keys, strings then symbols, optionally without array indices: those come
   * first in own-key order, so the others are found from the end (a long array stays cheap).
   */
  function shownKeys(v, skipIndices) {
    const all = P.ownKeys(v);
    let start = 0;
    if (skipIndices) {
      start = all.length;
      while (start > 0 && !isIndex(all[start - 1])) start--;
    }
    const keys = [];
    for (let i = start; i < all.length; i++) {
      const k = all[i];
      const d = descriptor(v, k);
      if (d !== undefined && d.enumerable) push(keys, k);
    }
    return keys;
  }
  /** Succeeds only on an object with the internal slot the method needs (a brand check). */
  const has = (method, v) => {
    try {
      apply(method, v, []);
      return true;
    } catch {
      return false;
    }
  };
  /** As Node names an object: the first named constructor up its prototype chain (null without a prototype). */
  function constructorName(v) {
    for (let o = v; o !== null; o = P.getPrototypeOf(o)) {
      const d = descriptor(o, "constructor");
      if (
        d !== undefined &&
        typeof d.value === "function" &&
        typeof d.value.name === "string" &&
        d.value.name !== "" &&
        v instanceof d.value
      )
        return d.value.name;
    }
    return P.getPrototypeOf(v) === null ? null : "Object";
  }

  function inspect(value, options) {
    const maxDepth = options && typeof options.depth === "number" ? options.depth : 2;
    const seen = [];
    const circular = new P.Map();

    const fmt = (v, depth) => {
      switch (typeof v) {
        case "string":
          return quoteValue(v);
        case "number":
          return number(v);
        case "bigint":
          return `${StringCtor(v)}n`;
        case "boolean":
        case "undefined":
          return StringCtor(v);
        case "symbol":
          return symbolText(v);
      }
      if (v === null) return "null";
      for (let i = 0; i < seen.length; i++) {
        if (seen[i] === v) {
          if (!apply(P.mapHas, circular, [v])) apply(mapSet, circular, [v, apply(P.mapSize, circular, []) + 1]);
          return `[Circular *${apply(mapGet, circular, [v])}]`;
        }
      }
      try {
        return formatObject(v, depth);
      } catch {
        return "[object]";
      }
    };

    const property = (v, k, depth) => {
      const d = descriptor(v, k);
      const shown = d.get ? (d.set ? "[Getter/Setter]" : "[Getter]") : d.set ? "[Setter]" : fmt(d.value, depth + 1);
      return `${keyText(k)}: ${shown}`;
    };

    /** The items of an array, holes counted as Node does ("<3 empty items>"). */
    function arrayItems(v, depth) {
      const items = [];
      const length = v.length;
      for (let i = 0; i < length && items.length < MAX_ITEMS; i++) {
        if (descriptor(v, i) === undefined) return sparseItems(v, depth, items, i);
        push(items, fmt(v[i], depth + 1));
      }
      if (length > MAX_ITEMS) push(items, moreItems(length - MAX_ITEMS));
      return items;
    }
    function sparseItems(v, depth, items, index) {
      const keys = objectKeys(v);
      for (let i = index; i < keys.length && items.length < MAX_ITEMS; i++) {
        const key = keys[i];
        if (!isIndex(key)) break;
        const n = P.Number(key);
        if (n !== index) {
          push(items, `<${plural(n - index, "empty item")}>`);
          index = n;
          if (items.length === MAX_ITEMS) break;
        }
        push(items, fmt(v[key], depth + 1));
        index++;
      }
      const remaining = v.length - index;
      if (items.length !== MAX_ITEMS) {
        if (remaining > 0) push(items, `<${plural(remaining, "empty item")}>`);
      } else if (remaining > 0) push(items, moreItems(remaining));
      return items;
    }

    function functionBase(v, ctor) {
      const src = apply(P.fnToString, v, []);
      if (str(src, sliceStr, [0, 5]) === "class" && src[src.length - 1] === "}") {
        const d = descriptor(v, "name");
        const name = (d !== undefined && d.value) || "(anonymous)";
        const parent = P.getPrototypeOf(v);
        const superName = parent !== null ? parent.name : "";
        return `[class ${name}${ctor === null ? " extends [null prototype]" : superName ? ` extends ${superName}` : ""}]`;
      }
      const t = apply(P.objToString, v, []);
      const type =
        t === "[object AsyncFunction]"
          ? "AsyncFunction"
          : t === "[object GeneratorFunction]"
            ? "GeneratorFunction"
            : t === "[object AsyncGeneratorFunction]"
              ? "AsyncGeneratorFunction"
              : "Function";
      return `[${type}${ctor === null ? " (null prototype)" : ""}${v.name ? `: ${v.name}` : " (anonymous)"}]`;
    }

    function formatObject(v, depth) {
      const ctor = constructorName(v);
      let tag = "";
      const ownTag = descriptor(v, P.toStringTag);
      if (ownTag === undefined || !ownTag.enumerable) {
        const t = v[P.toStringTag];
        if (typeof t === "string") tag = t;
      }
      /** Node's prefix: "Foo(2) [Tag] ", "[Object: null prototype] ". */
      const prefix = (fallback, size = "") => {
        if (ctor === null)
          return `[${fallback}${size}: null prototype] ${tag !== "" && tag !== fallback ? `[${tag}] ` : ""}`;
        return `${ctor}${size} ${tag !== "" && tag !== ctor ? `[${tag}] ` : ""}`;
      };
      const t = apply(P.objToString, v, []);
      const typedName = isView(v) ? apply(P.taTag, v, []) : undefined;
      let keys;
      let base = "";
      let open = "{";
      let close = "}";
      let items;
      let entries;
      if (isArray(v)) {
        keys = shownKeys(v, true);
        open = ctor === "Array" && tag === "" ? "[" : `${prefix("Array", `(${v.length})`)}[`;
        close = "]";
        if (v.length === 0 && keys.length === 0) return `${open}]`;
        entries = () => arrayItems(v, depth);
      } else if (typedName !== undefined) {
        keys = shownKeys(v, true);
        const length = apply(P.taLength, v, []);
        open = `${prefix(typedName, `(${length})`)}[`;
        close = "]";
        if (length === 0 && keys.length === 0) return `${open}]`;
        entries = () => {
          const out = [];
          for (let i = 0; i < length && i < MAX_ITEMS; i++) push(out, fmt(v[i], depth + 1));
          if (length > MAX_ITEMS) push(out, moreItems(length - MAX_ITEMS));
          return out;
        };
      } else if (has(P.mapSize, v)) {
        keys = shownKeys(v, false);
        const size = apply(P.mapSize, v, []);
        open = `${prefix("Map", `(${size})`)}{`;
        if (size === 0 && keys.length === 0) return `${open}}`;
        entries = () => {
          const out = [];
          for (const entry of apply(P.mapEntries, v, [])) {
            if (out.length === MAX_ITEMS) break;
            push(out, `${fmt(entry[0], depth + 1)} => ${fmt(entry[1], depth + 1)}`);
          }
          if (size > MAX_ITEMS) push(out, moreItems(size - MAX_ITEMS));
          return out;
        };
      } else if (has(P.setSize, v)) {
        keys = shownKeys(v, false);
        const size = apply(P.setSize, v, []);
        open = `${prefix("Set", `(${size})`)}{`;
        if (size === 0 && keys.length === 0) return `${open}}`;
        entries = () => {
          const out = [];
          for (const x of apply(P.setValues, v, [])) {
            if (out.length === MAX_ITEMS) break;
            push(out, fmt(x, depth + 1));
          }
          if (size > MAX_ITEMS) push(out, moreItems(size - MAX_ITEMS));
          return out;
        };
      } else {
        keys = shownKeys(v, t === "[object String]");
        if (typeof v === "function") {
          base = functionBase(v, ctor);
          if (keys.length === 0) return base;
        } else if (has(P.dateGetTime, v)) {
          const time = apply(P.dateGetTime, v, []);
          base = time === time ? apply(P.dateToISOString, v, []) : "Invalid Date";
          if (keys.length === 0) return base;
        } else if (t === "[object RegExp]") {
          base = `/${v.source}/${v.flags}`;
          if (keys.length === 0) return base;
        } else if (t === "[object Error]") {
          // Not Node's layout (sandbox.md): the error's own line, then QuickJS's stack as it is.
          const s = v.stack;
          const head = apply(P.errToString, v, []);
          if (typeof s !== "string" || s === "") return `[${head}]`;
          return s[s.length - 1] === "\n" ? `${head}\n${str(s, sliceStr, [0, -1])}` : `${head}\n${s}`;
        } else if (
          t === "[object Number]" ||
          t === "[object String]" ||
          t === "[object Boolean]" ||
          t === "[object Symbol]" ||
          t === "[object BigInt]"
        ) {
          const kind = str(t, sliceStr, [8, -1]);
          const shown =
            kind === "Number"
              ? number(P.Number(v))
              : kind === "String"
                ? quoteValue(StringCtor(v))
                : kind === "Symbol"
                  ? symbolText(v)
                  : kind === "BigInt"
                    ? `${StringCtor(v)}n`
                    : StringCtor(v);
          base = `[${kind}: ${shown}]`;
          if (keys.length === 0) return base;
        } else if (t === "[object ArrayBuffer]") {
          const bytes = new P.Uint8Array(v);
          open = `${prefix("ArrayBuffer")}{`;
          entries = () => {
            let hex = "";
            for (let i = 0; i < bytes.length && i < MAX_ITEMS; i++)
              hex += (i > 0 ? " " : "") + (bytes[i] < 16 ? "0" : "") + apply(P.numToString, bytes[i], [16]);
            if (bytes.length > MAX_ITEMS) hex += ` ... ${plural(bytes.length - MAX_ITEMS, "more byte")}`;
            return [`[Uint8Contents]: <${hex}>`, `[byteLength]: ${bytes.length}`];
          };
        } else if (v instanceof P.DataView) {
          open = `${prefix("DataView")}{`;
          entries = () => [
            `[byteLength]: ${number(v.byteLength)}`,
            `[byteOffset]: ${number(v.byteOffset)}`,
            `[buffer]: ${fmt(v.buffer, depth + 1)}`,
          ];
        } else if (t === "[object Promise]") {
          // QuickJS gives no way to read a promise's state from inside the VM.
          open = `${prefix("Promise")}{`;
          entries = () => ["<unknown>"];
        } else if (t === "[object WeakMap]" || t === "[object WeakSet]") {
          open = `${prefix(str(t, sliceStr, [8, -1]))}{`;
          entries = () => ["<items unknown>"];
        } else {
          open = ctor === "Object" && tag === "" ? "{" : `${prefix("Object")}{`;
          if (keys.length === 0) return `${open}}`;
        }
      }
      if (depth > maxDepth) {
        if (typeof v === "function") return "[Function]";
        const name = str(prefix(typedName || (isArray(v) ? "Array" : "Object")), sliceStr, [0, -1]);
        return ctor === null ? name : `[${name}]`;
      }
      push(seen, v);
      try {
        items = entries ? entries() : [];
        for (let i = 0; i < keys.length; i++) push(items, property(v, keys[i], depth));
      } finally {
        seen.length--;
      }
      const ref = apply(mapGet, circular, [v]);
      if (ref !== undefined) base = base === "" ? `<ref *${ref}>` : `<ref *${ref}> ${base}`;
      const body = items.length === 0 ? `${open}${close}` : `${open} ${join(items)} ${close}`;
      return base === "" ? body : `${base} ${body}`;
    }

    return fmt(value, 0);
  }

  // ─── util.format ─────────────────────────────────────────────────────────────────────────
  /** Whether `%s` should inspect the object (Node: no toString of its own making). */
  function builtInToString(o) {
    try {
      const f = o.toString;
      if (typeof f !== "function") return true;
      if (descriptor(o, "toString") !== undefined) return false;
      return str(apply(P.fnToString, f, []), indexOfStr, ["[native code]"]) >= 0;
    } catch {
      return true;
    }
  }

  /** One log line from console's arguments, as Node's util.format builds it. */
  function formatLogLine(args) {
    const first = args[0];
    let a = 0;
    let out = "";
    let sep = "";
    if (typeof first === "string") {
      if (args.length === 1) return first;
      let last = 0;
      for (let i = 0; i < first.length - 1; i++) {
        if (first[i] !== "%") continue;
        const c = first[++i];
        if (a + 1 !== args.length) {
          let text;
          if (c === "s") {
            const x = args[++a];
            text =
              typeof x === "number"
                ? number(x)
                : typeof x === "bigint"
                  ? `${StringCtor(x)}n`
                  : typeof x !== "object" || x === null || !builtInToString(x)
                    ? StringCtor(x)
                    : inspect(x, { depth: 0 });
          } else if (c === "j") {
            try {
              text = stringify(args[++a]);
            } catch {
              text = "[Circular]";
            }
          } else if (c === "d" || c === "i" || c === "f") {
            const x = args[++a];
            if (typeof x === "bigint" && c !== "f") text = `${StringCtor(x)}n`;
            else if (typeof x === "symbol") text = "NaN";
            else text = number(c === "d" ? P.Number(x) : c === "i" ? P.parseInt(x) : P.parseFloat(x));
          } else if (c === "O") text = inspect(args[++a]);
          else if (c === "o") text = inspect(args[++a], { depth: 4 });
          else if (c === "c") {
            a++;
            text = "";
          } else if (c === "%") {
            out += str(first, sliceStr, [last, i]);
            last = i + 1;
            continue;
          } else continue;
          if (last !== i - 1) out += str(first, sliceStr, [last, i - 1]);
          out += text;
          last = i + 1;
        } else if (c === "%") {
          out += str(first, sliceStr, [last, i]);
          last = i + 1;
        }
      }
      if (last !== 0) {
        a++;
        sep = " ";
        if (last < first.length) out += str(first, sliceStr, [last]);
      }
    }
    for (; a < args.length; a++) {
      const x = args[a];
      out += sep + (typeof x === "string" ? x : inspect(x));
      sep = " ";
    }
    return out;
  }

  return { inspect, formatLogLine };
});
