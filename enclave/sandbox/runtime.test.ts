// A run's order of steps against its worker's slice board (runtime.ts, slices.ts). The pool ends an
// overdue slice from outside; the worker learns it from the board (`reap`) at the next thing it does.
// A run that starts in a turn of its own (nextTurn: the runs of a batch, a run that waited for a
// runtime) may come straight after such a termination, before the pool's reap message is read: its
// first slice must reap first, or it would take the board's word — and the pool's kill — from the
// run that was ended (seen once as a run held for the 30 s cap on held-up time).
import { describe, expect, it } from "vitest";
import { readEnclaveConfig } from "../config.ts";
import { createRunHost } from "./hostOps.ts";
import { createInstance } from "./instance.ts";
import { CodedError, nextTurn, prepareRuntime, ScriptRun, type RunOutcome } from "./runtime.ts";
import { SLICE_BOARD_BYTES, SliceBoard } from "./slices.ts";

const limits = readEnclaveConfig({
  SIGIL_ALLOWED_EDGE_KEYS: "ab".repeat(32),
  SIGIL_RPC_URL: "http://127.0.0.1:1",
  SIGIL_CONTRACT_ADDRESS: `0x${"11".repeat(20)}`,
}).limits;

/** A slice board that records, in order with the run's reaps, each slice the run enters. */
class RecordingBoard extends SliceBoard {
  readonly events: string[];
  constructor(events: string[]) {
    super(new SharedArrayBuffer(SLICE_BOARD_BYTES));
    this.events = events;
  }
  override enter(runId: number, deadline: number): number {
    this.events.push(`enter ${runId}`);
    return super.enter(runId, deadline);
  }
}

describe("ScriptRun and the slice board", () => {
  it("a run started in a turn of its own reaps before its first slice enters the board, and in every later turn before its slices", async () => {
    const events: string[] = [];
    const board = new RecordingBoard(events);
    const host = createRunHost({
      cid: "QmRuntimeTest",
      deadline: () => Date.now() + 60_000,
      limits,
      fetchPolicy: {
        allowHosts: new Set(),
        denyPorts: new Set(),
        timeoutMs: 1000,
        maxResponseBytes: 1000,
        maxRedirects: 1,
      },
      requestKey: async () => {
        throw new CodedError("permission_denied", "no");
      },
    });
    const prepared = await prepareRuntime(await createInstance(limits), limits);
    const request = {
      code: "async function main() { await new Promise((r) => setTimeout(r, 5)); return 'ok' }",
      cid: "QmRuntimeTest",
      paramsJson: "null",
      timeoutMs: 5_000,
      requestId: "runtime-test",
      correlationId: null,
    };
    const run = new ScriptRun(prepared, request, limits, host, { runId: 7, board, reap: () => events.push("reap") });
    // As the worker starts the second run of a batch: in a turn of its own.
    const outcome = await new Promise<RunOutcome>((resolve) => nextTurn(() => void run.start(true).then(resolve)));
    expect(outcome.responseJson).toBe('"ok"');
    // Each turn the run gets (the first, and the one after its timer) reaps before its slices enter.
    const sequence = events.map((e) => `${e};`).join("");
    expect(sequence).toMatch(/^((reap;)+(enter 7;)+)+$/);
    expect(sequence.match(/(reap;)+(enter 7;)+/g)?.length).toBeGreaterThanOrEqual(2);
  });
});
