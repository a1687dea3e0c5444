// The ports the local stack listens on, checked before anything starts (each is probed, then let
// go: one that another program takes in between still fails its server at start). A port the user
// chose (its variable set) that is taken stops the stack with a message naming that variable and
// how to choose another; a default port that is taken gives way to a free one, and the log names
// the variable that would choose it.
import { createServer } from "node:net";

/** A port as configured: the variable that sets it, its value, and whether the user set it. */
export type PortChoice = { variable: string; port: number; chosen: boolean };

/** Why nothing can listen on 127.0.0.1:`port` right now (an error code), or undefined when it can. */
export async function portProblem(port: number): Promise<string | undefined> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(undefined)));
  });
}

/**
 * The port each of `choices` starts on: its own when free; 0 (the process picks, or the caller
 * finds one) when it is 0, or a default that is taken. Chosen ports are claimed first, so a
 * default never takes a port the user named; a chosen port that is taken, by another program or by
 * another of the variables, is an error naming the variable.
 */
export async function claimPorts<C extends { [name: string]: PortChoice }>(
  choices: C,
  log: (line: string) => void,
): Promise<{ [K in keyof C]: number }> {
  const claimedBy = new Map<number, string>();
  const ports: Record<string, number> = {};
  const all = Object.entries(choices).sort(([, a], [, b]) => Number(b.chosen) - Number(a.chosen));
  for (const [key, { variable, port, chosen }] of all) {
    ports[key] = 0;
    if (port === 0) continue;
    const holder = claimedBy.get(port);
    const problem = holder === undefined ? await portProblem(port) : "EADDRINUSE";
    if (problem === undefined) {
      ports[key] = port;
      claimedBy.set(port, variable);
      continue;
    }
    const why =
      holder !== undefined
        ? `is ${holder}'s already`
        : problem === "EADDRINUSE"
          ? "is in use"
          : `cannot be listened on (${problem})`;
    if (chosen)
      throw new Error(
        `port ${port} (${variable}=${port}) ${why}; set ${variable} to another port, or ${variable}=0 for a free one`,
      );
    log(`port ${port} (the default of ${variable}) ${why}; using a free port instead (set ${variable} to choose one)`);
  }
  return ports as { [K in keyof C]: number };
}
