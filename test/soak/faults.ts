// The soak's faults, each on its own schedule while the traffic flows:
//
// - enclave_kill: SIGKILL to the enclave's process group (a crashed CVM: no shutdown, its channel
//   key, sessions and in-memory idempotency records gone), started again at once on the same port
//   (test/harness/stack.ts, restartEnclave). Then hello runs through the edge every 100 ms until one
//   succeeds: the time from the new process being ready to that run is the recovery, bound 5 s.
// - rpc_stop: the TCP proxy in front of the chain stops for 10 s — new connections refused, open
//   ones cut (tcpProxy.ts says why) — for the enclave and the edge alike; then a read through the
//   edge every 100 ms until one succeeds.
// - stripe_chaos: the Stripe emulator holds its new events for a few seconds (the traffic's top-ups
//   and one of the fault's own, declined then paid on the same intent, never confirmed by the client,
//   and a refund of an earlier top-up), sends them in reverse order, then sends past events again
//   (payments succeeded and failed, refunds).
// - session_drop: SIGUSR2 to the enclave, which then forgets its channel sessions
//   (enclave/channel/channel.ts, dropSessionsOnSignal); the edge must open new ones by itself.
// - edge_kill: SIGKILL to the edge's process group (workerd: its isolate dies with the credit its
//   leases hold in the Ledgers and the charges it answered but had not committed yet: an isolate
//   commits SIGIL_LEASE_COMMIT_DELAY_MS after the first charge of a quiet moment; docs/design/billing.md,
//   Leases), at a moment when the load's runs and writes are in flight, just as the first of 8 runs
//   of its own (the probe account's, sent at once) has been answered; then workerd again on the same
//   ports with the same Durable Objects' files (stack.ts). Then a run through the edge every 100 ms
//   until one succeeds: the time from the kill to that run is how long the edge took to serve
//   again. The clients whose connections it cut send their runs and writes again under the same
//   Idempotency-Keys (traffic.ts, reconnecting).
//
// The enclave kill, the edge kill, the chain's outage and the session drop never overlap (one waits
// for the other, and 10 s more after a kill or an outage): an enclave cannot start while its chain is
// unreachable, which would measure the outage, not the restart; and what a session drop costs the
// clients must not be confused with what the others cost.
import type { SoakStack } from "./stack.ts";
import type { Probe, Traffic } from "./traffic.ts";

export type FaultName = "enclave_kill" | "rpc_stop" | "stripe_chaos" | "session_drop" | "edge_kill";
export const FAULT_NAMES: FaultName[] = ["enclave_kill", "rpc_stop", "stripe_chaos", "session_drop", "edge_kill"];

/** When a fault first happens and then how often, in ms from the start of the load. */
export type FaultPlan = { name: FaultName; firstAtMs: number; everyMs: number };

/** One fault as it happened: when (ms on the traffic's clock), how long, and what it did. */
export type FaultEvent = {
  name: FaultName;
  at: number;
  ms: number;
  effect: Record<string, number | string | boolean | null>;
  ok: boolean;
};

/** The recovery bound after an enclave restart (the acceptance rule). */
export const RECOVERY_BOUND_MS = 5_000;
/** How long the chain's RPC is stopped. */
export const RPC_STOP_MS = 10_000;
/** How long the Stripe emulator holds its events before sending them out of order. */
const STRIPE_HOLD_MS = 5_000;
/** How long the edge kill waits for its moment (runs and writes in flight, a run just answered) before killing anyway. */
const EDGE_KILL_WAIT_MS = 10_000;
/** The edge kill's own runs, sent at once just before it (their calls end on their own: soak.ts waits for every call). */
const EDGE_KILL_RUNS = 8;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Calls `attempt` every 100 ms until it is served or `limitMs` passes; when it was, on the traffic's
 * clock. `tries` counts the attempts that reached the service: one the edge refused at its door for
 * load (503 edge_busy, nothing tried) says nothing of the fault.
 */
async function firstSuccess(
  traffic: Traffic,
  attempt: () => Promise<Probe>,
  limitMs: number,
): Promise<{ at: number | null; tries: number; refused: number }> {
  const deadline = traffic.recorder.now() + limitMs;
  let tries = 0;
  let refused = 0;
  while (traffic.recorder.now() < deadline) {
    const outcome = await attempt();
    if (outcome === "edge_busy") refused++;
    else tries++;
    if (outcome === "served") return { at: traffic.recorder.now(), tries, refused };
    await sleep(100);
  }
  return { at: null, tries, refused };
}

export function faultActions(
  stack: SoakStack,
  traffic: Traffic,
): Record<FaultName, () => Promise<Omit<FaultEvent, "name" | "at">>> {
  const clock = () => traffic.recorder.now();
  return {
    async enclave_kill() {
      const killedAt = clock();
      await stack.chain.restartEnclave();
      const readyAt = clock();
      const inFlight = traffic.recorder.active;
      const served = await firstSuccess(traffic, () => traffic.probeRun(), 60_000);
      const recovery = served.at === null ? null : served.at - readyAt;
      return {
        ms: (served.at ?? clock()) - killedAt,
        // Back at all; the bound is judged by the report, which also counts the traffic's own runs.
        ok: recovery !== null,
        effect: {
          kill_to_ready_ms: Math.round(readyAt - killedAt),
          ready_to_served_ms: recovery === null ? null : Math.round(recovery),
          probes: served.tries,
          probes_refused_for_load: served.refused,
          calls_in_flight_at_ready: inFlight,
        },
      };
    },
    async rpc_stop() {
      const stoppedAt = clock();
      const cutBefore = stack.rpc.stats.cut;
      await stack.rpc.stop();
      const cut = stack.rpc.stats.cut - cutBefore;
      await sleep(RPC_STOP_MS);
      await stack.rpc.start();
      const backAt = clock();
      const served = await firstSuccess(traffic, () => traffic.probeRead(), 60_000);
      return {
        ms: (served.at ?? clock()) - stoppedAt,
        ok: served.at !== null,
        effect: {
          down_ms: Math.round(backAt - stoppedAt),
          connections_cut: cut,
          back_to_read_ms: served.at === null ? null : Math.round(served.at - backAt),
        },
      };
    },
    async stripe_chaos() {
      const started = clock();
      const before = new Set(stack.stripe.events().map((e) => e.id));
      stack.stripe.holdDeliveries();
      let refunded = 0;
      let sent: string[] = [];
      try {
        await traffic.declinedThenPaid();
        refunded = await refundOne(stack, traffic);
        await sleep(STRIPE_HOLD_MS);
      } finally {
        sent = await stack.stripe.releaseHeld("reverse");
      }
      // Then some past events again: payments that succeeded or failed, and refunds.
      const past = stack.stripe
        .events()
        .filter((e) =>
          ["payment_intent.succeeded", "payment_intent.payment_failed", "refund.created"].includes(e.type),
        );
      const replayed = [...past].sort(() => Math.random() - 0.5).slice(0, 6);
      for (const e of replayed) await stack.stripe.resend(e.id);
      const types = (ids: string[]) =>
        stack.stripe
          .events()
          .filter((e) => ids.includes(e.id))
          .map((e) => e.type.replace("payment_intent.", ""));
      return {
        ms: clock() - started,
        ok: true,
        effect: {
          held_then_reversed: sent.length,
          new_events: stack.stripe.events().filter((e) => !before.has(e.id)).length,
          reversed_types: types(sent).join(","),
          resent: replayed.length,
          resent_types: types(replayed.map((e) => e.id)).join(","),
          refund_cents: refunded,
        },
      };
    },
    async edge_kill() {
      const startedAt = clock();
      const recorder = traffic.recorder;
      const busy = (kind: "run" | "sign" | "write" | "fault") => recorder.activeByKind.get(kind) ?? 0;
      // The moment: the load's runs and writes in flight, and a run of the fault's own answered just
      // now, with more of them in flight: its charge waits in the lease for the commit it scheduled
      // (the first charge of the probe account's quiet moment; SIGIL_LEASE_COMMIT_DELAY_MS).
      const deadline = recorder.now() + EDGE_KILL_WAIT_MS;
      while (recorder.now() < deadline && (busy("write") === 0 || busy("run") + busy("sign") === 0)) await sleep(10);
      const first = recorder.nextAttempt(
        (a) => a.kind === "fault" && a.status === 200 && (a.chargedCents ?? 0) > 0,
        EDGE_KILL_WAIT_MS,
      );
      for (let i = 0; i < EDGE_KILL_RUNS; i++) void traffic.faultRun();
      const answered = await first;
      const killedAt = clock();
      const inFlight = {
        calls: recorder.active,
        runs: busy("run") + busy("sign"),
        writes: busy("write"),
        own: busy("fault"),
      };
      const kill = await stack.edge.kill();
      const goneAt = clock();
      await stack.edge.start();
      const readyAt = clock();
      const served = await firstSuccess(traffic, () => traffic.probeRun(), 60_000);
      return {
        ms: (served.at ?? clock()) - startedAt,
        // Served again, and the isolate died holding credit.
        ok: served.at !== null && kill.leases.length > 0,
        effect: {
          // From the fault's start to the kill: the wait for its moment.
          waited_ms: Math.round(killedAt - startedAt),
          kill_to_gone_ms: Math.round(goneAt - killedAt),
          kill_to_ready_ms: Math.round(readyAt - killedAt),
          ready_to_served_ms: served.at === null ? null : Math.round(served.at - readyAt),
          kill_to_served_ms: served.at === null ? null : Math.round(served.at - killedAt),
          killed_after_a_run_answered: answered !== undefined,
          killed_ms_after_that_answer: answered === undefined ? null : Math.round(killedAt - answered.at - answered.ms),
          calls_in_flight_at_kill: inFlight.calls,
          runs_in_flight_at_kill: inFlight.runs,
          writes_in_flight_at_kill: inFlight.writes,
          own_runs_in_flight_at_kill: inFlight.own,
          // What the killed isolate's leases held in the Ledgers (read once it was gone).
          leases: kill.leases.length,
          leased_cents: kill.leases.reduce((t, l) => t + l.cents, 0),
          in_flight_cents: kill.leases.reduce((t, l) => t + l.inFlight, 0),
          told_in_flight: kill.open.length,
          probes: served.tries,
          probes_refused_for_load: served.refused,
        },
      };
    },
    async session_drop() {
      const at = clock();
      const marker = stack.chain.enclaveOutput().length;
      stack.chain.signalEnclave("SIGUSR2");
      let dropped: number | null = null;
      for (let i = 0; i < 50 && dropped === null; i++) {
        await sleep(20);
        const line = stack.chain
          .enclaveOutput()
          .slice(marker)
          .split("\n")
          .find((l) => l.includes("channel sessions dropped"));
        if (line) dropped = Number((JSON.parse(line) as { sessions?: number }).sessions ?? 0);
      }
      // The next run through the edge must work without an error the client sees.
      const served = await firstSuccess(traffic, () => traffic.probeRun(), 10_000);
      return {
        ms: clock() - at,
        ok: dropped !== null && served.at !== null && served.tries === 1,
        effect: {
          sessions_dropped: dropped,
          next_run_ok_first_try: served.tries === 1,
          probes_refused_for_load: served.refused,
        },
      };
    },
  };
}

/** Refunds 100 cents of a random earlier top-up that Stripe took (as from Stripe's dashboard); the cents refunded (0 if none). */
async function refundOne(stack: SoakStack, traffic: Traffic): Promise<number> {
  const names = new Set(traffic.accounts.map((a) => a.name));
  const succeeded = new Set(
    stack.stripe
      .events()
      .filter((e) => e.type === "payment_intent.succeeded")
      .map((e) => String(e.data.object.id)),
  );
  const candidates = traffic.recorder.topUps.filter((t) => names.has(t.account) && succeeded.has(t.paymentIntentId));
  const chosen = candidates[Math.floor(Math.random() * candidates.length)];
  if (!chosen) return 0;
  const res = await fetch(`${stack.stripe.url}/v1/refunds`, {
    method: "POST",
    headers: { authorization: `Bearer ${stack.stripe.secretKey}`, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ payment_intent: chosen.paymentIntentId, amount: "100" }).toString(),
  });
  await res.text();
  return res.ok ? 100 : 0;
}

/**
 * Runs each plan's fault at its times until `stop()`, the enclave kill, the edge kill, the chain's
 * outage and the session drop one at a time; every fault as it happened goes to `events`.
 */
export function scheduleFaults(
  plans: FaultPlan[],
  actions: Record<FaultName, () => Promise<Omit<FaultEvent, "name" | "at">>>,
  clock: () => number,
  log: (line: string) => void,
) {
  const events: FaultEvent[] = [];
  let stopped = false;
  let wake: Array<() => void> = [];
  /** The enclave kill, the edge kill, the chain's outage and the session drop take turns; after a kill or an outage, 10 s pass before the next. */
  let exclusive: Promise<void> = Promise.resolve();
  const nap = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, Math.max(0, ms));
      function done() {
        clearTimeout(timer);
        wake = wake.filter((w) => w !== done);
        resolve();
      }
      wake.push(done);
    });
  const loops = plans.map(async (plan) => {
    for (let k = 0; !stopped; k++) {
      await nap(plan.firstAtMs + k * plan.everyMs - clock());
      if (stopped) return;
      const runIt = async () => {
        if (stopped) return;
        const at = clock();
        log(`fault ${plan.name} at ${(at / 1000).toFixed(1)} s`);
        try {
          const done = await actions[plan.name]();
          events.push({ name: plan.name, at, ...done });
          log(`fault ${plan.name}: ${JSON.stringify(done.effect)}${done.ok ? "" : " — NOT OK"}`);
        } catch (err) {
          events.push({
            name: plan.name,
            at,
            ms: clock() - at,
            ok: false,
            effect: { error: err instanceof Error ? err.message : String(err) },
          });
          log(`fault ${plan.name} failed: ${err instanceof Error ? err.stack : String(err)}`);
        }
      };
      if (plan.name !== "stripe_chaos") {
        const turn = exclusive.then(runIt).then(() => (plan.name === "session_drop" ? undefined : nap(10_000)));
        exclusive = turn;
        await turn;
      } else {
        await runIt();
      }
    }
  });
  return {
    events,
    /** No new fault starts; resolves once those under way have ended. */
    async stop() {
      stopped = true;
      for (const w of [...wake]) w();
      await Promise.all(loops);
    },
  };
}
