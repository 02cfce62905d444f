import { status } from '@grpc/grpc-js';
import { TerminalError, TransientError } from '@slicekeeper/errors';
import { classifyGrpcError, grpcTarget, parseEndpoint } from './index';

describe('parseEndpoint', () => {
  it.each([
    [
      'unix:///var/lib/kubelet/plugins/gpu/plugin.sock',
      { kind: 'unix', path: '/var/lib/kubelet/plugins/gpu/plugin.sock' },
    ],
    [
      'gpu-driver.kube-system.svc:50051',
      { kind: 'tcp', host: 'gpu-driver.kube-system.svc', port: 50051 },
    ],
    ['10.1.2.3:9000', { kind: 'tcp', host: '10.1.2.3', port: 9000 }],
    ['[fd00::1]:9000', { kind: 'tcp', host: 'fd00::1', port: 9000 }],
  ])('accepts %s', (endpoint, parsed) => {
    expect(parseEndpoint(endpoint)).toEqual(parsed);
  });

  it.each([
    ['unix://relative.sock', 'a unix endpoint must be unix:///absolute/path'],
    [
      'unix:///plugins/../etc/shadow',
      'a unix socket path must be normalized (no "..", ".", "//" or trailing "/")',
    ],
    [
      'unix:///plugins//x.sock',
      'a unix socket path must be normalized (no "..", ".", "//" or trailing "/")',
    ],
    ['http://example.com:80', 'must be unix:///path or host:port'],
    ['example.com', 'must be unix:///path or host:port'],
    ['example.com:0', 'port must be 1..65535'],
    ['example.com:70000', 'port must be 1..65535'],
    ['exa_mple.com:80', 'host must be a DNS name, an IPv4 address or a bracketed IPv6 address'],
    ['[not-v6]:80', 'must be unix:///path or host:port'],
    ['[1.2.3.4]:80', 'host must be a DNS name, an IPv4 address or a bracketed IPv6 address'],
  ])('rejects %s', (endpoint, problem) => {
    expect(parseEndpoint(endpoint)).toBe(problem);
  });

  it('builds grpc-js targets', () => {
    expect(grpcTarget({ kind: 'unix', path: '/run/p.sock' })).toBe('unix:///run/p.sock');
    expect(grpcTarget({ kind: 'tcp', host: 'fd00::1', port: 9 })).toBe('ipv6:[fd00::1]:9');
    expect(grpcTarget({ kind: 'tcp', host: 'h', port: 9 })).toBe('h:9');
  });
});

describe('classifyGrpcError', () => {
  it('retries availability problems and gives up on client faults', () => {
    const unavailable = classifyGrpcError(
      { code: status.UNAVAILABLE, details: 'connect ECONNREFUSED' },
      'watch gpu',
    );
    expect(unavailable).toBeInstanceOf(TransientError);
    expect(unavailable.message).toBe('watch gpu: connect ECONNREFUSED');
    const unimplemented = classifyGrpcError(
      { code: status.UNIMPLEMENTED, details: '' },
      'watch gpu',
    );
    expect(unimplemented).toBeInstanceOf(TerminalError);
    expect(unimplemented.code).toBe('unimplemented');
    expect(classifyGrpcError({ code: status.INVALID_ARGUMENT }, 'x')).toBeInstanceOf(TerminalError);
    expect(classifyGrpcError(new Error('boom'), 'x')).toBeInstanceOf(TransientError);
  });
});
