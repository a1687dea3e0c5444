// Fixed values of the enclave test stack. Test-only: never used outside tests.
/** The dev root key every enclave test runs with (the derivation vectors in derive.test.ts use it too). */
export const TEST_ROOT_KEY = "0x5369676c207465737420726f6f74206b6579202d206e6f742061207365637265" as const;
export const TEST_ENCLAVE_SECRET = "sigil-test-enclave-shared-secret-0123456789";
