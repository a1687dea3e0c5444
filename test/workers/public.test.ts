// The edge in workerd against the real chain and enclave: the endpoints that reach them.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";

describe("the edge with a live enclave", () => {
  it("/health aggregates the enclave's state: 200, the listener's lag, the chain", async () => {
    const res = await SELF.fetch("http://edge/core/v1/health");
    expect(res.status).toBe(200);
    const body = (await res.json()) as { status: string; enclaves: Array<{ status: string }>; account_event_listener_lag_seconds: number | null };
    expect(body.status).toBe("ok");
    expect(body.enclaves).toHaveLength(1);
    expect(body.enclaves[0]?.status).toBe("ok");
  });

  it("get_sigil_action_client_config reports the enclave's limits", async () => {
    const res = await SELF.fetch("http://edge/core/v1/get_sigil_action_client_config");
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ timeout_ms: 60_000, memory_limit_mb: 64, max_code_bytes: 4 << 20, max_fetch_count: 50, max_wallet_operations: 200 });
  });
});
