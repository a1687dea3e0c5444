// The zod schema of the one error body (errors.ts, ErrorBody): the OpenAPI document describes every
// error answer with it. Apart from errors.ts so that code without zod (the sandbox's worker
// threads) can load the error classes.
import { z } from "zod";
import { errorStatus, type ErrorBody, type ErrorCode } from "./errors.ts";

export const errorBodySchema = z.object({
  error: z.object({
    code: z.enum(Object.keys(errorStatus) as [ErrorCode, ...ErrorCode[]]),
    message: z.string(),
    request_id: z.string(),
    details: z.unknown().optional(),
  }),
}) satisfies z.ZodType<ErrorBody>;
