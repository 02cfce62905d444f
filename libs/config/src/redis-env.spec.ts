import { z } from 'zod';
import { parseConfig } from './parse-config';
import {
  DEFAULT_REDIS_URL,
  checkRedisEnv,
  describeRedisTarget,
  redisEnv,
  redisTarget,
} from './redis-env';

describe('redisEnv', () => {
  const schema = z.object(redisEnv('everything')).superRefine(checkRedisEnv);
  const target = (env: Record<string, string>) => redisTarget(parseConfig(schema, env));

  it('defaults to a local Redis and the prefix sk', () => {
    const config = parseConfig(schema, {});
    expect(config.REDIS_PREFIX).toBe('sk');
    expect(redisTarget(config)).toEqual({ kind: 'server', url: DEFAULT_REDIS_URL });
  });

  it('refuses a prefix that would break the key layout, naming the variable', () => {
    expect(() => parseConfig(schema, { REDIS_PREFIX: 'a:{b}' })).toThrow(
      /REDIS_PREFIX: must be lowercase letters, digits and "-"/,
    );
  });

  it('finds the master through Sentinel, with the credentials and TLS for it', () => {
    expect(
      target({
        REDIS_SENTINELS: 'sentinel-0:26379, 10.0.0.7:26380,[::1]:26381',
        REDIS_SENTINEL_NAME: 'slicekeeper',
        REDIS_SENTINEL_PASSWORD: 's3',
        REDIS_USERNAME: 'sk',
        REDIS_PASSWORD: 'pw',
        REDIS_TLS: 'true',
      }),
    ).toEqual({
      kind: 'sentinel',
      sentinels: [
        { host: 'sentinel-0', port: 26379 },
        { host: '10.0.0.7', port: 26380 },
        { host: '::1', port: 26381 },
      ],
      name: 'slicekeeper',
      sentinelPassword: 's3',
      username: 'sk',
      password: 'pw',
      tls: true,
    });
  });

  it('connects to a Redis Cluster through its seed nodes', () => {
    expect(target({ REDIS_CLUSTER_NODES: 'redis-0:6379,redis-1:6379' })).toEqual({
      kind: 'cluster',
      nodes: [
        { host: 'redis-0', port: 6379 },
        { host: 'redis-1', port: 6379 },
      ],
      tls: false,
    });
  });

  it('refuses two ways to Redis at once, naming both variables', () => {
    expect(() =>
      parseConfig(schema, {
        REDIS_URL: 'redis://redis:6379',
        REDIS_CLUSTER_NODES: 'redis-0:6379',
      }),
    ).toThrow(
      /REDIS_URL: set only one of REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES \(set: REDIS_URL, REDIS_CLUSTER_NODES\).*\n\s+REDIS_CLUSTER_NODES: set only one of/,
    );
  });

  it('never shows a password in an error', () => {
    const messageOf = (env: Record<string, string>): string => {
      try {
        parseConfig(schema, env);
      } catch (error) {
        return String(error);
      }
      throw new Error('no error');
    };
    const url = messageOf({
      REDIS_URL: 'redis://:hunter2@redis:6379',
      REDIS_CLUSTER_NODES: 'redis-0:6379',
    });
    expect(url).toMatch(/REDIS_URL: .*\(got "redis:\/\/:\*\*\*@redis:6379"\)/);
    const passwords = messageOf({ REDIS_PASSWORD: 'hunter2', REDIS_SENTINEL_PASSWORD: 'hunter2' });
    expect(passwords).toMatch(/REDIS_PASSWORD: .*\(got a value, not shown\)/);
    expect(passwords).toMatch(/REDIS_SENTINEL_PASSWORD: .*\(got a value, not shown\)/);
    expect(url + passwords).not.toContain('hunter2');
  });

  it.each([
    [{ REDIS_SENTINELS: 'sentinel-0:26379' }, /REDIS_SENTINEL_NAME: required with REDIS_SENTINELS/],
    [
      { REDIS_SENTINEL_NAME: 'slicekeeper' },
      /REDIS_SENTINEL_NAME: only used with REDIS_SENTINELS, which is not set/,
    ],
    [
      { REDIS_URL: 'redis://redis:6379', REDIS_PASSWORD: 'pw' },
      /REDIS_PASSWORD: with REDIS_URL, credentials go in the URL/,
    ],
    [{ REDIS_TLS: 'true' }, /REDIS_TLS: with the default REDIS_URL, use a rediss:\/\/ URL/],
    [{ REDIS_SENTINELS: 'sentinel-0' }, /REDIS_SENTINELS: "sentinel-0": must be host:port/],
    [{ REDIS_CLUSTER_NODES: 'redis-0:70000' }, /REDIS_CLUSTER_NODES: "redis-0:70000": must be/],
    [{ REDIS_CLUSTER_NODES: ' , ' }, /REDIS_CLUSTER_NODES: must list at least one host:port/],
  ])('refuses %j with a rule', (env, rule) => {
    expect(() => parseConfig(schema, env)).toThrow(rule);
  });

  it('names a target without its password', () => {
    expect(describeRedisTarget({ kind: 'server', url: 'redis://:pw@redis:6379/2' })).toBe(
      'redis://:***@redis:6379/2',
    );
    expect(
      describeRedisTarget(target({ REDIS_CLUSTER_NODES: '[::1]:7000', REDIS_PASSWORD: 'pw' })),
    ).toBe('cluster via [::1]:7000');
  });

  it('refuses, in redisTarget too, a combination a schema let through', () => {
    expect(() =>
      redisTarget({
        REDIS_URL: 'redis://a:1',
        REDIS_SENTINELS: [{ host: 'b', port: 2 }],
        REDIS_TLS: false,
      }),
    ).toThrow(/REDIS_URL: set only one of/);
  });
});
