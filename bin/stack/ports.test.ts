import { createServer, type Server } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { claimPorts } from "./ports.ts";

const servers: Server[] = [];

/** A port some other program listens on. */
async function taken(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  return (server.address() as { port: number }).port;
}

/** A port nothing listens on (its listener closed again). */
async function free(): Promise<number> {
  const port = await taken();
  await new Promise<void>((resolve) => servers.pop()!.close(() => resolve()));
  return port;
}

afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

describe("claimPorts", () => {
  it("keeps free ports and 0 (a port the process picks)", async () => {
    const port = await free();
    const lines: string[] = [];
    expect(
      await claimPorts(
        {
          edge: { variable: "SIGIL_EDGE_PORT", port, chosen: true },
          anvil: { variable: "SIGIL_ANVIL_PORT", port: 0, chosen: true },
        },
        (l) => lines.push(l),
      ),
    ).toEqual({ edge: port, anvil: 0 });
    expect(lines).toEqual([]);
  });

  it("refuses a chosen port that another program holds, naming the variable and how to choose another", async () => {
    const port = await taken();
    await expect(
      claimPorts({ enclave: { variable: "SIGIL_ENCLAVE_PORT", port, chosen: true } }, () => {}),
    ).rejects.toThrow(
      `port ${port} (SIGIL_ENCLAVE_PORT=${port}) is in use; set SIGIL_ENCLAVE_PORT to another port, or SIGIL_ENCLAVE_PORT=0 for a free one`,
    );
  });

  it("gives a taken default way to a free port (0), saying which variable would choose one", async () => {
    const port = await taken();
    const lines: string[] = [];
    expect(
      await claimPorts({ anvil: { variable: "SIGIL_ANVIL_PORT", port, chosen: false } }, (l) => lines.push(l)),
    ).toEqual({ anvil: 0 });
    expect(lines).toEqual([
      `port ${port} (the default of SIGIL_ANVIL_PORT) is in use; using a free port instead (set SIGIL_ANVIL_PORT to choose one)`,
    ]);
  });

  it("refuses two variables naming one port, and lets a variable take a port that is only another's default", async () => {
    const port = await free();
    await expect(
      claimPorts(
        {
          edge: { variable: "SIGIL_EDGE_PORT", port, chosen: true },
          stripe: { variable: "SIGIL_STRIPE_PORT", port, chosen: true },
        },
        () => {},
      ),
    ).rejects.toThrow(/SIGIL_STRIPE_PORT=\d+\) is SIGIL_EDGE_PORT's already; set SIGIL_STRIPE_PORT to another port/);
    const lines: string[] = [];
    expect(
      await claimPorts(
        {
          anvil: { variable: "SIGIL_ANVIL_PORT", port, chosen: false },
          edge: { variable: "SIGIL_EDGE_PORT", port, chosen: true },
        },
        (l) => lines.push(l),
      ),
    ).toEqual({ anvil: 0, edge: port });
    expect(lines[0]).toContain("(set SIGIL_ANVIL_PORT to choose one)");
  });
});
