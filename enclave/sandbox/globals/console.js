// console (docs/design/sandbox.md, Globals), loaded at a script's first use: one log line per call, captured by
// the host with the run's log limit. Lines of plain strings and numbers are joined here; anything
// else (objects, %-placeholders) goes through inspect.js, which is loaded only then.
(function installConsole(G, P, need, kit) {
  "use strict";
  const hostLog = kit.host.log;
  const plain = (v) => {
    const t = typeof v;
    if (t === "string") return v;
    if (t === "number") return v === 0 && 1 / v < 0 ? "-0" : P.String(v);
    if (t === "boolean" || v === undefined || v === null) return P.String(v);
    if (t === "bigint") return `${P.String(v)}n`;
    return undefined;
  };
  const format = (args) => {
    if (!(args.length > 1 && typeof args[0] === "string" && P.apply(P.strIndexOf, args[0], ["%"]) >= 0)) {
      let line = "";
      for (let i = 0; i < args.length; i++) {
        const s = plain(args[i]);
        if (s === undefined) return need("inspect").formatLogLine(args);
        line += i === 0 ? s : ` ${s}`;
      }
      return line;
    }
    return need("inspect").formatLogLine(args);
  };
  const console = {};
  // An indexed loop: `for…of` would use Array.prototype[Symbol.iterator], which the script may have replaced.
  const levels = ["log", "info", "warn", "error", "debug"];
  for (let i = 0; i < levels.length; i++) {
    const level = levels[i];
    console[level] = function (...args) {
      P.apply(hostLog, undefined, [level, format(args)]);
    };
  }
  return { console };
});
