// setTimeout / clearTimeout / queueMicrotask (docs/design/sandbox.md, Globals), loaded on first use. The host
// owns the clock: it fires a timer by calling `fire` between the run's jobs.
(function installTimers(G, P, need, kit) {
  "use strict";
  const { apply, mapGet, mapSet, mapDelete } = P;
  const { syncCall } = need("host");
  const timers = new P.Map();
  function setTimeout(callback, ms, ...args) {
    if (typeof callback !== "function") throw new P.TypeError("setTimeout: the callback must be a function");
    const delay = +ms > 0 ? +ms : 0;
    const id = syncCall("setTimeout", { ms: delay });
    apply(mapSet, timers, [id, { callback, args }]);
    return id;
  }
  function clearTimeout(id) {
    if (typeof id !== "number") return;
    if (apply(mapDelete, timers, [id])) syncCall("clearTimeout", { id });
  }
  const resolved = apply(P.promiseResolve, P.Promise, []);
  const queueMicrotask = (fn) => {
    if (typeof fn !== "function") throw new P.TypeError("queueMicrotask: the callback must be a function");
    apply(P.promiseThen, resolved, [() => fn()]);
  };

  function fireTimer(id) {
    const timer = apply(mapGet, timers, [id]);
    if (timer === undefined) return;
    apply(mapDelete, timers, [id]);
    apply(timer.callback, undefined, timer.args);
  }

  return { setTimeout, clearTimeout, queueMicrotask, fire: fireTimer };
});
