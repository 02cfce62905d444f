import { z } from 'zod';
import {
  CLUSTER_NODE_SEGMENT,
  driverNameProblem,
  nodeNameProblem,
  parseKeyId,
  registrationSchema,
  streamStateSchema,
  syncStatusSchema,
} from '@slicekeeper/contracts';
import { DURATION_RULE, parseDurationMs } from '@slicekeeper/config';
import { parseEndpoint } from '@slicekeeper/proto';
import { snapshotSummarySchema } from '@slicekeeper/state';

/**
 * Longest path parameter the router takes, characters. Node names may be 253 characters; the
 * router's default (100) would turn long ones into 404s. Longer ones are answered 400.
 */
export const MAX_PARAM_LENGTH = 300;

/** Printable ASCII without spaces: no control characters, no look-alike Unicode. */
const PRINTABLE = /^[\x21-\x7e]+$/;

/** Checks a string with a `…Problem` function of the contracts (undefined = valid). */
function checked(problem: (value: string) => string | undefined) {
  return (value: string, ctx: z.RefinementCtx) => {
    const found = problem(value);
    if (found !== undefined) ctx.addIssue({ code: 'custom', message: found });
  };
}

export const nodeNameSchema = z
  .string()
  .min(1, 'Required value')
  .superRefine(checked(nodeNameProblem))
  .describe('Node name (a lowercase RFC 1123 subdomain).');

/** A node name, or `''` for a cluster-scoped plugin (devices reachable from many nodes). */
export const keyNodeSchema = z
  .union([z.literal(''), nodeNameSchema])
  .describe(
    'Node name (a lowercase RFC 1123 subdomain), or empty for a cluster-scoped plugin (admin tokens only).',
  );

/** `:node` of a plugin's path: a node name, or {@link CLUSTER_NODE_SEGMENT} for the cluster-scoped key. */
export const nodeSegmentSchema = z
  .union([z.literal(CLUSTER_NODE_SEGMENT).transform(() => ''), nodeNameSchema])
  .describe(`Node name, or \`${CLUSTER_NODE_SEGMENT}\` for a cluster-scoped plugin.`);

export const driverNameSchema = z
  .string()
  .superRefine(checked(driverNameProblem))
  .describe('DRA driver name (a lowercase RFC 1123 subdomain of at most 63 characters).');

export const endpointSchema = z
  .string()
  .min(1, 'Required value')
  .max(512, 'must be at most 512 characters')
  .regex(PRINTABLE, 'must be printable ASCII without spaces')
  .superRefine(
    checked((value) => {
      const parsed = parseEndpoint(value);
      return typeof parsed === 'string' ? parsed : undefined;
    }),
  )
  .describe('`unix:///absolute/path.sock` or `host:port` (`[v6]:port`).');

export const registerPluginBodySchema = z
  .object({
    node: keyNodeSchema,
    endpoint: endpointSchema,
    driver: driverNameSchema
      .optional()
      .describe(
        'The driver name; required when the plugin does not serve the registration service, else must match what it reports.',
      ),
    supportedVersions: z
      .array(
        z
          .string()
          .min(1)
          .max(64, 'must be at most 64 characters')
          .regex(PRINTABLE, 'must be printable ASCII without spaces'),
      )
      .min(1, 'must list at least one version')
      .max(16, 'must list at most 16 versions')
      .optional()
      .describe(
        'Used only when the plugin does not serve the registration service, or with `probedOnNode`.',
      ),
    probedOnNode: z
      .boolean()
      .optional()
      .describe(
        "True when the caller, an agent on the plugin's node (the node-mode watcher's discovery), has already dialled the plugin's socket, asked it GetInfo, checked the socket's real path against the endpoint policy and tells the plugin the outcome itself: the API cannot reach a socket on another node. The API then dials nothing and tells the plugin nothing; it checks the endpoint as written (a unix socket inside PLUGIN_SOCKET_DIRS), negotiates the version from `supportedVersions`, and authorizes as usual. Requires `driver` and `supportedVersions`, and a token bound to `node` (a node-bound static token, or a ServiceAccount token whose node claim is `node`): 403 for any other caller, an admin too.",
      ),
  })
  .strict()
  .superRefine((body, ctx) => {
    if (body.probedOnNode !== true) return;
    for (const field of ['driver', 'supportedVersions'] as const) {
      if (body[field] === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: [field],
          message: 'Required value when probedOnNode is true',
        });
      }
    }
  });
export type RegisterPluginBody = z.infer<typeof registerPluginBodySchema>;

export const pluginParamsSchema = z
  .object({ node: nodeSegmentSchema, driver: driverNameSchema })
  .strict();

export const removePluginQuerySchema = z
  .object({
    endpoint: endpointSchema
      .optional()
      .describe('Remove only this endpoint; by default every endpoint of the driver on the node.'),
    grace: z
      .string()
      .max(16)
      .refine((value) => parseDurationMs(value) !== undefined, DURATION_RULE)
      .refine(
        (value) => (parseDurationMs(value) ?? 0) <= MAX_REMOVAL_GRACE_MS,
        'must be at most 1h',
      )
      .optional()
      .describe(
        "How long the plugin's slices stay unless it registers again (`0s`: withdraw now). Default: the API's REMOVAL_GRACE.",
      ),
  })
  .strict();

/** The longest removal grace a request may ask for, ms. */
export const MAX_REMOVAL_GRACE_MS = 3_600_000;

export const listPluginsQuerySchema = z
  .object({
    node: nodeNameSchema.optional(),
    driver: driverNameSchema.optional(),
    after: z
      .string()
      .max(512)
      .superRefine(
        checked((value) => {
          try {
            parseKeyId(value);
            return undefined;
          } catch {
            return 'must be the `next` of a previous page';
          }
        }),
      )
      .optional()
      .describe('The `next` of the previous page.'),
    limit: z.coerce
      .number()
      .int('must be a whole number')
      .min(1, 'must be at least 1')
      .max(500, 'must be at most 500')
      .default(100)
      .describe('Plugins (node, driver) per page.'),
  })
  .strict();

export const pluginStatusSchema = z
  .object({
    node: z.string(),
    driver: z.string(),
    registrations: z.array(registrationSchema).describe('Registered endpoints, most recent first.'),
    stream: streamStateSchema.optional().describe("The watcher's stream state, once it has one."),
    snapshot: snapshotSummarySchema.optional().describe('The latest inventory, once there is one.'),
    sync: syncStatusSchema.optional().describe("The syncer's last outcome, once it has one."),
  })
  .strict();
export type PluginStatus = z.infer<typeof pluginStatusSchema>;

export const pluginListSchema = z
  .object({
    items: z.array(pluginStatusSchema),
    next: z.string().optional().describe('Pass as `after` for the next page; absent on the last.'),
  })
  .strict();

export const removedSchema = z
  .object({ removed: z.array(registrationSchema).describe('The registrations removed.') })
  .strict();
