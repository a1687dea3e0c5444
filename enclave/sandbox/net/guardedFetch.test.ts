// The fetch guard against loopback test servers and stub resolvers. Nothing here may leave the
// machine even if the guard breaks: real DNS is mocked away and every socket connect is checked.
import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { checkDestination, FetchError, guardedFetch } from "./guardedFetch.ts";
import type { FetchPolicy, GuardedRequest, Resolver } from "./guardedFetch.ts";

// The default resolver goes through this mock of c-ares' Resolver, never a real DNS server.
const dns = vi.hoisted(() => {
  const refuse = async (_host: string): Promise<string[]> => {
    throw Object.assign(new Error("real DNS must not be used in tests"), { code: "ENOTFOUND" });
  };
  return { resolve4: vi.fn(refuse), resolve6: vi.fn(refuse), options: [] as unknown[] };
});
vi.mock("node:dns/promises", () => {
  class Resolver {
    constructor(options: unknown) {
      dns.options.push(options);
    }
    setServers() {}
    resolve4(host: string) {
      return dns.resolve4(host);
    }
    resolve6(host: string) {
      return dns.resolve6(host);
    }
  }
  return { Resolver, default: { Resolver } };
});

// Safety net: any connect to something other than 127.0.0.1 / ::1 fails before a packet is sent,
// and is recorded so a test can assert that none was even attempted.
const blockedConnects: string[] = [];
const originalConnect = net.Socket.prototype.connect;
function guardedConnect(this: net.Socket, ...args: unknown[]): net.Socket {
  const first = Array.isArray(args[0]) ? (args[0] as unknown[])[0] : args[0];
  let host: unknown;
  let port: unknown;
  let path: unknown;
  if (typeof first === "object" && first !== null) {
    ({ host, port, path } = first as { host?: unknown; port?: unknown; path?: unknown });
  } else {
    port = first;
    host = args[1];
  }
  // http's agent passes `path: null` for TCP, so only a string path without host or port is a Unix socket.
  const unixSocket = typeof path === "string" && path !== "" && host === undefined && port === undefined;
  if (unixSocket || host === "127.0.0.1" || host === "::1")
    return (originalConnect as (...a: unknown[]) => net.Socket).apply(this, args);
  blockedConnects.push(`${String(host)}:${String(port)}`);
  process.nextTick(() =>
    this.destroy(Object.assign(new Error("connect blocked by the test"), { code: "ETESTBLOCKED" })),
  );
  return this;
}

type Hit = { method: string; url: string; headers: http.IncomingHttpHeaders; body: string };

/** A loopback server; `routes` answer by path, everything is recorded in `hits`. */
async function startServer(
  routes: Record<string, (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void>,
) {
  const hits: Hit[] = [];
  const closed: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString();
      hits.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
      res.on("close", () => closed.push(req.url ?? ""));
      const path = new URL(req.url ?? "/", "http://x").pathname;
      const route = routes[path];
      if (route) route(req, res, body);
      else res.writeHead(404).end("not found");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return { server, port, hits, closed, close };
}

type Server = Awaited<ReturnType<typeof startServer>>;

const MAX_BYTES = 10_000;
let main: Server;
let other: Server;
let policy: FetchPolicy;

const noDns: Resolver = async (host) => {
  throw new Error(`unexpected DNS lookup of ${host}`);
};
const resolverOf =
  (...addresses: string[]): Resolver =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));

const get = (url: string, extra: Partial<GuardedRequest> = {}): GuardedRequest => ({
  url,
  method: "GET",
  headers: [],
  ...extra,
});

/** The FetchError a promise rejects with (fails the test if it resolves or throws something else). */
async function fetchError(promise: Promise<unknown>): Promise<FetchError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(FetchError);
  return err as FetchError;
}

const text = (body: Uint8Array) => Buffer.from(body).toString();

beforeAll(async () => {
  net.Socket.prototype.connect = guardedConnect as typeof net.Socket.prototype.connect;
  main = await startServer({
    "/hello": (_req, res) => res.writeHead(200, "Fine", { "X-Test": "yes", "Content-Type": "text/plain" }).end("hello"),
    "/echo": (req, res, body) =>
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ method: req.method, body })),
    "/redirect": (req, res) => {
      const q = new URL(req.url ?? "", "http://x").searchParams;
      res.writeHead(Number(q.get("status") ?? 302), { location: q.get("to") ?? "/hello" }).end("moving");
    },
    "/loop": (_req, res) => res.writeHead(302, { location: "/loop" }).end(),
    "/big": (_req, res) => {
      // Endless body: only an abort by the client ends it.
      res.writeHead(200, { "content-type": "application/octet-stream" });
      const chunk = Buffer.alloc(4096, 0x61);
      const pump = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once("drain", pump);
      };
      pump();
    },
    "/big-declared": (_req, res) => {
      res.writeHead(200, { "content-length": String(MAX_BYTES + 1) });
      res.write("a"); // the rest never comes: the declared length alone must be refused
    },
    "/exact": (_req, res) => res.writeHead(200).end(Buffer.alloc(MAX_BYTES, 0x62)),
    "/hang": () => {},
    "/slow-body": (_req, res) => {
      res.writeHead(200);
      res.write("a");
    },
  });
  other = await startServer({ "/": (_req, res) => res.writeHead(200).end("other") });
  policy = {
    allowHosts: new Set([`127.0.0.1:${main.port}`]),
    denyPorts: new Set<number>(),
    timeoutMs: 5_000,
    maxResponseBytes: MAX_BYTES,
    maxRedirects: 3,
  };
});

afterEach(() => {
  // Cleared before asserting so one failure does not cascade into the next tests.
  const connects = blockedConnects.splice(0);
  const otherHits = other.hits.splice(0);
  expect(connects).toEqual([]);
  expect(otherHits).toEqual([]);
});

afterAll(async () => {
  net.Socket.prototype.connect = originalConnect;
  await Promise.all([main?.close(), other?.close()]);
});

describe("refusals before any connection", () => {
  const nonPublic: Array<[string, string]> = [
    ["10.0.0.1", "private"],
    ["172.16.5.4", "private"],
    ["192.168.1.1", "private"],
    ["fd12::1", "private"],
    ["127.0.0.1", "loopback"],
    ["::1", "loopback"],
    ["::ffff:127.0.0.1", "loopback"],
    ["0.0.0.0", "unspecified"],
    ["::", "unspecified"],
    ["169.254.1.1", "link-local"],
    ["fe80::1", "link-local"],
    ["100.64.0.1", "carrier-grade NAT"],
    ["169.254.169.254", "cloud metadata"],
    ["fd00:ec2::254", "cloud metadata"],
    ["64:ff9b::a9fe:a9fe", "cloud metadata"],
    ["224.0.0.1", "multicast"],
    ["ff02::1", "multicast"],
    ["255.255.255.255", "broadcast"],
    ["192.0.2.1", "documentation"],
    ["198.18.0.1", "benchmarking"],
    ["240.0.0.1", "reserved"],
    ["fe80::1%eth0", "unrecognized"],
  ];
  it.each(nonPublic)("a host name resolving to %s (%s) is refused", async (address, words) => {
    const resolve = vi.fn(resolverOf(address));
    const err = await fetchError(guardedFetch(get("http://service.example/x"), policy, { resolve }));
    expect(err.reason).toBe("network_refused");
    expect(err.message).toMatch(
      new RegExp(`^fetch to service\\.example:80 refused: it resolves to an? ${words} address\\.$`),
    );
    expect(err.message).not.toContain(address.split("%")[0]); // internal addresses are not echoed to scripts
    expect(resolve).toHaveBeenCalledExactlyOnceWith("service.example");
  });

  it.each([
    ["93.184.215.14", "10.0.0.1"],
    ["10.0.0.1", "93.184.215.14"],
    ["2606:4700::1111", "::1"],
    ["93.184.215.14", "169.254.169.254"],
  ])("a host name resolving to %s and %s is refused", async (a, b) => {
    const err = await fetchError(guardedFetch(get("https://mixed.example/"), policy, { resolve: resolverOf(a, b) }));
    expect(err.reason).toBe("network_refused");
    expect(err.message).toMatch(/^fetch to mixed\.example:443 refused: it resolves to an? .+ address\.$/);
  });

  it.each([
    ["http://127.0.0.1/", "127.0.0.1:80", "loopback"],
    ["http://127.1.2.3/", "127.1.2.3:80", "loopback"],
    ["http://localhost/", "localhost:80", "loopback"],
    ["http://LOCALHOST./", "localhost.:80", "loopback"],
    ["http://foo.localhost/", "foo.localhost:80", "loopback"],
    ["http://[::1]/", "[::1]:80", "loopback"],
    ["http://[0:0:0:0:0:0:0:1]:8080/", "[::1]:8080", "loopback"],
    ["http://[::ffff:127.0.0.1]/", "[::ffff:7f00:1]:80", "loopback"],
    ["http://[::ffff:7f00:1]/", "[::ffff:7f00:1]:80", "loopback"],
    ["http://[::127.0.0.1]/", "[::7f00:1]:80", "loopback"],
    ["http://[64:ff9b::127.0.0.1]/", "[64:ff9b::7f00:1]:80", "loopback"],
    ["http://[2002:7f00:1::]/", "[2002:7f00:1::]:80", "loopback"],
    ["http://2130706433/", "127.0.0.1:80", "loopback"],
    ["http://0x7f000001/", "127.0.0.1:80", "loopback"],
    ["http://0177.0.0.1/", "127.0.0.1:80", "loopback"],
    ["http://127.0.0.1./", "127.0.0.1:80", "loopback"],
    ["http://127.1/", "127.0.0.1:80", "loopback"],
    ["https://127.0.0.1:8443/", "127.0.0.1:8443", "loopback"],
    ["http://0/", "0.0.0.0:80", "unspecified"],
    ["http://[::]/", "[::]:80", "unspecified"],
    ["http://169.254.169.254/latest/meta-data/", "169.254.169.254:80", "cloud metadata"],
    ["http://[fd00:ec2::254]/", "[fd00:ec2::254]:80", "cloud metadata"],
    ["http://10.1.2.3:8080/", "10.1.2.3:8080", "private"],
    ["http://[fe80::1]/", "[fe80::1]:80", "link-local"],
  ])("%s is refused without DNS or a connection", async (url, hostPort, words) => {
    const resolve = vi.fn(noDns);
    const err = await fetchError(guardedFetch(get(url), policy, { resolve }));
    expect(err.reason).toBe("network_refused");
    expect(err.message).toBe(`fetch to ${hostPort} refused: ${words} address.`);
    expect(resolve).not.toHaveBeenCalled();
  });

  it("refuses the main server's own loopback port when it is not allow-listed", async () => {
    const err = await fetchError(
      guardedFetch(
        get(`http://127.0.0.1:${main.port}/hello`),
        { ...policy, allowHosts: new Set() },
        { resolve: noDns },
      ),
    );
    expect(err.reason).toBe("network_refused");
    expect(main.hits).toEqual([]);
  });

  it.each([
    "ftp://example.com/file",
    "file:///etc/passwd",
    "data:text/plain,hello",
    "javascript:alert(1)",
    "ws://example.com/",
    "gopher://example.com/",
  ])("%s is refused: only http and https", async (url) => {
    const err = await fetchError(guardedFetch(get(url), policy, { resolve: noDns }));
    expect(err.reason).toBe("network_refused");
    expect(err.message).toMatch(/^fetch to an? [a-z]+: URL refused: only http and https are allowed\.$/);
  });

  it.each(["http://user:pass@example.com/", "http://user@example.com/", `http://u:p@127.0.0.1:0/`])(
    "%s is refused: credentials in the URL",
    async (url) => {
      const err = await fetchError(guardedFetch(get(url), policy, { resolve: noDns }));
      expect(err.reason).toBe("invalid_request");
      expect(err.message).toBe("fetch URL must not contain a user name or password.");
    },
  );

  it.each([
    [get("/relative"), "fetch needs an absolute http or https URL."],
    [get("http://[::1"), "fetch needs an absolute http or https URL."],
    [get("http://example.com/", { method: "CONNECT" }), "fetch method CONNECT is not allowed."],
    [get("http://example.com/", { method: "GE T" }), 'fetch method "GE T" is not valid.'],
    [get("http://example.com/", { body: new Uint8Array([1]) }), "fetch with method GET cannot have a body."],
    [
      get("http://example.com/", { headers: [["x-bad", "a\r\nb"]] }),
      'fetch header "x-bad" has an invalid name or value.',
    ],
    [
      get("http://example.com/", { headers: [["bad name", "a"]] }),
      'fetch header "bad name" has an invalid name or value.',
    ],
  ])("malformed requests are invalid_request (%#)", async (request, message) => {
    const err = await fetchError(guardedFetch(request, policy, { resolve: noDns }));
    expect(err.reason).toBe("invalid_request");
    expect(err.message).toBe(message);
  });

  it("an unresolvable name is a network_error without a stack in the message", async () => {
    for (const resolve of [resolverOf(), noDns]) {
      const err = await fetchError(guardedFetch(get("http://nowhere.example/"), policy, { resolve }));
      expect(err.reason).toBe("network_error");
      expect(err.message).toBe("fetch to nowhere.example:80 failed: the host name could not be resolved.");
    }
  });
});

describe("checkDestination (the decision, never a connection)", () => {
  it("lets a host name resolving only to public addresses through, pinned to the first answer", async () => {
    const resolve = vi.fn(resolverOf("93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"));
    const dest = await checkDestination("http://example.test/page?q=1", policy, resolve);
    expect(dest).toMatchObject({
      hostPort: "example.test:80",
      port: 80,
      address: "93.184.215.14",
      family: 4,
      addressClass: "public",
      allowListed: false,
    });
    expect(dest.url.href).toBe("http://example.test/page?q=1");
    expect(resolve).toHaveBeenCalledExactlyOnceWith("example.test");
  });

  it("lets public IP literals through on any port, IPv6 included", async () => {
    await expect(checkDestination("https://8.8.8.8/", policy, noDns)).resolves.toMatchObject({
      hostPort: "8.8.8.8:443",
      address: "8.8.8.8",
      family: 4,
    });
    await expect(checkDestination("http://[2606:4700::1111]:8080/", policy, noDns)).resolves.toMatchObject({
      hostPort: "[2606:4700::1111]:8080",
      address: "2606:4700::1111",
      family: 6,
    });
  });

  it("an allow-listed host:port may resolve to private addresses; another port of it may not", async () => {
    const allow = { allowHosts: new Set(["db.internal:5984", "[fd00::5]:80"]), denyPorts: new Set<number>() };
    await expect(checkDestination("http://DB.internal:5984/", allow, resolverOf("10.0.0.5"))).resolves.toMatchObject({
      address: "10.0.0.5",
      allowListed: true,
    });
    await expect(checkDestination("http://[fd00::5]/", allow, noDns)).resolves.toMatchObject({
      address: "fd00::5",
      family: 6,
      allowListed: true,
    });
    await expect(checkDestination("http://db.internal:5985/", allow, resolverOf("10.0.0.5"))).rejects.toMatchObject({
      reason: "network_refused",
    });
  });

  it("deny ports win over the allow list on loopback and unspecified addresses", async () => {
    const allow = {
      allowHosts: new Set(["127.0.0.1:8443", "localhost:8443", "0.0.0.0:8443", "app.internal:8443", "10.0.0.5:8443"]),
      denyPorts: new Set([8443]),
    };
    for (const url of [
      "http://127.0.0.1:8443/",
      "http://localhost:8443/",
      "http://0.0.0.0:8443/",
      "http://app.internal:8443/",
    ]) {
      await expect(checkDestination(url, allow, resolverOf("127.0.0.1"))).rejects.toMatchObject({
        reason: "network_refused",
        message: expect.stringMatching(/refused: port 8443 belongs to the service itself\.$/),
      });
    }
    await expect(checkDestination("http://10.0.0.5:8443/", allow, noDns)).resolves.toMatchObject({ allowListed: true });
  });

  it("the default resolver is c-ares (dns.Resolver, with its own timeout): A and AAAA answers all checked, and it is skipped for literals and localhost", async () => {
    dns.resolve4.mockClear();
    dns.resolve6.mockClear();
    await checkDestination("http://localhost:1/", { allowHosts: new Set(["localhost:1"]), denyPorts: new Set() });
    await checkDestination("http://8.8.8.8/", policy);
    expect(dns.resolve4).not.toHaveBeenCalled();
    dns.resolve4.mockResolvedValueOnce(["93.184.215.14"]);
    dns.resolve6.mockResolvedValueOnce(["fd00::1"]);
    await expect(checkDestination("http://mocked.example/", policy)).rejects.toMatchObject({
      reason: "network_refused",
    });
    expect(dns.resolve4).toHaveBeenCalledExactlyOnceWith("mocked.example");
    expect(dns.resolve6).toHaveBeenCalledExactlyOnceWith("mocked.example");
    expect(dns.options).toContainEqual({ timeout: 2_000, tries: 2 });
    // A name with an A record and no AAAA record resolves to its A record.
    dns.resolve4.mockResolvedValueOnce(["93.184.215.14"]);
    await expect(checkDestination("http://mocked.example/", policy)).resolves.toMatchObject({
      address: "93.184.215.14",
      family: 4,
    });
  });
});

describe("fetching from an allow-listed loopback server", () => {
  it("returns status, headers and body", async () => {
    const res = await guardedFetch(get(`http://127.0.0.1:${main.port}/hello`), policy, { resolve: noDns });
    expect(res.status).toBe(200);
    expect(res.statusText).toBe("Fine");
    expect(res.url).toBe(`http://127.0.0.1:${main.port}/hello`);
    expect(res.redirected).toBe(false);
    expect(text(res.body)).toBe("hello");
    expect(res.headers).toContainEqual(["x-test", "yes"]);
    expect(res.headers).toContainEqual(["content-type", "text/plain"]);
  });

  it("sends its own host, framing and accept-encoding headers, dropping the caller's", async () => {
    main.hits.length = 0;
    const res = await guardedFetch(
      {
        url: `http://127.0.0.1:${main.port}/echo?a=1`,
        method: "post",
        headers: [
          ["Host", "evil.example"],
          ["Connection", "keep-alive"],
          ["Content-Length", "999"],
          ["Transfer-Encoding", "chunked"],
          ["X-Custom", "kept"],
          ["Content-Type", "text/plain"],
        ],
        body: new TextEncoder().encode("payload"),
      },
      policy,
      { resolve: noDns },
    );
    expect(JSON.parse(text(res.body))).toEqual({ method: "POST", body: "payload" });
    const hit = main.hits[0];
    expect(hit?.url).toBe("/echo?a=1");
    expect(hit?.headers.host).toBe(`127.0.0.1:${main.port}`);
    expect(hit?.headers["content-length"]).toBe("7");
    expect(hit?.headers["transfer-encoding"]).toBeUndefined();
    expect(hit?.headers["accept-encoding"]).toBe("identity");
    expect(hit?.headers["x-custom"]).toBe("kept");
    expect(hit?.headers.connection).toBe("close");
  });

  it("keeps a caller's accept-encoding", async () => {
    main.hits.length = 0;
    await guardedFetch(get(`http://127.0.0.1:${main.port}/echo`, { headers: [["Accept-Encoding", "gzip"]] }), policy, {
      resolve: noDns,
    });
    expect(main.hits[0]?.headers["accept-encoding"]).toBe("gzip");
  });

  it("reaches an allow-listed localhost:port without asking DNS", async () => {
    main.hits.length = 0;
    const allow = { ...policy, allowHosts: new Set([`localhost:${main.port}`]) };
    const res = await guardedFetch(get(`http://localhost:${main.port}/hello`), allow, { resolve: noDns });
    expect(text(res.body)).toBe("hello");
    expect(main.hits[0]?.headers.host).toBe(`localhost:${main.port}`);
  });

  it("connects to the address it checked: one lookup per hop, however the name resolves later", async () => {
    main.hits.length = 0;
    const answers = ["127.0.0.1", "10.9.9.9"];
    const resolve = vi.fn<Resolver>(async () => [{ address: answers.shift() ?? "10.9.9.9", family: 4 }]);
    const allow = { ...policy, allowHosts: new Set([`rebind.internal:${main.port}`]) };
    const res = await guardedFetch(get(`http://rebind.internal:${main.port}/hello`), allow, { resolve });
    expect(text(res.body)).toBe("hello");
    expect(resolve).toHaveBeenCalledTimes(1);
    expect(main.hits[0]?.headers.host).toBe(`rebind.internal:${main.port}`);
  });

  it("refuses a deny port even when allow-listed", async () => {
    main.hits.length = 0;
    const denied = {
      ...policy,
      allowHosts: new Set([`127.0.0.1:${main.port}`, `localhost:${main.port}`]),
      denyPorts: new Set([main.port]),
    };
    for (const host of ["127.0.0.1", "localhost"]) {
      const err = await fetchError(guardedFetch(get(`http://${host}:${main.port}/hello`), denied, { resolve: noDns }));
      expect(err.reason).toBe("network_refused");
      expect(err.message).toBe(
        `fetch to ${host}:${main.port} refused: port ${main.port} belongs to the service itself.`,
      );
    }
    expect(main.hits).toEqual([]);
  });
});

describe("redirects", () => {
  const redirectTo = (to: string, status = 302) =>
    `http://127.0.0.1:${main.port}/redirect?status=${status}&to=${encodeURIComponent(to)}`;

  it("follows an allowed redirect and reports the final URL", async () => {
    const res = await guardedFetch(get(redirectTo("/hello")), policy, { resolve: noDns });
    expect(res.status).toBe(200);
    expect(text(res.body)).toBe("hello");
    expect(res.redirected).toBe(true);
    expect(res.url).toBe(`http://127.0.0.1:${main.port}/hello`);
  });

  it.each([
    () => [`http://127.0.0.1:${other.port}/`, `127.0.0.1:${other.port}`, "loopback"],
    () => [`http://localhost:${other.port}/`, `localhost:${other.port}`, "loopback"],
    () => [`http://[::1]:${other.port}/`, `[::1]:${other.port}`, "loopback"],
    () => [`http://0x7f000001:${other.port}/`, `127.0.0.1:${other.port}`, "loopback"],
    () => [`http://2130706433:${other.port}/`, `127.0.0.1:${other.port}`, "loopback"],
    () => [`http://[::ffff:127.0.0.1]:${other.port}/`, `[::ffff:7f00:1]:${other.port}`, "loopback"],
    () => ["http://169.254.169.254/latest/meta-data/", "169.254.169.254:80", "cloud metadata"],
    () => ["http://0/", "0.0.0.0:80", "unspecified"],
    () => ["file:///etc/passwd", "", ""],
  ])("refuses the hop to a non-allow-listed destination (%#)", async (make) => {
    const [to, hostPort, words] = make() as [string, string, string];
    for (const status of [301, 302, 303, 307, 308]) {
      const err = await fetchError(guardedFetch(get(redirectTo(to, status)), policy, { resolve: noDns }));
      expect(err.reason).toBe("network_refused");
      if (hostPort) expect(err.message).toBe(`fetch to ${hostPort} refused: ${words} address.`);
    }
  });

  it("re-checks DNS on the hop: a name that resolves to a private address is refused there", async () => {
    const resolve = vi.fn(resolverOf("10.0.0.7"));
    const err = await fetchError(
      guardedFetch(get(redirectTo("http://internal.example:8080/admin")), policy, { resolve }),
    );
    expect(err.reason).toBe("network_refused");
    expect(err.message).toBe("fetch to internal.example:8080 refused: it resolves to a private address.");
    expect(resolve).toHaveBeenCalledExactlyOnceWith("internal.example");
  });

  it("stops after maxRedirects with limit_exceeded", async () => {
    main.hits.length = 0;
    const err = await fetchError(guardedFetch(get(`http://127.0.0.1:${main.port}/loop`), policy, { resolve: noDns }));
    expect(err.reason).toBe("limit_exceeded");
    expect(err.message).toBe("fetch followed more than 3 redirects.");
    expect(main.hits).toHaveLength(1 + policy.maxRedirects);
  });

  it("follows exactly maxRedirects", async () => {
    const chain = redirectTo(redirectTo(redirectTo("/hello")));
    const res = await guardedFetch(get(chain), policy, { resolve: noDns });
    expect(text(res.body)).toBe("hello");
    await expect(guardedFetch(get(chain), { ...policy, maxRedirects: 2 }, { resolve: noDns })).rejects.toMatchObject({
      reason: "limit_exceeded",
    });
  });

  const post = (url: string): GuardedRequest => ({
    url,
    method: "POST",
    headers: [
      ["content-type", "text/plain"],
      ["x-keep", "1"],
    ],
    body: new TextEncoder().encode("form"),
  });

  it.each([
    [303, "GET", ""],
    [302, "GET", ""],
    [301, "GET", ""],
    [307, "POST", "form"],
    [308, "POST", "form"],
  ])("POST answered with %i continues as %s", async (status, method, body) => {
    main.hits.length = 0;
    const res = await guardedFetch(post(redirectTo("/echo", status)), policy, { resolve: noDns });
    expect(JSON.parse(text(res.body))).toEqual({ method, body });
    const second = main.hits[1];
    expect(second?.headers["x-keep"]).toBe("1");
    expect(second?.headers["content-type"]).toBe(method === "GET" ? undefined : "text/plain");
  });

  it("303 turns PUT into GET; 302 keeps PUT", async () => {
    const put = { ...post(redirectTo("/echo", 303)), method: "PUT" };
    expect(JSON.parse(text((await guardedFetch(put, policy, { resolve: noDns })).body))).toEqual({
      method: "GET",
      body: "",
    });
    const put302 = { ...post(redirectTo("/echo", 302)), method: "PUT" };
    expect(JSON.parse(text((await guardedFetch(put302, policy, { resolve: noDns })).body))).toEqual({
      method: "PUT",
      body: "form",
    });
  });

  it("drops credentials when a redirect leaves the origin", async () => {
    main.hits.length = 0;
    const allow = { ...policy, allowHosts: new Set([`127.0.0.1:${main.port}`, `localhost:${main.port}`]) };
    const request = get(redirectTo(`http://localhost:${main.port}/echo`), {
      headers: [
        ["authorization", "Bearer x"],
        ["cookie", "a=b"],
        ["x-keep", "1"],
      ],
    });
    await guardedFetch(request, allow, { resolve: noDns });
    expect(main.hits[0]?.headers.authorization).toBe("Bearer x");
    expect(main.hits[1]?.headers.authorization).toBeUndefined();
    expect(main.hits[1]?.headers.cookie).toBeUndefined();
    expect(main.hits[1]?.headers["x-keep"]).toBe("1");
  });

  it('"manual" returns the redirect itself; "error" fails', async () => {
    const res = await guardedFetch(get(redirectTo(`http://127.0.0.1:${other.port}/`), { redirect: "manual" }), policy, {
      resolve: noDns,
    });
    expect(res.status).toBe(302);
    expect(res.headers).toContainEqual(["location", `http://127.0.0.1:${other.port}/`]);
    expect(text(res.body)).toBe("moving");
    expect(res.redirected).toBe(false);
    const err = await fetchError(
      guardedFetch(get(redirectTo("/hello"), { redirect: "error" }), policy, { resolve: noDns }),
    );
    expect(err.reason).toBe("network_error");
  });
});

describe("limits", () => {
  it("an endless body is cut off at maxResponseBytes with limit_exceeded, and the socket is closed", async () => {
    main.closed.length = 0;
    const started = Date.now();
    const err = await fetchError(guardedFetch(get(`http://127.0.0.1:${main.port}/big`), policy, { resolve: noDns }));
    expect(err.reason).toBe("limit_exceeded");
    expect(err.message).toBe(`fetch to 127.0.0.1:${main.port}: the response is larger than ${MAX_BYTES} bytes.`);
    expect(Date.now() - started).toBeLessThan(2_000);
    await vi.waitFor(() => expect(main.closed).toContain("/big"));
  });

  it("a declared content-length over the cap is refused before the body arrives", async () => {
    const err = await fetchError(
      guardedFetch(get(`http://127.0.0.1:${main.port}/big-declared`), policy, { resolve: noDns }),
    );
    expect(err.reason).toBe("limit_exceeded");
  });

  it("a body of exactly maxResponseBytes is returned", async () => {
    const res = await guardedFetch(get(`http://127.0.0.1:${main.port}/exact`), policy, { resolve: noDns });
    expect(res.body.byteLength).toBe(MAX_BYTES);
  });

  it.each(["/hang", "/slow-body"])("%s times out within timeoutMs", async (path) => {
    const started = Date.now();
    const err = await fetchError(
      guardedFetch(get(`http://127.0.0.1:${main.port}${path}`), { ...policy, timeoutMs: 300 }, { resolve: noDns }),
    );
    const elapsed = Date.now() - started;
    expect(err.reason).toBe("timeout");
    expect(err.message).toBe("fetch timed out after 300 ms.");
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(1_000);
  });

  it("the timeout covers DNS resolution too", async () => {
    const never: Resolver = () => new Promise(() => {});
    const err = await fetchError(
      guardedFetch(get("http://slow-dns.example/"), { ...policy, timeoutMs: 200 }, { resolve: never }),
    );
    expect(err.reason).toBe("timeout");
  });

  it("the caller's signal aborts the fetch", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const err = await fetchError(
      guardedFetch(get(`http://127.0.0.1:${main.port}/hang`), policy, { resolve: noDns, signal: controller.signal }),
    );
    expect(err.reason).toBe("network_error");
    expect(err.message).toBe("fetch was aborted.");
  });

  it("a closed port is a network_error", async () => {
    const spare = await startServer({});
    const port = spare.port;
    await spare.close();
    const allow = { ...policy, allowHosts: new Set([`127.0.0.1:${port}`]) };
    const err = await fetchError(guardedFetch(get(`http://127.0.0.1:${port}/`), allow, { resolve: noDns }));
    expect(err.reason).toBe("network_error");
    expect(err.message).toBe(`fetch to 127.0.0.1:${port} failed: connection refused.`);
  });
});
