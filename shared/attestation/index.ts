// The attestation core (docs/design/attestation.md): parsing and verification shared by the `sigil verify`
// CLI, the enclave's self-checks and the edge, which verifies the enclave's channel quote in workerd.
export * from "./bytes.ts";
export * from "./check.ts";
export * from "./dcap.ts";
export * from "./errors.ts";
export * from "./eventLog.ts";
export * from "./evidence.ts";
export * from "./info.ts";
export * from "./quote.ts";
export * from "./reportData.ts";
export * from "./verify.ts";
export * from "./governance.ts";
export * from "./deployment.ts";
