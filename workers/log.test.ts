// The edge's logs, inside workerd: the lines go through console (workerd has no process.stdout),
// every line written for a request carries its request id and correlation id, and an error the
// client must not read (a channel failure naming an enclave's URL) reaches the log, not the answer.
import { Hono } from "hono";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ChannelDeliveryError } from "../shared/channel/client.ts";
import { isExposed, SigilError } from "../shared/errors.ts";
import { AttestationRefused } from "./enclave/attest.ts";
import { EnclaveLostError } from "./enclave/client.ts";
import { errorResponse } from "./errors.ts";
import { edgeLog, requestLog } from "./log.ts";
import { requestId } from "./middleware/requestId/index.ts";
import type { EdgeEnv } from "./router.ts";

const ENCLAVE_URL = "http://10.9.8.7:8443";

/** An app with the edge's request-id middleware and error handler, and routes that log and fail. */
function app() {
  const a = new Hono<EdgeEnv>();
  a.use(requestId());
  a.get("/logs", (c) => {
    c.get("log").info("did something", { items: 2, api_key: "AAAAsecret" });
    return c.text("ok");
  });
  a.get("/lost", () => {
    throw new ChannelDeliveryError(`no answer from ${ENCLAVE_URL}/channel/v1`);
  });
  a.onError((err, c) => errorResponse(c, err));
  return a;
}

/** The JSON lines written to console.log and console.error while `run` runs. */
async function captured(
  run: () => Promise<unknown>,
): Promise<{ out: Record<string, unknown>[]; err: Record<string, unknown>[] }> {
  const out = vi.spyOn(console, "log").mockImplementation(() => undefined);
  const err = vi.spyOn(console, "error").mockImplementation(() => undefined);
  await run();
  const lines = (spy: typeof out) =>
    spy.mock.calls.map(([line]) => JSON.parse(String(line)) as Record<string, unknown>);
  return { out: lines(out), err: lines(err) };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("the edge's logs", () => {
  it("a line logged for a request carries its request id and correlation id, with the secret field redacted", async () => {
    let res: Response | undefined;
    const { out } = await captured(async () => {
      res = await app().request("/logs", { headers: { "x-correlation-id": "trace-42" } });
    });
    expect(res?.status).toBe(200);
    expect(out).toEqual([
      {
        time: expect.any(String),
        level: "info",
        msg: "did something",
        service: "edge",
        requestId: res?.headers.get("x-request-id"),
        correlationId: "trace-42",
        items: 2,
        api_key: "[redacted]",
      },
    ]);
  });

  it("without a correlation id a line carries the request id alone", async () => {
    let res: Response | undefined;
    const { out } = await captured(async () => {
      res = await app().request("/logs");
    });
    expect(out[0]).toMatchObject({ requestId: res?.headers.get("x-request-id") });
    expect(out[0]).not.toHaveProperty("correlationId");
  });

  it("a channel failure answers a bare 500 internal_error; its message, with the enclave's URL, goes to the request's error line", async () => {
    let res: Response | undefined;
    let body = "";
    const { err } = await captured(async () => {
      res = await app().request("/lost", { headers: { "x-correlation-id": "trace-43" } });
      body = await res.text();
    });
    expect(res?.status).toBe(500);
    const requestIdHeader = res?.headers.get("x-request-id");
    expect(JSON.parse(body)).toStrictEqual({
      error: { code: "internal_error", message: "an internal error occurred", request_id: requestIdHeader },
    });
    expect(body).not.toContain("10.9.8.7");
    expect(err).toEqual([
      {
        time: expect.any(String),
        level: "error",
        msg: "request failed",
        service: "edge",
        requestId: requestIdHeader,
        correlationId: "trace-43",
        code: "internal_error",
        error: `no answer from ${ENCLAVE_URL}/channel/v1`,
      },
    ]);
  });

  it("requestLog gives the same ids to code that has the ids but no context", async () => {
    const { err } = await captured(async () => {
      requestLog({ requestId: "r-9", correlationId: null }).error("enclave skipped", { enclave: ENCLAVE_URL });
      edgeLog.error("no request");
    });
    expect(err[0]).toMatchObject({ msg: "enclave skipped", requestId: "r-9", service: "edge" });
    expect(err[0]).not.toHaveProperty("correlationId");
    expect(err[1]).not.toHaveProperty("requestId");
  });
});

describe("the edge's own errors", () => {
  it("AttestationRefused is a SigilError with enclave_unavailable, not for the client", () => {
    const err = new AttestationRefused(`${ENCLAVE_URL} runs a simulated TEE`);
    expect(err).toBeInstanceOf(SigilError);
    expect(err).toMatchObject({ name: "AttestationRefused", code: "enclave_unavailable", status: 503, expose: false });
  });

  it("EnclaveLostError is the client's 503 enclave_unavailable, whose message does not name the enclave", () => {
    const err = new EnclaveLostError(ENCLAVE_URL);
    expect(isExposed(err)).toBe(true);
    expect(err).toMatchObject({ code: "enclave_unavailable", status: 503, enclave: ENCLAVE_URL });
    expect(err.message).not.toContain("10.9.8.7");
  });
});
