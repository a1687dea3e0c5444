// The production source: dstack's guest agent through @phala/dstack-sdk, on /var/run/dstack.sock
// (or DSTACK_SIMULATOR_ENDPOINT, an HTTP stand-in, in tests). The agent is a boundary: its Info is
// checked here, `tcb_info` made an object (the agent sends a JSON string; this SDK parses it, older
// ones did not) and `app_compose` kept as the raw string its compose hash was taken of.
import { DstackClient } from "@phala/dstack-sdk";
import { z } from "zod";
import { assertReportData, type AttestationSource, type Info, type QuoteAnswer } from "./source.ts";

const eventLogEntry = z.object({
  imr: z.number().int(),
  event_type: z.number().int(),
  digest: z.string(),
  event: z.string(),
  event_payload: z.string(),
});

const tcbInfoSchema = z.looseObject({
  mrtd: z.string(),
  rtmr0: z.string(),
  rtmr1: z.string(),
  rtmr2: z.string(),
  rtmr3: z.string(),
  app_compose: z.string(),
  event_log: z.union([
    z.array(eventLogEntry),
    z.string().transform((s, ctx) => parseJson(s, ctx, z.array(eventLogEntry))),
  ]),
});

const infoSchema = z.looseObject({
  app_id: z.string(),
  instance_id: z.string(),
  compose_hash: z.string(),
  tcb_info: z.union([tcbInfoSchema, z.string().transform((s, ctx) => parseJson(s, ctx, tcbInfoSchema))]),
});

const quoteSchema = z.object({
  quote: z.string().regex(/^[0-9a-fA-F]+$/),
  event_log: z.string(),
  vm_config: z.string().optional(),
});

export class DstackSource implements AttestationSource {
  readonly kind = "dstack" as const;
  private readonly client: DstackClient;

  /** `endpoint`: an HTTP guest agent (a simulator); absent, the SDK finds the agent's socket. */
  constructor(endpoint?: string) {
    this.client = new DstackClient(endpoint);
  }

  async getQuote(reportData: Uint8Array): Promise<QuoteAnswer> {
    assertReportData(reportData);
    const answer = quoteSchema.safeParse(await this.client.getQuote(reportData));
    if (!answer.success)
      throw new Error(`the dstack guest agent's quote answer is malformed: ${z.prettifyError(answer.error)}`);
    const { quote, event_log, vm_config } = answer.data;
    return vm_config === undefined ? { quote, event_log } : { quote, event_log, vm_config };
  }

  async info(): Promise<Info> {
    const info = infoSchema.safeParse({ ...(await this.client.info()) });
    if (!info.success) throw new Error(`the dstack guest agent's info is malformed: ${z.prettifyError(info.error)}`);
    return info.data as Info;
  }

  async getKey(path: string): Promise<Uint8Array> {
    const { key } = await this.client.getKey(path, "");
    return Uint8Array.from(key);
  }
}

function parseJson<T extends z.ZodType>(text: string, ctx: z.RefinementCtx, schema: T): z.output<T> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    ctx.addIssue({ code: "custom", message: "is a string but not JSON" });
    return z.NEVER;
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    for (const issue of parsed.error.issues)
      ctx.addIssue({ code: "custom", message: issue.message, path: issue.path as PropertyKey[] });
    return z.NEVER;
  }
  return parsed.data;
}
