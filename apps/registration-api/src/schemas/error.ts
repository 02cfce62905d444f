import { z } from 'zod';

/** The one error body of every 4xx and 5xx answer. */
export const errorSchema = z
  .object({
    code: z
      .string()
      .describe(
        'Machine-readable reason: invalid-request, invalid-json, unauthorized, forbidden, not-found, method-not-allowed, conflict, body-too-large, unsupported-media-type, rate-limited, endpoint-forbidden, plugin-unreachable, plugin-error, redis-unavailable, authentication-unavailable (TokenReview could not be asked), authorization-unavailable (SubjectAccessReview could not be asked), shutting-down, corrupt-record, internal, …',
      ),
    message: z
      .string()
      .describe(
        "What went wrong, for people. Text from elsewhere (a plugin's answer, the request) is escaped and cut at 512 characters.",
      ),
    details: z
      .array(
        z
          .object({
            field: z.string().describe('Where: `body.node`, `params.driver`, `query.limit`, …'),
            message: z.string(),
          })
          .strict(),
      )
      .describe('Every invalid field (400); empty otherwise.'),
  })
  .strict();
export type ErrorBody = z.infer<typeof errorSchema>;

/** Statuses any authenticated route can answer with. */
const COMMON = [400, 401, 403, 413, 415, 429, 500, 503] as const;

/** Response schemas for the common error statuses plus `extra` ones. */
export function errorResponses(...extra: number[]): Record<number, typeof errorSchema> {
  const statuses = [...new Set([...COMMON, ...extra])];
  return Object.fromEntries(statuses.map((status) => [status, errorSchema]));
}
