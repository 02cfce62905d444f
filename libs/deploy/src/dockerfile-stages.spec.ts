import { dockerfileStages } from './dockerfile-stages';

describe('dockerfileStages', () => {
  it("reads each stage's ENV, with those of the stage it is built on", () => {
    const stages = dockerfileStages(
      [
        'FROM node:26 AS runtime',
        'ENV NODE_ENV=production',
        '# a comment',
        'ENV LD_PRELOAD=libjemalloc.so.2 \\',
        '    EXTRA=1',
        'FROM runtime AS app',
        'ENV EXTRA=2',
        'FROM node:26 AS other',
      ].join('\n'),
    );
    expect(stages.map((stage) => [stage.name, stage.env])).toEqual([
      ['runtime', { NODE_ENV: 'production', LD_PRELOAD: 'libjemalloc.so.2', EXTRA: '1' }],
      ['app', { NODE_ENV: 'production', LD_PRELOAD: 'libjemalloc.so.2', EXTRA: '2' }],
      ['other', {}],
    ]);
  });

  it.each([['ENV NAME "quoted value"'], ['ENV NAME="x"'], ['ENV PATH=$PATH:/x']])(
    'refuses %s rather than read it wrong',
    (line) => {
      expect(() => dockerfileStages(`FROM node:26 AS runtime\n${line}`)).toThrow(
        /each pair must be NAME=value without quotes, spaces or \$/,
      );
    },
  );
});
