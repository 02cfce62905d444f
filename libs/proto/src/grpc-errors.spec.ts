import { status } from '@grpc/grpc-js';
import { TransientError } from '@slicekeeper/errors';
import { classifyGrpcError, grpcErrorCode, rejectedMessageProblem } from './grpc-errors';

describe('rejectedMessageProblem', () => {
  const cases: [
    name: string,
    error: { code: number; details: string },
    problem: string | undefined,
  ][] = [
    [
      'too-large',
      {
        code: status.RESOURCE_EXHAUSTED,
        details: 'Received message larger than max (21000000 vs 16777216)',
      },
      'message of 21000000 bytes exceeds the limit of 16777216 bytes',
    ],
    [
      'too-large-decompressed',
      {
        code: status.RESOURCE_EXHAUSTED,
        details: 'Received message that decompresses to a size larger than 16777216',
      },
      'message exceeds the limit of 16777216 bytes once decompressed',
    ],
    [
      'undecodable',
      { code: status.INTERNAL, details: 'Response message parsing error: invalid wire type 7' },
      'message does not decode: invalid wire type 7',
    ],
    ['driver-exhausted', { code: status.RESOURCE_EXHAUSTED, details: 'out of memory' }, undefined],
    ['driver-internal', { code: status.INTERNAL, details: 'panic: nil map' }, undefined],
    [
      'wrong-code',
      { code: status.UNAVAILABLE, details: 'Received message larger than max (2 vs 1)' },
      undefined,
    ],
  ];

  it.each(cases)('%s', (_, error, problem) => {
    expect(rejectedMessageProblem(error)).toBe(problem);
  });

  it('is undefined for anything but a gRPC status', () => {
    expect(rejectedMessageProblem(new Error('Received message larger than max (2 vs 1)'))).toBe(
      undefined,
    );
  });
});

describe('grpcErrorCode', () => {
  it('gives the typed code of a classified gRPC error, and nothing for other errors', () => {
    const unavailable = Object.assign(new Error('down'), { code: status.UNAVAILABLE });
    expect(grpcErrorCode(classifyGrpcError(unavailable, 'dial'))).toBe('unavailable');
    const unimplemented = Object.assign(new Error('no'), { code: status.UNIMPLEMENTED });
    expect(grpcErrorCode(classifyGrpcError(unimplemented, 'watch'))).toBe('unimplemented');
    expect(grpcErrorCode(classifyGrpcError(new Error('boom'), 'watch'))).toBe('error');
    expect(grpcErrorCode(new TransientError('x', { code: 'conflict' }))).toBeUndefined();
    expect(grpcErrorCode(new Error('plain'))).toBeUndefined();
  });
});
