import { z } from 'zod';
import {
  ConfigError,
  envBoolean,
  envDurationMs,
  envInt,
  envLogLevel,
  envPort,
  envUrl,
  parseConfig,
} from './index';

const schema = z.object({
  PORT: envPort(8080, 'HTTP port.'),
  REDIS_URL: envUrl(['redis:', 'rediss:'], 'Redis to use.'),
  WIPE_DELAY: envDurationMs('30s', 'Wipe delay.'),
  CONCURRENCY: envInt(4, 'Jobs at once.', { min: 1, max: 64 }),
  DEBUG_ENDPOINTS: envBoolean(false, 'Serve debug endpoints.'),
  LOG_LEVEL: envLogLevel(),
});

describe('parseConfig', () => {
  it('applies defaults and parses values', () => {
    expect(
      parseConfig(schema, { REDIS_URL: 'redis://127.0.0.1:6379', WIPE_DELAY: '1.5m' }),
    ).toEqual({
      PORT: 8080,
      REDIS_URL: 'redis://127.0.0.1:6379',
      WIPE_DELAY: 90_000,
      CONCURRENCY: 4,
      DEBUG_ENDPOINTS: false,
      LOG_LEVEL: 'info',
    });
  });

  it('treats an empty variable as unset', () => {
    expect(parseConfig(schema, { REDIS_URL: 'redis://h:1', PORT: '' }).PORT).toBe(8080);
  });

  it('names every bad variable at once, with its rule and value', () => {
    let thrown: unknown;
    try {
      parseConfig(schema, {
        PORT: '70000',
        WIPE_DELAY: 'soon',
        CONCURRENCY: '0',
        DEBUG_ENDPOINTS: 'maybe',
        LOG_LEVEL: 'loud',
      });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    const { problems } = thrown as ConfigError;
    expect(problems).toEqual([
      'PORT: must be 0..65535 (got "70000")',
      'WIPE_DELAY: must be a duration such as 500ms, 30s, 10m or 1h (got "soon")',
      'CONCURRENCY: must be at least 1 (got "0")',
      'DEBUG_ENDPOINTS: must be true or false (got "maybe")',
      'LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent (got "loud")',
    ]);
    expect((thrown as ConfigError).message).toContain('invalid configuration:\n  PORT:');
  });

  it('names a required variable that is missing', () => {
    expect(() => parseConfig(z.object({ TOKEN_FILE: z.string() }), {})).toThrow(
      'TOKEN_FILE: required',
    );
  });

  it('rejects a URL of the wrong protocol', () => {
    expect(() => parseConfig(schema, { REDIS_URL: 'http://h' })).toThrow(
      'REDIS_URL: must be a URL starting with redis:// or rediss:// (got "http://h")',
    );
  });

  it('ignores variables the schema does not name', () => {
    expect(parseConfig(schema, { REDIS_URL: 'redis://h', HOME: '/root' })).not.toHaveProperty(
      'HOME',
    );
  });
});
