// How console output looks (sandbox.md, Globals): values formatted like Node's util.inspect at
// depth 2 on one line, and util.format's %-placeholders. Loaded at a script's first console call.
(function installInspect(G, P, need, kit) {
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
  const join = (items) => apply(P.arrayJoin, items, [", "]);
  // ─── inspect (console formatting) ────────────────────────────────────────────────────────
  const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
  function quote(s) {
    const escaped = str(str(str(s, replaceStr, [/\\/g, "\\\\"]), replaceStr, [/\n/g, "\\n"]), replaceStr, [/'/g, "\\'"]);
    return `'${escaped}'`;
  }

  function inspect(value, options) {
    const maxDepth = options && typeof options.depth === "number" ? options.depth : 2;
    const seen = [];
    const circular = new P.Map();
    const fmt = (v, depth) => {
      try {
        switch (typeof v) {
          case "string": return depth === 0 ? v : quote(v);
          case "number": return v === 0 && 1 / v < 0 ? "-0" : StringCtor(v);
          case "bigint": return `${StringCtor(v)}n`;
          case "boolean": case "undefined": return StringCtor(v);
          case "symbol": return apply(P.symbolToString, v, []);
          case "function": {
            const src = apply(P.fnToString, v, []);
            if (apply(reTest, /^class[\s{]/, [src])) return `[class ${v.name || "(anonymous)"}]`;
            return v.name ? `[Function: ${v.name}]` : "[Function (anonymous)]";
          }
        }
        if (v === null) return "null";
        for (let i = 0; i < seen.length; i++) {
          if (seen[i] === v) {
            if (!apply(P.mapHas, circular, [v])) apply(mapSet, circular, [v, apply(P.mapSize, circular, []) + 1]);
            return `[Circular *${apply(mapGet, circular, [v])}]`;
          }
        }
        const t = apply(P.objToString, v, []);
        if (t === "[object Date]") { const time = apply(P.dateGetTime, v, []); return time === time ? apply(P.dateToISOString, v, []) : "Invalid Date"; }
        if (t === "[object RegExp]") return `/${v.source}/${v.flags}`;
        if (t === "[object Error]") { const s = v.stack; const head = apply(P.errToString, v, []); return typeof s === "string" && s ? str(`${head}\n${s}`, replaceStr, [/\n$/, ""]) : `[${head}]`; }
        if (depth > maxDepth) return isArray(v) ? "[Array]" : "[Object]";
        seen[seen.length] = v;
        let body;
        if (isArray(v)) {
          const items = [];
          const n = v.length > 100 ? 100 : v.length;
          for (let i = 0; i < n; i++) items[items.length] = i in v ? fmt(v[i], depth + 1) : "<1 empty item>";
          if (v.length > 100) items[items.length] = `... ${v.length - 100} more items`;
          for (const k of objectKeys(v)) if (!apply(reTest, /^\d+$/, [k])) items[items.length] = `${apply(reTest, IDENT, [k]) ? k : quote(k)}: ${fmt(v[k], depth + 1)}`;
          body = items.length ? `[ ${join(items)} ]` : "[]";
        } else if (t === "[object Map]") {
          const items = [];
          for (const [k, x] of apply(P.mapEntries, v, [])) items[items.length] = `${fmt(k, depth + 1)} => ${fmt(x, depth + 1)}`;
          body = `Map(${apply(P.mapSize, v, [])}) ${items.length ? `{ ${join(items)} }` : "{}"}`;
        } else if (t === "[object Set]") {
          const items = [];
          for (const x of apply(P.setValues, v, [])) items[items.length] = fmt(x, depth + 1);
          body = `Set(${apply(P.setSize, v, [])}) ${items.length ? `{ ${join(items)} }` : "{}"}`;
        } else if (isView(v) && !(v instanceof P.DataView)) {
          const len = apply(P.taLength, v, []);
          const items = [];
          for (let i = 0; i < len && i < 100; i++) items[items.length] = fmt(v[i], depth + 1);
          if (len > 100) items[items.length] = `... ${len - 100} more items`;
          body = `${apply(P.taTag, v, [])}(${len}) ${items.length ? `[ ${join(items)} ]` : "[]"}`;
        } else if (t === "[object ArrayBuffer]") {
          body = `ArrayBuffer { byteLength: ${v.byteLength} }`;
        } else if (t === "[object Promise]") {
          body = "Promise { <unknown> }";
        } else {
          const items = [];
          for (const k of P.ownKeys(v)) {
            const d = P.getOwnPropertyDescriptor(v, k);
            if (!d || !d.enumerable) continue;
            const name = typeof k === "symbol" ? `[${apply(P.symbolToString, k, [])}]` : apply(reTest, IDENT, [k]) ? k : quote(k);
            const shown = d.get ? (d.set ? "[Getter/Setter]" : "[Getter]") : d.set ? "[Setter]" : fmt(d.value, depth + 1);
            items[items.length] = `${name}: ${shown}`;
          }
          const proto = P.getPrototypeOf(v);
          const ctor = proto && proto !== P.ObjectPrototype && typeof proto.constructor === "function" ? proto.constructor.name : "";
          const prefix = proto === null ? "[Object: null prototype] " : ctor && ctor !== "Object" ? `${ctor} ` : "";
          body = `${prefix}${items.length ? `{ ${join(items)} }` : "{}"}`;
        }
        seen.length--;
        const ref = apply(mapGet, circular, [v]);
        return ref ? `<ref *${ref}> ${body}` : body;
      } catch {
        return "[object]";
      }
    };
    return fmt(value, 0);
  }

  function formatLogLine(args) {
    if (args.length === 0) return "";
    let first = args[0];
    let rest = 1;
    let out;
    if (typeof first === "string" && str(first, indexOfStr, ["%"]) >= 0) {
      out = str(first, replaceStr, [/%[sdifjoOc%]/g, (m) => {
        if (m === "%%") return "%";
        if (rest >= args.length) return m;
        const a = args[rest++];
        switch (m) {
          case "%s": return typeof a === "string" ? a : typeof a === "bigint" ? `${a}n` : typeof a === "object" && a !== null ? inspect(a, { depth: 1 }) : StringCtor(a);
          case "%d": case "%i": return typeof a === "bigint" ? `${a}n` : typeof a === "symbol" ? "NaN" : StringCtor(m === "%i" ? P.parseInt(a) : P.Number(a));
          case "%f": return typeof a === "symbol" ? "NaN" : StringCtor(P.parseFloat(a));
          case "%j": try { return stringify(a); } catch { return "[Circular]"; }
          case "%o": case "%O": return inspect(a, { depth: m === "%o" ? 4 : 2 });
          case "%c": return "";
        }
        return m;
      }]);
    } else {
      out = typeof first === "string" ? first : inspect(first);
    }
    for (let i = rest; i < args.length; i++) out += " " + (typeof args[i] === "string" ? args[i] : inspect(args[i]));
    return out;
  }

  return { inspect, formatLogLine };
})
