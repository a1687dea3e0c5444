// Scripts' DNS (issue 11, point 8): the resolver is c-ares with its own timeout, against a name
// server on 127.0.0.1 (emulators/dnsServer.ts). It answers while libuv's thread pool is held —
// where `dns.lookup` (getaddrinfo, what scripts' fetches used before) waits, and with it WebCrypto
// and file work of every run — and a name server that never answers costs a fetch its timeout, not a
// thread.
import { execFileSync } from "node:child_process";
import { lookup } from "node:dns/promises";
import { constants, mkdtempSync, openSync, closeSync, rmSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDnsServer, type DnsServer } from "../../../emulators/dnsServer.ts";
import { createResolver } from "./guardedFetch.ts";

let dns: DnsServer;
beforeAll(async () => {
  dns = await startDnsServer({ answers: { "fast.test": "127.0.0.5" }, silent: ["slow.test"] });
});
afterAll(async () => {
  await dns.close();
});

/**
 * Opens `fifo` for writing, which lets its reader go. A pool thread may not have reached its open
 * yet (the queue is still ahead of it, and getaddrinfo behind it): until it has, a non-blocking open
 * for writing fails with ENXIO, so it is tried again.
 */
async function release(fifo: string): Promise<void> {
  for (;;) {
    try {
      closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENXIO") throw err;
      await new Promise((r) => setTimeout(r, 5));
    }
  }
}

describe("createResolver (c-ares)", () => {
  it("asks the configured server for A and AAAA and answers with the A record", async () => {
    const resolve = createResolver({ servers: [dns.address], timeoutMs: 1_000, tries: 1 });
    await expect(resolve("fast.test")).resolves.toEqual([{ address: "127.0.0.5", family: 4 }]);
    expect(dns.questions).toEqual(expect.arrayContaining(["fast.test A", "fast.test AAAA"]));
  });

  it("a name the server never answers fails with a timeout error, not a hang", async () => {
    const resolve = createResolver({ servers: [dns.address], timeoutMs: 200, tries: 1 });
    await expect(resolve("slow.test")).rejects.toMatchObject({ code: "ETIMEOUT" });
  });

  it("a name the server does not know fails as not found", async () => {
    const resolve = createResolver({ servers: [dns.address], timeoutMs: 1_000, tries: 1 });
    await expect(resolve("unknown.test")).rejects.toMatchObject({ code: "ENOTFOUND" });
  });

  it("answers while every thread of libuv's pool is held, where dns.lookup waits for a free thread", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sigil-pool-"));
    // Opening a FIFO for reading holds a pool thread until a writer comes.
    const threads = Number(process.env.UV_THREADPOOL_SIZE || 4);
    const fifos = Array.from({ length: threads }, (_, i) => join(dir, `fifo${i}`));
    for (const fifo of fifos) execFileSync("mkfifo", [fifo]);
    const held = fifos.map((fifo) => open(fifo, "r"));
    try {
      let lookedUp = false;
      const viaThreadPool = lookup("localhost").then(() => (lookedUp = true));
      const resolve = createResolver({ servers: [dns.address], timeoutMs: 1_000, tries: 1 });
      await expect(resolve("fast.test")).resolves.toEqual([{ address: "127.0.0.5", family: 4 }]);
      // getaddrinfo has had all that time and is still queued behind the held threads.
      expect(lookedUp).toBe(false);
      for (const fifo of fifos) await release(fifo);
      await viaThreadPool;
      expect(lookedUp).toBe(true);
    } finally {
      for (const fifo of fifos) {
        try {
          closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
        } catch {
          // already released
        }
      }
      for (const h of await Promise.allSettled(held)) if (h.status === "fulfilled") await h.value.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
