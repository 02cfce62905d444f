import { admissionError } from '@slicekeeper/admission';
import { TransientError, withContext } from '@slicekeeper/errors';
import { CorruptRecordError } from '@slicekeeper/state';
import { HttpError } from '../http-error';
import { isRedisUnavailable, toErrorAnswer } from './error-handler';

/** An error as ioredis makes it: its class shows only in `name`. */
const redisError = (name: string, message: string) => Object.assign(new Error(message), { name });

describe('toErrorAnswer', () => {
  it.each([
    ['an HTTP error as it is', new HttpError(409, 'conflict', 'taken'), 409, 'conflict'],
    [
      'a refused endpoint as 403',
      admissionError('endpoint-forbidden', 'no'),
      403,
      'endpoint-forbidden',
    ],
    [
      'a malformed endpoint as 400',
      admissionError('invalid-endpoint', 'no'),
      400,
      'invalid-endpoint',
    ],
    [
      'an unacceptable plugin as 422',
      admissionError('wrong-plugin-type', 'no'),
      422,
      'wrong-plugin-type',
    ],
    ['a silent plugin as 502', admissionError('plugin-timeout', 'slow'), 502, 'plugin-timeout'],
    [
      'a record in Redis that does not parse as 500, naming it',
      new CorruptRecordError('status of node-a/gpu.example.com', 'not JSON'),
      500,
      'corrupt-record',
    ],
    [
      "fastify's 413",
      Object.assign(new Error('too large'), {
        statusCode: 413,
        code: 'FST_ERR_CTP_BODY_TOO_LARGE',
      }),
      413,
      'body-too-large',
    ],
    [
      "fastify's 415",
      Object.assign(new Error('no'), { statusCode: 415, code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE' }),
      415,
      'unsupported-media-type',
    ],
    [
      'an unknown 4xx as bad-request',
      Object.assign(new Error('eh'), { statusCode: 418 }),
      418,
      'bad-request',
    ],
    [
      'an unknown transient failure as 500, without its message',
      new TransientError('ECONNREFUSED 10.0.0.1'),
      500,
      'internal',
    ],
    [
      'Redis down, with the offline queue disabled, as 503',
      new Error("Stream isn't writeable and enableOfflineQueue options is false"),
      503,
      'redis-unavailable',
    ],
    [
      'a Redis command given up after its reconnect attempts as 503',
      redisError(
        'MaxRetriesPerRequestError',
        'Reached the max retries per request limit (which is 1). Refer to "maxRetriesPerRequest" option for details.',
      ),
      503,
      'redis-unavailable',
    ],
    [
      'a Redis failure wrapped with context as 503',
      withContext('list registrations', new Error('Connection is closed.')),
      503,
      'redis-unavailable',
    ],
    [
      "fastify's too-long path parameter as 400",
      Object.assign(new Error("'/v1/plugins/aaaa' is exceeding the max param length"), {
        statusCode: 414,
        code: 'FST_ERR_MAX_PARAM_LENGTH',
      }),
      400,
      'invalid-request',
    ],
    [
      "fastify's badly encoded path as 400",
      Object.assign(new Error("'/v1/%zz' is not a valid url component"), {
        statusCode: 400,
        code: 'FST_ERR_BAD_URL',
      }),
      400,
      'invalid-request',
    ],
    [
      "fastify's own 5xx as 500",
      Object.assign(new Error('serializer broke'), {
        statusCode: 500,
        code: 'FST_ERR_FAILED_ERROR_SERIALIZATION',
      }),
      500,
      'internal',
    ],
    ['anything else as 500', 'boom', 500, 'internal'],
  ])('answers %s', (_name, error, status, code) => {
    const answer = toErrorAnswer(error);
    expect([answer.status, answer.body.code]).toEqual([status, code]);
    expect(answer.body.details).toEqual(status === 400 ? [expect.anything()] : []);
    if (code === 'internal') expect(answer.body.message).toBe('internal error');
    if (code === 'corrupt-record')
      expect(answer.body.message).toBe('corrupt status of node-a/gpu.example.com');
  });

  it("escapes and bounds what a plugin said, in the message and the 400's details", () => {
    const said = `\u001b[31m${'x'.repeat(1000)}`;
    for (const error of [
      admissionError('plugin-error', `GetInfo unix:///p.sock: ${said}`),
      admissionError('invalid-endpoint', `endpoint "${said}": not a URI`),
    ]) {
      const { body } = toErrorAnswer(error);
      for (const text of [body.message, ...body.details.map((d) => d.message)]) {
        expect(text).toMatch(/^[^\u0000-\u001f]*… \(\d+ more characters\)$/);
        expect(text).toContain('\\u001b[31m');
      }
    }
  });
});

describe('isRedisUnavailable', () => {
  it.each([
    ['a closed connection', new Error('Connection is closed.')],
    [
      'a Redis Cluster client not ready',
      new Error("Cluster isn't ready and enableOfflineQueue options is false"),
    ],
    ['a command timeout', new Error('Command timed out')],
    [
      'a reply lost with the connection',
      redisError('AbortError', 'Command aborted due to connection close'),
    ],
    [
      'a Redis loading its data',
      redisError('ReplyError', 'LOADING Redis is loading the dataset in memory'),
    ],
    [
      'a replica refusing writes',
      redisError('ReplyError', "READONLY You can't write against a read only replica."),
    ],
    [
      'a refused connection',
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' }),
    ],
  ])('holds for %s', (_name, error) => {
    expect(isRedisUnavailable(error)).toBe(true);
  });

  it.each([
    ['a script error', redisError('ReplyError', 'ERR Error running script: attempt to index nil')],
    [
      'a wrong type',
      redisError('ReplyError', 'WRONGTYPE Operation against a key holding the wrong kind of value'),
    ],
    [
      'a message that merely mentions a closed connection',
      new Error('plugin said: Connection is closed. by peer'),
    ],
    ['anything thrown that is not an error', 'Connection is closed.'],
  ])('does not hold for %s', (_name, error) => {
    expect(isRedisUnavailable(error)).toBe(false);
  });
});
