// The enclave's settlements of runs' charges (settlements.ts), against a fake edge: a run is sent once
// it has been over for SETTLE_AFTER_MS, the charges first and the detail only of those the edge says
// are missing; an edge that fails is paused (doubling) and its runs tried again, and dropped, logged,
// after GIVE_UP_MS; a 4xx and refused tokens drop their runs at once, logged; stop() sends
// everything still kept; nothing goes to an URL that is not http(s) (https in production).
import { describe, expect, it } from "vitest";
import { createLogger } from "../../shared/log.ts";
import { SETTLEMENT_BATCH, SETTLEMENT_PATH, type SettlementAnswer } from "../../shared/settlement.ts";
import { SETTLE_AFTER_MS, Settlements } from "./settlements.ts";

type Sent = { url: string; runs: Array<{ token: string; cents: number; detail?: unknown }> };

/** A fake edge: records each request, answers what `answer` says (a function of the request), or fails. */
function fakeEdge(answer: (sent: Sent) => SettlementAnswer | number | Error) {
  const sent: Sent[] = [];
  const fetchImpl = (async (input: URL | string, init?: RequestInit) => {
    const request: Sent = { url: String(input), runs: JSON.parse(String(init?.body)).runs };
    sent.push(request);
    const a = answer(request);
    if (a instanceof Error) throw a;
    if (typeof a === "number") return new Response("{}", { status: a });
    return Response.json(a);
  }) as typeof fetch;
  return { sent, fetchImpl };
}

function recordingLog() {
  const lines: Array<{ level: string; msg: string; runs?: unknown; why?: string }> = [];
  return { log: createLogger("debug", {}, (line) => lines.push(JSON.parse(line) as (typeof lines)[number])), lines };
}

const access = (ref: string, url = "http://edge.test:8787") => ({ url, token: `token-${ref}`, ref });
const detail = (ref: string) => ({ cid: "QmX", duration_ms: 5, receipt: JSON.stringify({ request_id: ref }) });
const T0 = 1_000_000;

describe("Settlements", () => {
  it("sends a run once it has been over SETTLE_AFTER_MS: its charge, then its detail only when the edge says it is missing", async () => {
    const edge = fakeEdge((s) => (s.runs[0]?.detail ? { refused: [], missing: [] } : { refused: [], missing: [1] }));
    const { log } = recordingLog();
    const journal = new Settlements({ log, allowHttp: true, fetchImpl: edge.fetchImpl });
    journal.add(access("a"), 1, detail("a"), T0);
    journal.add(access("b"), 3, detail("b"), T0);
    journal.add(access("late"), 1, detail("late"), T0 + 100);
    await journal.flush(false, T0 + SETTLE_AFTER_MS - 1);
    expect(edge.sent).toEqual([]);
    await journal.flush(false, T0 + SETTLE_AFTER_MS);
    expect(edge.sent).toEqual([
      {
        url: `http://edge.test:8787${SETTLEMENT_PATH}`,
        runs: [
          { token: "token-a", cents: 1 },
          { token: "token-b", cents: 3 },
        ],
      },
      { url: `http://edge.test:8787${SETTLEMENT_PATH}`, runs: [{ token: "token-b", cents: 3, detail: detail("b") }] },
    ]);
    expect(journal.stats).toMatchObject({ kept: 1, sent: 2, charged: 1, dropped: 0 });
    // The later run goes on its own time, once.
    await journal.flush(false, T0 + SETTLE_AFTER_MS + 100);
    expect(edge.sent.at(-1)?.runs).toEqual([{ token: "token-late", cents: 1 }]);
    await journal.flush(false, T0 + 60_000);
    expect(edge.sent).toHaveLength(3);
  });

  it("batches per edge URL, at most SETTLEMENT_BATCH runs a request", async () => {
    const edge = fakeEdge(() => ({ refused: [], missing: [] }));
    const journal = new Settlements({ log: recordingLog().log, allowHttp: true, fetchImpl: edge.fetchImpl });
    for (let i = 0; i < SETTLEMENT_BATCH + 5; i++) journal.add(access(`r${i}`), 1, detail(`r${i}`), T0);
    journal.add(access("other", "http://other.test"), 1, detail("other"), T0);
    await journal.flush(false, T0 + SETTLE_AFTER_MS);
    expect(edge.sent.map((s) => [new URL(s.url).host, s.runs.length])).toEqual([
      ["edge.test:8787", SETTLEMENT_BATCH],
      ["edge.test:8787", 5],
      ["other.test", 1],
    ]);
    expect(journal.stats.kept).toBe(0);
  });

  it("keeps the runs of an edge that fails, pauses it (doubling), tries again, and drops them, logged, after ten minutes", async () => {
    let failing = true;
    const edge = fakeEdge(() => (failing ? new Error("connect ECONNREFUSED") : { refused: [], missing: [] }));
    const { log, lines } = recordingLog();
    const journal = new Settlements({ log, allowHttp: true, fetchImpl: edge.fetchImpl });
    journal.add(access("a"), 2, detail("a"), T0);
    await journal.flush(false, T0 + SETTLE_AFTER_MS);
    expect(edge.sent).toHaveLength(1);
    expect(journal.stats.kept).toBe(1);
    // Paused: not tried again at the next tick, but after the pause.
    await journal.flush(false, T0 + SETTLE_AFTER_MS + 500);
    expect(edge.sent).toHaveLength(1);
    await journal.flush(false, T0 + SETTLE_AFTER_MS + 1_001);
    expect(edge.sent).toHaveLength(2);
    expect(lines.filter((l) => l.level === "warn")).toHaveLength(1);
    failing = false;
    await journal.flush(false, T0 + SETTLE_AFTER_MS + 10_000);
    expect(edge.sent).toHaveLength(3);
    expect(journal.stats).toMatchObject({ kept: 0, dropped: 0 });

    failing = true;
    journal.add(access("b"), 1, detail("b"), T0);
    await journal.flush(false, T0 + 10 * 60_000);
    expect(journal.stats).toMatchObject({ kept: 0, dropped: 1 });
    expect(lines.filter((l) => l.level === "error")).toEqual([
      expect.objectContaining({ msg: "run charges not settled by the enclave", runs: [{ ref: "b", cents: 1 }] }),
    ]);
  });

  it("drops, logged, the runs of a request the edge refuses (4xx) and those whose tokens it refuses", async () => {
    const edge = fakeEdge((s) => (s.runs.length === 1 ? 401 : { refused: [0], missing: [] }));
    const { log, lines } = recordingLog();
    const journal = new Settlements({ log, allowHttp: true, fetchImpl: edge.fetchImpl });
    journal.add(access("a"), 1, detail("a"), T0);
    journal.add(access("b"), 1, detail("b"), T0);
    journal.add(access("c", "http://off.test"), 1, detail("c"), T0);
    await journal.flush(false, T0 + SETTLE_AFTER_MS);
    expect(journal.stats).toMatchObject({ kept: 0, dropped: 2 });
    expect(lines.filter((l) => l.level === "error").map((l) => l.runs)).toEqual([
      [{ ref: "a", cents: 1 }],
      [{ ref: "c", cents: 1 }],
    ]);
  });

  it("stop() sends every run still kept, due or not; in production only https", async () => {
    const edge = fakeEdge(() => ({ refused: [], missing: [] }));
    const journal = new Settlements({ log: recordingLog().log, allowHttp: true, fetchImpl: edge.fetchImpl });
    journal.add(access("now"), 1, detail("now"));
    await journal.stop();
    expect(edge.sent.map((s) => s.runs)).toEqual([[{ token: "token-now", cents: 1 }]]);

    const strict = new Settlements({ log: recordingLog().log, allowHttp: false, fetchImpl: edge.fetchImpl });
    strict.add(access("plain"), 1, detail("plain"), T0);
    await strict.flush(false, T0 + SETTLE_AFTER_MS);
    expect(edge.sent).toHaveLength(1);
    expect(strict.stats.kept).toBe(1);
  });
});
