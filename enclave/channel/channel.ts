// The enclave's end of the attested channel (attestation.md): a channel key made at boot and
// never stored, its quote (report_data = SHA-512("sigil-channel-v1:" ‖ key)) served at
// `GET /channel`, and `POST /channel/v1`, which opens a request sealed to that key by an allowed
// edge and hands it to the internal API as if it had arrived directly — with a mark no direct
// HTTP request can carry, so the internal API serves nothing that did not come through here. The
// internal API's answer goes back sealed for that request's sender only.
import type { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { ChannelError, ChannelRecipient, channelReportData, generateChannelKeyPair, toBase64Url, type ChannelKeyPair } from "../../shared/channel/channel.ts";
import type { ChannelDocument } from "../../shared/channel/client.ts";
import { SigilError } from "../../shared/errors.ts";
import type { Logger } from "../log.ts";

/** The mark of a request that came through the channel (a property no HTTP request can set). */
export const VIA_CHANNEL = Symbol("sigil.viaChannel");

/** Whether the request of this Hono environment came through the channel. */
export function cameThroughChannel(env: unknown): boolean {
  return typeof env === "object" && env !== null && (env as Record<symbol, unknown>)[VIA_CHANNEL] === true;
}

/** A quote over 64 bytes of report data, from the enclave's attestation source. */
export type QuoteSource = (reportData: Uint8Array) => Promise<{ quote: string; event_log: string; simulated?: boolean }>;

/** Sealed requests carry at most the internal API's 6 MiB body, base64url-encoded, plus the envelope. */
const MAX_SEALED_BYTES = 9 << 20;

export type Channel = { recipient: ChannelRecipient; document(): Promise<ChannelDocument> };

/** Makes this boot's channel key and the document that proves it (its quote is taken once). */
export async function createChannel(args: { allowedEdgeKeys: Uint8Array[]; quote: QuoteSource; instanceId?: string; key?: ChannelKeyPair }): Promise<Channel> {
  const key = args.key ?? (await generateChannelKeyPair());
  const recipient = new ChannelRecipient({ key, allowedEdgeKeys: args.allowedEdgeKeys });
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

/** `GET /channel` and `POST /channel/v1` on the enclave's app. */
export function channelRoutes<E extends object>(app: Hono<E>, channel: Channel, log: Logger): void {
  app.get("/channel", async (c) => {
    const doc = await channel.document();
    if (doc.simulated) c.header("X-Attestation-Simulated", "1");
    return c.json(doc);
  });

  app.post(
    "/channel/v1",
    bodyLimit({
      maxSize: MAX_SEALED_BYTES,
      onError: () => {
        throw new SigilError("payload_too_large", `a sealed request must be at most ${MAX_SEALED_BYTES} bytes`);
      },
    }),
    async (c) => {
      let opened;
      try {
        opened = await channel.recipient.open(await c.req.json().catch(() => null));
      } catch (err) {
        if (!(err instanceof ChannelError)) throw err;
        // Refusals are answered outside the seal: there is no trusted sender to seal them for.
        log.warn("sealed request refused", { reason: err.reason });
        return c.json({ channel_error: err.reason }, err.reason === "unknown_channel_key" ? 409 : 401);
      }
      const { request } = opened;
      const inner = await app.fetch(
        new Request(`http://enclave${request.path}`, {
          method: request.method,
          headers: request.headers,
          ...(request.method === "GET" || request.method === "HEAD" ? {} : { body: request.body }),
        }),
        { [VIA_CHANNEL]: true } as never,
      );
      const headers: Record<string, string> = {};
      for (const name of ["content-type", "retry-after", "x-request-id"]) {
        const v = inner.headers.get(name);
        if (v) headers[name] = v;
      }
      const sealed = await opened.sealResponse(JSON.stringify({ status: inner.status, headers, body: await inner.text() }));
      return c.json(sealed);
    },
  );
}
