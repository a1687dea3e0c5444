// The enclave's end of the attested channel (docs/design/attestation.md): a channel key made at boot and
// never stored, its quote (report_data = SHA-512("sigil-channel-v1:" ‖ key)) served at
// `GET /channel`, and `POST /channel/v1`, which opens an operation sealed in a session an allowed
// edge opened to that key and hands it to the dispatcher (operations/index.ts, reachable no other
// way). The answer goes back sealed for that request alone.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Hono } from "hono";
import {
  ChannelError,
  ChannelRecipient,
  channelReportData,
  generateChannelKeyPair,
  toBase64Url,
  type ChannelKeyPair,
} from "../../shared/channel/channel.ts";
import type { ChannelDocument } from "../../shared/channel/client.ts";
import { errorBody, SigilError } from "../../shared/errors.ts";
import type { BucketRate } from "../../shared/tokenBucket.ts";
import type { OperationAnswer, OperationRequest } from "../../shared/channel/channel.ts";
import type { Logger } from "../../shared/log.ts";
import { nodeAead } from "./nodeAead.ts";

/** A quote over 64 bytes of report data, from the enclave's attestation source. */
export type QuoteSource = (
  reportData: Uint8Array,
) => Promise<{ quote: string; event_log: string; simulated?: boolean }>;

/** Sealed requests carry at most an operation's 6 MiB body (sigil_action's), base64url-encoded, plus the envelope. */
const MAX_SEALED_BYTES = 9 << 20;

export type Channel = { recipient: ChannelRecipient; document(): Promise<ChannelDocument> };

/** Makes this boot's channel key and the document that proves it (its quote is taken once). */
export async function createChannel(args: {
  allowedEdgeKeys: Uint8Array[];
  quote: QuoteSource;
  instanceId?: string;
  key?: ChannelKeyPair;
  /** Refused session openings each peer address may send before they are answered 429 (a burst, then per second). */
  openings?: BucketRate;
}): Promise<Channel> {
  const key = args.key ?? (await generateChannelKeyPair());
  const recipient = new ChannelRecipient({
    key,
    allowedEdgeKeys: args.allowedEdgeKeys,
    aead: nodeAead,
    ...(args.openings ? { openings: args.openings } : {}),
  });
  let doc: Promise<ChannelDocument> | undefined;
  const document = () => {
    doc ??= (async () => {
      const q = await args.quote(await channelReportData(key.publicKey));
      return {
        public_key: toBase64Url(key.publicKey),
        quote: q.quote,
        event_log: q.event_log,
        ...(args.instanceId ? { instance_id: args.instanceId } : {}),
        ...(q.simulated ? { simulated: true } : {}),
      };
    })();
    doc.catch(() => (doc = undefined));
    return doc;
  };
  return { recipient, document };
}

/** `GET /channel` on the enclave's app: the channel key and the quote that binds it. */
export function channelRoutes<E extends object>(app: Hono<E>, channel: Channel): void {
  app.get("/channel", async (c) => {
    const doc = await channel.document();
    if (doc.simulated) c.header("X-Attestation-Simulated", "1");
    return c.json(doc);
  });
}

/**
 * `POST /channel/v1`, the path every request of the edge takes, served straight from Node's HTTP
 * server (no router, no web-stream body): read the sealed request (at most MAX_SEALED_BYTES, refused
 * on its declared length before reading), open it, hand the operation to `handle`, seal the answer. Refusals
 * are answered outside the seal — there is no trusted sender to seal them for — as
 * `{channel_error}`: 409 for what the edge mends by itself (a new key, a new session), 429 with
 * Retry-After for a peer over its budget of session openings, 401 for the rest. The peer's address
 * is the source whose openings are counted. Refusals are logged at most once per reason every few
 * seconds, with how many there were: a flood of junk must not become a flood of log lines.
 */
export function channelListener(
  channel: Channel,
  handle: (request: OperationRequest, bytes: number) => Promise<OperationAnswer>,
  log: Logger,
): (req: IncomingMessage, res: ServerResponse) => void {
  const send = (
    res: ServerResponse,
    status: number,
    body: unknown,
    options: { close?: boolean; retryAfter?: number } = {},
  ) => {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(text),
      ...(options.close ? { connection: "close" } : {}),
      ...(options.retryAfter === undefined ? {} : { "retry-after": String(options.retryAfter) }),
    });
    res.end(text);
  };
  const refusals = refusalLog(log);
  const tooLarge = (res: ServerResponse) => {
    // The rest of the body is never read: this connection cannot carry another request.
    const err = new SigilError("payload_too_large", `a sealed request must be at most ${MAX_SEALED_BYTES} bytes`);
    send(res, 413, errorBody(err, crypto.randomUUID()), { close: true });
  };
  return (req, res) => {
    if (Number(req.headers["content-length"] ?? 0) > MAX_SEALED_BYTES) {
      tooLarge(res);
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let refused = false;
    req.on("data", (chunk: Buffer) => {
      if (refused) return;
      size += chunk.length;
      if (size > MAX_SEALED_BYTES) {
        refused = true;
        tooLarge(res);
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => {
      if (refused) return;
      void answer(Buffer.concat(chunks).toString("utf8"), req.socket.remoteAddress ?? "unknown").then(
        ({ status, body, retryAfter }) => send(res, status, body, retryAfter === undefined ? {} : { retryAfter }),
        (err: unknown) => {
          log.error("the channel failed to answer", { error: err instanceof Error ? err.message : String(err) });
          send(
            res,
            500,
            errorBody(new SigilError("internal_error", "an internal error occurred"), crypto.randomUUID()),
          );
        },
      );
    });
  };

  async function answer(text: string, source: string): Promise<{ status: number; body: unknown; retryAfter?: number }> {
    let sealed: unknown = null;
    try {
      sealed = JSON.parse(text);
    } catch {
      // opened as nothing: refused as malformed below
    }
    let opened;
    try {
      opened = await channel.recipient.open(sealed, { source });
    } catch (err) {
      if (!(err instanceof ChannelError)) throw err;
      refusals.note(err.reason);
      const body = { channel_error: err.reason };
      if (err.reason === "too_many_openings") return { status: 429, body, retryAfter: err.retryAfterSeconds ?? 1 };
      return { status: err.reason === "unknown_channel_key" || err.reason === "unknown_session" ? 409 : 401, body };
    }
    const { op, ids, input, idempotency_key } = opened.request;
    const answer = await handle(
      { op, ids, input, ...(idempotency_key === undefined ? {} : { idempotency_key }) },
      opened.bytes,
    );
    return { status: 200, body: await opened.sealResponse(JSON.stringify(answer)) };
  }
}

/**
 * Outside production, SIGUSR2 makes the enclave forget its channel sessions — only those: the key,
 * the nonces seen and everything else stay. The soak (test/soak/) sends it to check that the edge
 * mends a lost session by itself (unknown_session, a new session, the request sent once more)
 * while traffic flows. It is the narrowest way in: nothing new is reachable over the network, only
 * a process allowed to signal the enclave (which could kill it anyway) can use it, and what it does
 * is what evicting sessions (too many held, their lifetime over) already does. In production no
 * handler is installed (SIGIL_ENV=production is in the attested compose). Answers whether it was.
 */
export function dropSessionsOnSignal(
  env: "development" | "test" | "production",
  recipient: { dropSessions(): number },
  log: Logger,
  on: (signal: "SIGUSR2", listener: () => void) => void = (signal, listener) => void process.on(signal, listener),
): boolean {
  if (env === "production") return false;
  on("SIGUSR2", () => log.warn("channel sessions dropped (SIGUSR2)", { sessions: recipient.dropSessions() }));
  return true;
}

const REFUSAL_LOG_INTERVAL_MS = 10_000;

/** Logs refused sealed requests: the first of a reason at once, then one line per interval with the count. */
export function refusalLog(log: Logger, clock: () => number = Date.now): { note(reason: string): void } {
  const pending = new Map<string, { count: number; since: number }>();
  return {
    note(reason) {
      const now = clock();
      const p = pending.get(reason);
      if (!p) {
        log.warn("sealed request refused", { reason });
        pending.set(reason, { count: 0, since: now });
        return;
      }
      p.count++;
      if (now - p.since >= REFUSAL_LOG_INTERVAL_MS) {
        log.warn("sealed requests refused", { reason, count: p.count, seconds: Math.round((now - p.since) / 1000) });
        pending.set(reason, { count: 0, since: now });
      }
    },
  };
}
