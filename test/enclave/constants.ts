// Fixed values of the enclave test stack. Test-only: never used outside tests.
/** The dev root key every enclave test runs with (the derivation vectors in derive.test.ts use it too). */
export const TEST_ROOT_KEY = "0x5369676c207465737420726f6f74206b6579202d206e6f742061207365637265" as const;
/** The edge identity (Ed25519 seed) the test enclaves allow: the tests' stand-in edge and the edge under test sign with it. */
export const TEST_EDGE_IDENTITY_SEED = "5369676c207465737420656467652069642d6e6f7420612073656372657421ff" as const;
