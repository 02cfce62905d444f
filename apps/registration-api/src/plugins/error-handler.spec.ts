import { admissionError } from '@slicekeeper/admission';
import { TransientError } from '@slicekeeper/errors';
import { HttpError } from '../http-error';
import { toErrorAnswer } from './error-handler';

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
      'a Redis failure as 500, without its message',
      new TransientError('ECONNREFUSED 10.0.0.1'),
      500,
      'internal',
    ],
    ['anything else as 500', 'boom', 500, 'internal'],
  ])('answers %s', (_name, error, status, code) => {
    const answer = toErrorAnswer(error);
    expect([answer.status, answer.body.code]).toEqual([status, code]);
    expect(answer.body.details).toEqual(status === 400 ? [expect.anything()] : []);
    if (status === 500) expect(answer.body.message).toBe('internal error');
  });
});
