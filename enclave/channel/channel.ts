// The enclave's end of the attested channel (attestation.md): a channel key made at boot and
// never stored, its quote (report_data = SHA-512("sigil-channel-v1:" ‖ key)) served at
// `GET /channel`, and `POST /channel/v1`, which opens a request sealed in a session an allowed edge
// opened to that key and hands it to the internal API (internalApi.ts, reachable no other way).
// The internal API's answer goes back sealed for that request alone.
import type { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { ChannelError, ChannelRecipient, channelReportData, generateChannelKeyPair, toBase64Url, type ChannelKeyPair } from "../../shared/channel/channel.ts";
import type { ChannelDocument } from "../../shared/channel/client.ts";
import { SigilError } from "../../shared/errors.ts";
import type { InternalAnswer, InternalRequest } from "../internalApi.ts";
import type { Logger } from "../log.ts";

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

/** `GET /channel` and `POST /channel/v1` on the enclave's app; `handle` answers what the channel opened. */
export function channelRoutes<E extends object>(app: Hono<E>, channel: Channel, handle: (request: InternalRequest) => Promise<InternalAnswer>, log: Logger): void {
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
        // 409 for what the edge mends by itself (a new key, a new session), 401 for the rest.
        return c.json({ channel_error: err.reason }, err.reason === "unknown_channel_key" || err.reason === "unknown_session" ? 409 : 401);
      }
      const { method, path, headers, body } = opened.request;
      const answer = await handle({ method, path, headers, body });
      const sealed = await opened.sealResponse(JSON.stringify(answer));
      return c.json(sealed);
    },
  );
}
