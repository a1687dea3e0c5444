// The soak's rule 8 reads workerd's own lines in the edge's output (test/soak/report.ts,
// RUNTIME_FAULTS): each kind counted once per line, lines of the Worker's own logs not at all.
import { describe, expect, it } from "vitest";
import { runtimeFaultsIn } from "../soak/report.ts";

describe("runtimeFaultsIn", () => {
  it("counts workerd's lines for requests cut off or crossed, each line as its first kind, and nothing else", () => {
    const output = [
      "workerd/server/server/listen/mod.rs:372: error: Uncaught exception: workerd/jsg/value.h:1511: failed: remote.jsg.Error: Cannot perform I/O on behalf of a different request. I/O objects (such as streams) (I/O type: ReadableStreamSource>)",
      "workerd/server/server/listen/mod.rs:372: error: Uncaught exception: workerd/io/io-context.c++:1910: failed: remote.jsg.Error: The Workers runtime canceled this request because it detected that your Worker's code had hung and would never generate a response.",
      "Warning: A promise was resolved or rejected from a different request context than the one it was created in. However, the creating request has already been completed or canceled.",
      "workerd/server/server/listen/mod.rs:372: error: Uncaught exception: Error: boom",
      '{"time":"2026-12-03T00:47:46.058Z","level":"error","msg":"request failed","service":"edge","code":"chain_unavailable"}',
      "workerd/io/actor-sqlite.c++:1031: warning: NOSENTRY SQLite alarm overdue",
    ].join("\n");
    expect(runtimeFaultsIn(output)).toEqual({
      "I/O across requests": 1,
      "hung request": 1,
      "promise across requests": 1,
      "uncaught exception": 1,
    });
    expect(Object.values(runtimeFaultsIn('{"level":"info","msg":"payment credited"}\n')).every((n) => n === 0)).toBe(
      true,
    );
  });
});
