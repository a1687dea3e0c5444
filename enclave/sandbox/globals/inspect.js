// How console output looks (docs/design/sandbox.md, Globals): values formatted like Node's util.inspect at
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

  // One inspect call's state, passed down the formatting: `maxDepth`; `seen`, the objects being
  // formatted (their chain from the value), which is how a circular reference is found; and
  // `circular`, each object found circular with its number (`<ref *1>`, `[Circular *1]`).
  function inspect(value, options) {
    const maxDepth = options && typeof options.depth === "number" ? options.depth : 2;
    const seen = [];
    const circular = new P.Map();
    return fmt({ maxDepth, seen, circular }, value, 0);
  }

  /** A primitive's text (null included); undefined for an object or a function. */
  function primitive(v) {
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
    return undefined;
  }

  /** `[Circular *n]` if `v` is already being formatted (numbering it on its first such reference), else undefined. */
  function circularRef(ctx, v) {
    const { seen, circular } = ctx;
    for (let i = 0; i < seen.length; i++) {
      if (seen[i] === v) {
        if (!apply(P.mapHas, circular, [v])) apply(mapSet, circular, [v, apply(P.mapSize, circular, []) + 1]);
        return `[Circular *${apply(mapGet, circular, [v])}]`;
      }
    }
    return undefined;
  }

  function fmt(ctx, v, depth) {
    const text = primitive(v);
    if (text !== undefined) return text;
    const ref = circularRef(ctx, v);
    if (ref !== undefined) return ref;
    try {
      return formatObject(ctx, v, depth);
    } catch {
      return "[object]";
    }
  }

  function property(ctx, v, k, depth) {
    const d = descriptor(v, k);
    const shown = d.get ? (d.set ? "[Getter/Setter]" : "[Getter]") : d.set ? "[Setter]" : fmt(ctx, d.value, depth + 1);
    return `${keyText(k)}: ${shown}`;
  }

  /** The items of an array, holes counted as Node does ("<3 empty items>"). */
  function arrayItems(ctx, v, depth) {
    const items = [];
    const length = v.length;
    for (let i = 0; i < length && items.length < MAX_ITEMS; i++) {
      if (descriptor(v, i) === undefined) return sparseItems(ctx, v, depth, items, i);
      push(items, fmt(ctx, v[i], depth + 1));
    }
    if (length > MAX_ITEMS) push(items, moreItems(length - MAX_ITEMS));
    return items;
  }
  function sparseItems(ctx, v, depth, items, index) {
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
      push(items, fmt(ctx, v[key], depth + 1));
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

  // ─── one object ──────────────────────────────────────────────────────────────────────────
  // formatObject reads what every kind needs into a record `o` — { ctx, v, depth, ctor, tag, t
  // (Object.prototype.toString's "[object X]"), typedName } — and hands it to its kind's function,
  // which answers either the finished text or a shape (below) that formatObject completes.

  /** The Symbol.toStringTag Node shows beside the name ("" for none): not an own enumerable one, shown as a property. */
  function stringTag(v) {
    const ownTag = descriptor(v, P.toStringTag);
    if (ownTag === undefined || !ownTag.enumerable) {
      const t = v[P.toStringTag];
      if (typeof t === "string") return t;
    }
    return "";
  }
  /** Node's prefix: "Foo(2) [Tag] ", "[Object: null prototype] ". */
  function prefix(o, fallback, size = "") {
    const { ctor, tag } = o;
    if (ctor === null)
      return `[${fallback}${size}: null prototype] ${tag !== "" && tag !== fallback ? `[${tag}] ` : ""}`;
    return `${ctor}${size} ${tag !== "" && tag !== ctor ? `[${tag}] ` : ""}`;
  }
  /**
   * How an object is shown within the depth limit: `base open items close`, where the items are what
   * `entries` lists (called only then; none without it) followed by the `keys` properties.
   */
  const shape = (keys, open, entries, base = "", close = "}") => ({ keys, open, entries, base, close });

  function formatObject(ctx, v, depth) {
    const ctor = constructorName(v);
    const tag = stringTag(v);
    const t = apply(P.objToString, v, []);
    const typedName = isView(v) ? apply(P.taTag, v, []) : undefined;
    const o = { ctx, v, depth, ctor, tag, t, typedName };
    const s = isArray(v)
      ? arrayShape(o)
      : typedName !== undefined
        ? typedArrayShape(o)
        : has(P.mapSize, v)
          ? mapShape(o)
          : has(P.setSize, v)
            ? setShape(o)
            : otherShape(o);
    if (typeof s === "string") return s;
    if (depth > ctx.maxDepth) return beyondDepth(o);
    return container(o, s);
  }

  /** An object past the depth limit: its name alone ("[Foo]", "[Array]", "[Function]"). */
  function beyondDepth(o) {
    if (typeof o.v === "function") return "[Function]";
    const name = str(prefix(o, o.typedName || (isArray(o.v) ? "Array" : "Object")), sliceStr, [0, -1]);
    return o.ctor === null ? name : `[${name}]`;
  }

  /** The shape's text: its entries and properties formatted with the object on `seen`, then `<ref *n>` if they met it. */
  function container(o, s) {
    const { ctx, v } = o;
    let items;
    push(ctx.seen, v);
    try {
      items = s.entries ? s.entries() : [];
      for (let i = 0; i < s.keys.length; i++) push(items, property(ctx, v, s.keys[i], o.depth));
    } finally {
      ctx.seen.length--;
    }
    let base = s.base;
    const ref = apply(mapGet, ctx.circular, [v]);
    if (ref !== undefined) base = base === "" ? `<ref *${ref}>` : `<ref *${ref}> ${base}`;
    const body = items.length === 0 ? `${s.open}${s.close}` : `${s.open} ${join(items)} ${s.close}`;
    return base === "" ? body : `${base} ${body}`;
  }

  function arrayShape(o) {
    const { v } = o;
    const keys = shownKeys(v, true);
    const open = o.ctor === "Array" && o.tag === "" ? "[" : `${prefix(o, "Array", `(${v.length})`)}[`;
    if (v.length === 0 && keys.length === 0) return `${open}]`;
    return shape(keys, open, () => arrayItems(o.ctx, v, o.depth), "", "]");
  }

  function typedArrayShape(o) {
    const { ctx, v, depth } = o;
    const keys = shownKeys(v, true);
    const length = apply(P.taLength, v, []);
    const open = `${prefix(o, o.typedName, `(${length})`)}[`;
    if (length === 0 && keys.length === 0) return `${open}]`;
    const entries = () => {
      const out = [];
      for (let i = 0; i < length && i < MAX_ITEMS; i++) push(out, fmt(ctx, v[i], depth + 1));
      if (length > MAX_ITEMS) push(out, moreItems(length - MAX_ITEMS));
      return out;
    };
    return shape(keys, open, entries, "", "]");
  }

  function mapShape(o) {
    const { ctx, v, depth } = o;
    const keys = shownKeys(v, false);
    const size = apply(P.mapSize, v, []);
    const open = `${prefix(o, "Map", `(${size})`)}{`;
    if (size === 0 && keys.length === 0) return `${open}}`;
    const entries = () => {
      const out = [];
      for (const entry of apply(P.mapEntries, v, [])) {
        if (out.length === MAX_ITEMS) break;
        push(out, `${fmt(ctx, entry[0], depth + 1)} => ${fmt(ctx, entry[1], depth + 1)}`);
      }
      if (size > MAX_ITEMS) push(out, moreItems(size - MAX_ITEMS));
      return out;
    };
    return shape(keys, open, entries);
  }

  function setShape(o) {
    const { ctx, v, depth } = o;
    const keys = shownKeys(v, false);
    const size = apply(P.setSize, v, []);
    const open = `${prefix(o, "Set", `(${size})`)}{`;
    if (size === 0 && keys.length === 0) return `${open}}`;
    const entries = () => {
      const out = [];
      for (const x of apply(P.setValues, v, [])) {
        if (out.length === MAX_ITEMS) break;
        push(out, fmt(ctx, x, depth + 1));
      }
      if (size > MAX_ITEMS) push(out, moreItems(size - MAX_ITEMS));
      return out;
    };
    return shape(keys, open, entries);
  }

  /** Anything else: a value with a text of its own (function, date, …), an error, or a built-in or plain object. */
  function otherShape(o) {
    const { v, t } = o;
    const keys = shownKeys(v, t === "[object String]");
    let base;
    if (typeof v === "function") base = functionBase(v, o.ctor);
    else if (has(P.dateGetTime, v)) {
      const time = apply(P.dateGetTime, v, []);
      base = time === time ? apply(P.dateToISOString, v, []) : "Invalid Date";
    } else if (t === "[object RegExp]") base = `/${v.source}/${v.flags}`;
    else if (t === "[object Error]") return errorText(v);
    else if (
      t === "[object Number]" ||
      t === "[object String]" ||
      t === "[object Boolean]" ||
      t === "[object Symbol]" ||
      t === "[object BigInt]"
    )
      base = boxedText(v, t);
    else return builtInShape(o, keys);
    return keys.length === 0 ? base : shape(keys, "{", undefined, base);
  }

  function errorText(v) {
    // Not Node's layout (docs/design/sandbox.md): the error's own line, then QuickJS's stack as it is.
    const s = v.stack;
    const head = apply(P.errToString, v, []);
    if (typeof s !== "string" || s === "") return `[${head}]`;
    return s[s.length - 1] === "\n" ? `${head}\n${str(s, sliceStr, [0, -1])}` : `${head}\n${s}`;
  }

  /** A primitive's wrapper object, "[Number: 3]", its tag `t` being one of the five such. */
  function boxedText(v, t) {
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
    return `[${kind}: ${shown}]`;
  }

  /** An ArrayBuffer, a DataView, a promise, a WeakMap or WeakSet, or else a plain object. */
  function builtInShape(o, keys) {
    const { ctx, v, depth, t } = o;
    if (t === "[object ArrayBuffer]") {
      const bytes = new P.Uint8Array(v);
      return shape(keys, `${prefix(o, "ArrayBuffer")}{`, () => bufferItems(bytes));
    }
    if (v instanceof P.DataView) {
      const entries = () => [
        `[byteLength]: ${number(v.byteLength)}`,
        `[byteOffset]: ${number(v.byteOffset)}`,
        `[buffer]: ${fmt(ctx, v.buffer, depth + 1)}`,
      ];
      return shape(keys, `${prefix(o, "DataView")}{`, entries);
    }
    // QuickJS gives no way to read a promise's state from inside the VM.
    if (t === "[object Promise]") return shape(keys, `${prefix(o, "Promise")}{`, () => ["<unknown>"]);
    if (t === "[object WeakMap]" || t === "[object WeakSet]")
      return shape(keys, `${prefix(o, str(t, sliceStr, [8, -1]))}{`, () => ["<items unknown>"]);
    const open = o.ctor === "Object" && o.tag === "" ? "{" : `${prefix(o, "Object")}{`;
    return keys.length === 0 ? `${open}}` : shape(keys, open);
  }

  function bufferItems(bytes) {
    let hex = "";
    for (let i = 0; i < bytes.length && i < MAX_ITEMS; i++)
      hex += (i > 0 ? " " : "") + (bytes[i] < 16 ? "0" : "") + apply(P.numToString, bytes[i], [16]);
    if (bytes.length > MAX_ITEMS) hex += ` ... ${plural(bytes.length - MAX_ITEMS, "more byte")}`;
    return [`[Uint8Contents]: <${hex}>`, `[byteLength]: ${bytes.length}`];
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

  /** Whether `c` (the letter after a "%") is a placeholder that takes an argument. */
  const takesArgument = (c) =>
    c === "s" || c === "j" || c === "d" || c === "i" || c === "f" || c === "O" || c === "o" || c === "c";
  /** What a placeholder that takes an argument is replaced with, `args[a]` being its argument. */
  function placeholderText(c, args, a) {
    if (c === "c") return "";
    const x = args[a];
    if (c === "s") {
      return typeof x === "number"
        ? number(x)
        : typeof x === "bigint"
          ? `${StringCtor(x)}n`
          : typeof x !== "object" || x === null || !builtInToString(x)
            ? StringCtor(x)
            : inspect(x, { depth: 0 });
    }
    if (c === "j") {
      try {
        return stringify(x);
      } catch {
        return "[Circular]";
      }
    }
    if (c === "O") return inspect(x);
    if (c === "o") return inspect(x, { depth: 4 });
    // %d, %i, %f
    if (typeof x === "bigint" && c !== "f") return `${StringCtor(x)}n`;
    if (typeof x === "symbol") return "NaN";
    return number(c === "d" ? P.Number(x) : c === "i" ? P.parseInt(x) : P.parseFloat(x));
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
        if (c === "%") {
          out += str(first, sliceStr, [last, i]);
          last = i + 1;
        } else if (a + 1 !== args.length && takesArgument(c)) {
          const text = placeholderText(c, args, ++a);
          if (last !== i - 1) out += str(first, sliceStr, [last, i - 1]);
          out += text;
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
