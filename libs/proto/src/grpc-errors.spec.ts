import { status } from '@grpc/grpc-js';
import { TransientError } from '@slicekeeper/errors';
import type { ErrorKind } from '@slicekeeper/errors';
import {
  classifyGrpcError,
  classifyGrpcStatus,
  grpcErrorCode,
  grpcStatusCode,
  toGrpcStatusCode,
} from './grpc-errors';
import type { GrpcErrorCode, GrpcStatus } from './grpc-errors';

describe('classifyGrpcStatus', () => {
  const cases: [name: string, grpc: GrpcStatus, kind: ErrorKind, code: GrpcErrorCode][] = [
    [
      'unavailable',
      { code: status.UNAVAILABLE, details: 'keepalive timeout' },
      'transient',
      'unavailable',
    ],
    [
      'deadline',
      { code: status.DEADLINE_EXCEEDED, details: 'deadline' },
      'transient',
      'deadline_exceeded',
    ],
    [
      'exhausted',
      { code: status.RESOURCE_EXHAUSTED, details: 'calm' },
      'transient',
      'resource_exhausted',
    ],
    ['internal', { code: status.INTERNAL, details: 'reset' }, 'transient', 'internal'],
    ['unknown', { code: status.UNKNOWN, details: 'text/html' }, 'transient', 'unknown'],
    ['cancelled', { code: status.CANCELLED, details: 'reset' }, 'transient', 'cancelled'],
    ['aborted', { code: status.ABORTED, details: 'x' }, 'transient', 'aborted'],
    ['unimplemented', { code: status.UNIMPLEMENTED, details: 'x' }, 'terminal', 'unimplemented'],
    [
      'permission',
      { code: status.PERMISSION_DENIED, details: 'x' },
      'terminal',
      'permission_denied',
    ],
    ['invalid', { code: status.INVALID_ARGUMENT, details: 'x' }, 'terminal', 'invalid_argument'],
    [
      'unauthenticated',
      { code: status.UNAUTHENTICATED, details: 'x' },
      'terminal',
      'unauthenticated',
    ],
  ];

  it.each(cases)('%s', (_, grpc, kind, code) => {
    const error = classifyGrpcStatus(grpc, 'WatchResources unix:///p.sock');

    expect(error.kind).toBe(kind);
    expect(grpcErrorCode(error)).toBe(code);
    expect(error.message).toBe(`WatchResources unix:///p.sock: ${grpc.details}`);
  });

  it('names the status when there are no details', () => {
    expect(classifyGrpcStatus({ code: status.UNAVAILABLE, details: '' }, 'watch').message).toBe(
      'watch: UNAVAILABLE',
    );
  });
});

describe('classifyGrpcError (grpc-js errors)', () => {
  it('classifies by the numeric code, not by the text', () => {
    const error = Object.assign(new Error('12 UNIMPLEMENTED: looks unavailable'), {
      code: status.UNIMPLEMENTED,
      details: 'unknown service',
    });
    const classified = classifyGrpcError(error, 'GetInfo p');

    expect(grpcErrorCode(classified)).toBe('unimplemented');
    expect(classified.message).toBe('GetInfo p: unknown service');
    expect(classified.cause).toBe(error);
  });

  it('treats an error without a gRPC status as a transient `error`', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const classified = classifyGrpcError(refused, 'dial');

    expect(classified).toBeInstanceOf(TransientError);
    expect(grpcErrorCode(classified)).toBe('error');
    expect(classified.message).toBe('dial: connect ECONNREFUSED');
  });

  it('reads a code gRPC does not define as UNKNOWN', () => {
    expect(grpcStatusCode({ code: 99 })).toBe(status.UNKNOWN);
    expect(toGrpcStatusCode(-1)).toBe(status.UNKNOWN);
    expect(toGrpcStatusCode(1.5)).toBe(status.UNKNOWN);
    expect(toGrpcStatusCode(16)).toBe(status.UNAUTHENTICATED);
    expect(grpcErrorCode(classifyGrpcError({ code: 99, details: 'x' }, 'c'))).toBe('unknown');
  });
});

describe('grpcErrorCode', () => {
  it('gives the typed code of a classified gRPC error, and nothing for other errors', () => {
    expect(grpcErrorCode(new TransientError('x', { code: 'conflict' }))).toBeUndefined();
    expect(grpcErrorCode(new Error('plain'))).toBeUndefined();
  });
});
