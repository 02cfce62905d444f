import { z } from 'zod';
import { envBoolean, envUrl } from './env';

/** The Redis URL schemes slicekeeper connects with. */
const REDIS_SCHEMES = ['redis:', 'rediss:'];

/** The Redis a service uses when none of `REDIS_URL`, `REDIS_SENTINELS`, `REDIS_CLUSTER_NODES` is set. */
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/** A Redis server or Sentinel address. */
export interface HostPort {
  host: string;
  port: number;
}

/**
 * Where a service's Redis is, as its settings say: one server, a master found through Sentinel,
 * or a Redis Cluster. Every connection of the service (its own commands and BullMQ's) is made
 * from it.
 */
export type RedisTarget =
  | { kind: 'server'; url: string }
  | {
      kind: 'sentinel';
      sentinels: HostPort[];
      /** The master's name, as the Sentinels monitor it. */
      name: string;
      sentinelPassword?: string;
      username?: string;
      password?: string;
      /** TLS to the data nodes and the Sentinels. */
      tls: boolean;
    }
  | { kind: 'cluster'; nodes: HostPort[]; username?: string; password?: string; tls: boolean };

/**
 * `REDIS_PREFIX`: one rule for every service, since they must agree on it to share records.
 * Letters, digits and `-` only: the prefix is part of every key, and `:`, `{` or `}` in it would
 * break the key layout's hash tags.
 */
export function envRedisPrefix(
  description = 'Prefix of every Redis key; the same for all slicekeeper services.',
) {
  return z
    .string()
    .regex(/^[a-z0-9-]+$/, 'must be lowercase letters, digits and "-"')
    .default('sk')
    .describe(description);
}

const HOST_PORT = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/;

/** A comma-separated `host:port` list (IPv6 in brackets), at least one address. */
function envHostPorts(description: string) {
  return z
    .string()
    .transform((value, ctx) => {
      const addresses: HostPort[] = [];
      for (const item of value.split(',').map((part) => part.trim())) {
        if (item === '') continue;
        const match = HOST_PORT.exec(item);
        const port = Number(match?.[2]);
        if (match === null || port < 1 || port > 65535) {
          ctx.addIssue({ code: 'custom', message: `"${item}": must be host:port, port 1..65535` });
          continue;
        }
        addresses.push({ host: (match[1] ?? '').replace(/^\[|\]$/g, ''), port });
      }
      if (addresses.length === 0) {
        ctx.addIssue({ code: 'custom', message: 'must list at least one host:port' });
      }
      return addresses;
    })
    .optional()
    .describe(description);
}

/**
 * A service's Redis variables: one of `REDIS_URL`, `REDIS_SENTINELS` (with
 * `REDIS_SENTINEL_NAME`) or `REDIS_CLUSTER_NODES`, their credentials and TLS, and
 * `REDIS_PREFIX`. `holds` says what the service keeps there, for the docs. The schema that
 * spreads these must also run {@link checkRedisEnv} (`.superRefine`): which combinations are
 * allowed is a rule across variables.
 */
export function redisEnv(holds: string) {
  return {
    REDIS_URL: envUrl(
      REDIS_SCHEMES,
      `One Redis holding ${holds}: redis://[[user]:password@]host:port[/db], or rediss:// for TLS. Used when neither REDIS_SENTINELS nor REDIS_CLUSTER_NODES is set; default ${DEFAULT_REDIS_URL}.`,
    ),
    REDIS_SENTINELS: envHostPorts(
      'Redis with Sentinel instead of REDIS_URL: the Sentinels, comma-separated host:port.',
    ),
    REDIS_SENTINEL_NAME: z
      .string()
      .optional()
      .describe('The master name the Sentinels monitor (required with REDIS_SENTINELS).'),
    REDIS_SENTINEL_PASSWORD: z
      .string()
      .optional()
      .describe('Password of the Sentinels themselves, if they require one.'),
    REDIS_CLUSTER_NODES: envHostPorts(
      'A Redis Cluster instead of REDIS_URL: some of its nodes (the rest are discovered), comma-separated host:port.',
    ),
    REDIS_USERNAME: z
      .string()
      .optional()
      .describe('ACL user of the Redis servers behind REDIS_SENTINELS or REDIS_CLUSTER_NODES.'),
    REDIS_PASSWORD: z
      .string()
      .optional()
      .describe(
        'Password of the Redis servers behind REDIS_SENTINELS or REDIS_CLUSTER_NODES (with REDIS_URL it goes in the URL).',
      ),
    REDIS_TLS: envBoolean(
      false,
      'TLS to the servers (and Sentinels) behind REDIS_SENTINELS or REDIS_CLUSTER_NODES (with REDIS_URL: rediss://).',
    ),
    REDIS_PREFIX: envRedisPrefix(),
  };
}

/** What {@link redisEnv}'s variables parse to. */
export interface RedisEnv {
  readonly REDIS_URL?: string | undefined;
  readonly REDIS_SENTINELS?: HostPort[] | undefined;
  readonly REDIS_SENTINEL_NAME?: string | undefined;
  readonly REDIS_SENTINEL_PASSWORD?: string | undefined;
  readonly REDIS_CLUSTER_NODES?: HostPort[] | undefined;
  readonly REDIS_USERNAME?: string | undefined;
  readonly REDIS_PASSWORD?: string | undefined;
  readonly REDIS_TLS: boolean;
}

/** A problem with a combination of Redis variables, named by the variable it is reported on. */
interface RedisEnvProblem {
  variable: keyof RedisEnv;
  message: string;
}

function redisEnvProblems(env: RedisEnv): RedisEnvProblem[] {
  const chosen = (['REDIS_URL', 'REDIS_SENTINELS', 'REDIS_CLUSTER_NODES'] as const).filter(
    (name) => env[name] !== undefined,
  );
  const problems: RedisEnvProblem[] = [];
  if (chosen.length > 1) {
    for (const variable of chosen) {
      problems.push({
        variable,
        message: `set only one of REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES (set: ${chosen.join(', ')})`,
      });
    }
    return problems;
  }
  const sentinel = env.REDIS_SENTINELS !== undefined;
  if (sentinel && env.REDIS_SENTINEL_NAME === undefined) {
    problems.push({ variable: 'REDIS_SENTINEL_NAME', message: 'required with REDIS_SENTINELS' });
  }
  if (!sentinel) {
    for (const variable of ['REDIS_SENTINEL_NAME', 'REDIS_SENTINEL_PASSWORD'] as const) {
      if (env[variable] !== undefined) {
        problems.push({ variable, message: 'only used with REDIS_SENTINELS, which is not set' });
      }
    }
  }
  if (chosen[0] === undefined || chosen[0] === 'REDIS_URL') {
    const where = chosen[0] === undefined ? 'the default REDIS_URL' : 'REDIS_URL';
    for (const variable of ['REDIS_USERNAME', 'REDIS_PASSWORD'] as const) {
      if (env[variable] !== undefined) {
        problems.push({ variable, message: `with ${where}, credentials go in the URL` });
      }
    }
    if (env.REDIS_TLS) {
      problems.push({ variable: 'REDIS_TLS', message: `with ${where}, use a rediss:// URL` });
    }
  }
  return problems;
}

/**
 * The cross-variable rules of {@link redisEnv}, for the service schema's `.superRefine`: at
 * most one of `REDIS_URL`, `REDIS_SENTINELS`, `REDIS_CLUSTER_NODES`; `REDIS_SENTINEL_NAME`
 * with `REDIS_SENTINELS` only; credentials and TLS apart from the URL only where there is no
 * URL to carry them. Each problem is reported on the variable concerned.
 */
export function checkRedisEnv(env: RedisEnv, ctx: z.RefinementCtx): void {
  for (const problem of redisEnvProblems(env)) {
    ctx.addIssue({ code: 'custom', path: [problem.variable], message: problem.message });
  }
}

/**
 * Where the parsed settings point. Throws on a combination {@link checkRedisEnv} refuses (a
 * schema that forgot it), naming the variables.
 */
export function redisTarget(env: RedisEnv): RedisTarget {
  const problems = redisEnvProblems(env);
  if (problems.length > 0) {
    throw new Error(problems.map((p) => `${p.variable}: ${p.message}`).join('; '));
  }
  const credentials = {
    ...(env.REDIS_USERNAME === undefined ? {} : { username: env.REDIS_USERNAME }),
    ...(env.REDIS_PASSWORD === undefined ? {} : { password: env.REDIS_PASSWORD }),
  };
  if (env.REDIS_SENTINELS !== undefined) {
    return {
      kind: 'sentinel',
      sentinels: env.REDIS_SENTINELS,
      name: env.REDIS_SENTINEL_NAME ?? '',
      ...(env.REDIS_SENTINEL_PASSWORD === undefined
        ? {}
        : { sentinelPassword: env.REDIS_SENTINEL_PASSWORD }),
      ...credentials,
      tls: env.REDIS_TLS,
    };
  }
  if (env.REDIS_CLUSTER_NODES !== undefined) {
    return { kind: 'cluster', nodes: env.REDIS_CLUSTER_NODES, ...credentials, tls: env.REDIS_TLS };
  }
  return { kind: 'server', url: env.REDIS_URL ?? DEFAULT_REDIS_URL };
}

/** How a target is named in logs and summaries; never with its password. */
export function describeRedisTarget(target: RedisTarget): string {
  const list = (addresses: HostPort[]): string =>
    addresses.map((a) => (a.host.includes(':') ? `[${a.host}]` : a.host) + `:${a.port}`).join(',');
  switch (target.kind) {
    case 'server': {
      const url = new URL(target.url);
      if (url.password !== '') url.password = '***';
      return url.toString();
    }
    case 'sentinel':
      return `sentinel ${target.name} via ${list(target.sentinels)}`;
    case 'cluster':
      return `cluster via ${list(target.nodes)}`;
  }
}
