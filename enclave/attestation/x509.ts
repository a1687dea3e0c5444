// @peculiar/x509, importable: it resolves its algorithms through tsyringe, which refuses to load
// without the Reflect metadata API, so the polyfill it asks for is loaded first.
import "reflect-metadata";

export const x509 = await import("@peculiar/x509");
