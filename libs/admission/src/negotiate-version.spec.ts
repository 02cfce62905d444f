import { SUPPORTED_PLUGIN_VERSIONS } from '@slicekeeper/contracts';
import { negotiateVersion, unsupportedVersionsMessage } from './negotiate-version';

describe('negotiateVersion', () => {
  const supported = ['v2.ResourcePublisher', 'v1.ResourcePublisher'];

  it.each([
    [
      'first shared in slicekeeper order',
      ['v1.ResourcePublisher', 'v2.ResourcePublisher'],
      'v2.ResourcePublisher',
    ],
    ['skips unknown', ['v9.ResourcePublisher', 'v2.ResourcePublisher'], 'v2.ResourcePublisher'],
    ['none shared', ['v9.ResourcePublisher'], undefined],
    ['empty', [], undefined],
  ])('%s', (_name, plugin, expected) => {
    expect(negotiateVersion(plugin, supported)).toBe(expected);
  });

  it.each([
    ['kubelet 1.30 driver', ['1.0.0'], '1.0.0'],
    ['ResourcePublisher preferred', ['1.0.0', 'v1.ResourcePublisher'], 'v1.ResourcePublisher'],
    ['ResourcePublisher only', ['v1.ResourcePublisher'], 'v1.ResourcePublisher'],
    ['older kubelet API', ['0.3.0'], undefined],
  ])('with the shipped versions: %s', (_name, plugin, expected) => {
    expect(negotiateVersion(plugin, SUPPORTED_PLUGIN_VERSIONS)).toBe(expected);
  });

  it('names both lists when there is no common version', () => {
    expect(unsupportedVersionsMessage(['v9.X'], ['v1.ResourcePublisher'])).toBe(
      `none of the plugin's supported versions ["v9.X"] is supported by slicekeeper ["v1.ResourcePublisher"]`,
    );
    expect(unsupportedVersionsMessage([], ['v1'])).toContain('[(none)]');
  });
});
