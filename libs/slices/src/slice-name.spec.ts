import {
  decodeSliceIndex,
  encodeSliceIndex,
  sliceGenerateName,
  sliceIndexLength,
} from './slice-name';

describe('slice names', () => {
  const lengths: [name: string, sliceCount: number, length: number][] = [
    ['one-slice', 1, 5],
    ['no-slice', 0, 5],
    ['largest-five-digit-index', 0x100000, 5],
    ['first-six-digit-index', 0x100001, 6],
  ];

  it.each(lengths)('%s: %d slices use %d digits', (_, sliceCount, length) => {
    expect(sliceIndexLength(sliceCount)).toBe(length);
  });

  const decoded: [name: string, sliceName: string, length: number, index: number | undefined][] = [
    ['index-prefix', '0000a-gpu.example.com-node-1-x7k2p', 5, 10],
    ['first-slice', '00000-gpu.example.com-node-1-x7k2p', 5, 0],
    ['wider-prefix-than-expected', '00000a-gpu.example.com-x7k2p', 5, undefined],
    ['narrower-prefix-than-expected', '0000a-gpu.example.com-x7k2p', 6, undefined],
    ['not-hex', 'gpu01-example-x7k2p', 5, undefined],
    ['no-separator', '00001', 5, undefined],
    ['random-name', 'node-1-gpu.example.com-x7k2p', 5, undefined],
  ];

  it.each(decoded)('%s: %s', (_, sliceName, length, index) => {
    expect(decodeSliceIndex(sliceName, length)).toBe(index);
  });

  it('round-trips every index through its name', () => {
    for (const index of [0, 1, 15, 16, 255, 0xfffff]) {
      const name = `${encodeSliceIndex(index, 5)}-gpu.example.com-node-1-abcde`;
      expect(decodeSliceIndex(name, 5)).toBe(index);
    }
  });

  it('names node-local slices after driver and node, cluster-scoped ones after the driver', () => {
    expect(
      sliceGenerateName({ index: 17, indexLength: 5, driver: 'gpu.example.com', node: 'node-1' }),
    ).toBe('00011-gpu.example.com-node-1-');
    expect(
      sliceGenerateName({ index: 0, indexLength: 6, driver: 'nic.example.com', node: '' }),
    ).toBe('000000-nic.example.com-');
  });
});
