// The schema functions of the attestation core: zod's tree-shakable form (zod/mini), so that the
// dashboard's Attestation page, which runs this code in the browser, carries only the validators
// used here, with zod's English messages (zod/mini ships without a locale; full zod configures the
// same one). Named exports only, and the locale imported alone: re-exporting zod's namespace, or
// `z.locales`, would put all of zod (every language with it) into the browser's bundle.
import en from "zod/v4/locales/en.js";
import { config } from "zod/mini";

config(en());

export { array, int, looseObject, maximum, minimum, object, record, regex, string, union, unknown } from "zod/mini";
export type { $ZodError as ZodError } from "zod/v4/core";
