// The edge's port, chosen before the enclave starts and listened on by wrangler dev seconds later:
// reservePort holds it meanwhile, so nothing else can listen on it, and gives it up on release.
import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { dotenvValue, reservePort } from "./edge.ts";

function listenOn(port: number): Promise<"listening" | string> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? "error"));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve("listening")));
  });
}

describe("dotenvValue", () => {
  it("hands a JSON value over as it is (single quotes: dotenv keeps the text literal), any other in double quotes", () => {
    const chains = JSON.stringify({ "31337": "http://127.0.0.1:8545" });
    expect(dotenvValue(chains)).toBe(`'${chains}'`);
    expect(dotenvValue("plain")).toBe('"plain"');
    // A value with a single quote or a line break cannot be single-quoted: JSON's double quotes.
    expect(dotenvValue(`it's "x"`)).toBe(JSON.stringify(`it's "x"`));
    expect(dotenvValue('a\n"b"')).toBe(JSON.stringify('a\n"b"'));
  });
});

describe("reservePort", () => {
  it("holds a free port until released: another listener is refused with EADDRINUSE, then gets it", async () => {
    const reserved = await reservePort();
    expect(reserved.port).toBeGreaterThan(0);
    expect(await listenOn(reserved.port)).toBe("EADDRINUSE");
    await reserved.release();
    await reserved.release(); // a second release (the stack's stop after a failed start) is harmless
    expect(await listenOn(reserved.port)).toBe("listening");
  });
});
