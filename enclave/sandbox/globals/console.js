// console (sandbox.md, Globals), loaded at a script's first use: one log line per call, formatted
// by inspect.js, captured by the host with the run's log limit.
(function installConsole(G, P, need, kit) {
  "use strict";
  const hostLog = kit.host.log;
  const console = {};
  for (const level of ["log", "info", "warn", "error", "debug"]) {
    console[level] = function (...args) {
      P.apply(hostLog, undefined, [level, need("inspect").formatLogLine(args)]);
    };
  }
  return { console };
})
