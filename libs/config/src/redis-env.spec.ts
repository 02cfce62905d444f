import { z } from 'zod';
import { parseConfig } from './parse-config';
import { redisEnv } from './redis-env';

describe('redisEnv', () => {
  const schema = z.object(redisEnv('everything'));

  it('defaults to a local Redis and the prefix sk', () => {
    expect(parseConfig(schema, {})).toEqual({
      REDIS_URL: 'redis://127.0.0.1:6379',
      REDIS_PREFIX: 'sk',
    });
  });

  it('refuses a prefix that would break the key layout, naming the variable', () => {
    expect(() => parseConfig(schema, { REDIS_PREFIX: 'a:{b}' })).toThrow(
      /REDIS_PREFIX: must be lowercase letters, digits and "-"/,
    );
  });
});
