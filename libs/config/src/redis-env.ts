import { z } from 'zod';
import { envUrl } from './env';

/** The Redis URL schemes slicekeeper connects with. */
const REDIS_SCHEMES = ['redis:', 'rediss:'];

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

/**
 * A service's Redis variables: `REDIS_URL` (what it holds there, for the docs) and
 * `REDIS_PREFIX`.
 */
export function redisEnv(holds: string) {
  return {
    REDIS_URL: envUrl(REDIS_SCHEMES, `Redis holding ${holds}.`, 'redis://127.0.0.1:6379'),
    REDIS_PREFIX: envRedisPrefix(),
  };
}
