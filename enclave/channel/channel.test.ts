// The enclave's channel listener's log of refused sealed requests: a flood of junk must not become a
// flood of log lines (each line is written synchronously to stdout by the one thread that serves).
// SIGUSR2's session drop, outside production only.
import { describe, expect, it } from "vitest";
import { createLogger, type Logger } from "../../shared/log.ts";
import { dropSessionsOnSignal, refusalLog } from "./channel.ts";

describe("refusalLog", () => {
  it("logs the first refusal of a reason at once, then at most one line per 10 s for that reason, with how many there were", () => {
    const lines: Array<{ msg: string; fields: Record<string, unknown> | undefined }> = [];
    const log: Logger = {
      ...createLogger("silent"),
      warn: (msg: string, fields?: Record<string, unknown>) => void lines.push({ msg, fields }),
    };
    let now = 0;
    const refusals = refusalLog(log, () => now);
    for (let i = 0; i < 5000; i++) refusals.note("edge_not_allowed");
    refusals.note("bad_signature");
    expect(lines).toEqual([
      { msg: "sealed request refused", fields: { reason: "edge_not_allowed" } },
      { msg: "sealed request refused", fields: { reason: "bad_signature" } },
    ]);
    now = 10_000;
    refusals.note("edge_not_allowed");
    expect(lines[2]).toEqual({
      msg: "sealed requests refused",
      fields: { reason: "edge_not_allowed", count: 5000, seconds: 10 },
    });
    expect(lines).toHaveLength(3);
  });
});

describe("dropSessionsOnSignal", () => {
  const setup = (env: "development" | "test" | "production") => {
    const listeners = new Map<string, () => void>();
    const lines: Array<{ msg: string; fields: Record<string, unknown> | undefined }> = [];
    const log: Logger = {
      ...createLogger("silent"),
      warn: (msg: string, fields?: Record<string, unknown>) => void lines.push({ msg, fields }),
    };
    let drops = 0;
    const installed = dropSessionsOnSignal(
      env,
      {
        dropSessions: () => {
          drops++;
          return 3;
        },
      },
      log,
      (signal, listener) => void listeners.set(signal, listener),
    );
    return { installed, listeners, lines, drops: () => drops };
  };

  it("in test and development, SIGUSR2 drops the channel's sessions and says how many", () => {
    for (const env of ["test", "development"] as const) {
      const { installed, listeners, lines, drops } = setup(env);
      expect(installed).toBe(true);
      listeners.get("SIGUSR2")!();
      expect(drops()).toBe(1);
      expect(lines).toEqual([{ msg: "channel sessions dropped (SIGUSR2)", fields: { sessions: 3 } }]);
    }
  });

  it("in production, no handler is installed", () => {
    const { installed, listeners } = setup("production");
    expect(installed).toBe(false);
    expect(listeners.size).toBe(0);
  });
});
