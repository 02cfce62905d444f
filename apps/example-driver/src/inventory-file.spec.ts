import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadInventoryFile } from './inventory-file';

describe('inventory files', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sk-inventory-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads JSON too', async () => {
    const file = join(dir, 'one.json');
    await writeFile(
      file,
      JSON.stringify({ pools: [{ name: 'p', scope: { kind: 'all-nodes' }, devices: [] }] }),
    );
    expect(await loadInventoryFile(file)).toEqual({
      pools: [{ name: 'p', scope: { kind: 'all-nodes' }, devices: [] }],
    });
  });

  it('names the file and the field that does not fit', async () => {
    const file = join(dir, 'bad.yaml');
    await writeFile(
      file,
      'pools:\n  - name: p\n    scope: { kind: node }\n    devices: [{ nom: gpu-0 }]\n',
    );
    await expect(loadInventoryFile(file)).rejects.toThrow(
      /bad\.yaml: not an inventory: pools\.0\.devices\.0\.name/,
    );
    await writeFile(file, 'pools: [');
    await expect(loadInventoryFile(file)).rejects.toThrow(/bad\.yaml: not YAML or JSON/);
  });

  it('reads the health a device reports', async () => {
    const file = join(dir, 'health.yaml');
    await writeFile(
      file,
      [
        'pools:',
        '  - name: p',
        '    scope: { kind: node }',
        '    devices:',
        '      - name: gpu-0',
        '        health: { status: healthy, timeoutSeconds: 30 }',
        '      - name: gpu-1',
        '        health: { status: unhealthy, message: ECC errors above threshold }',
        '      - name: gpu-2',
        '',
      ].join('\n'),
    );
    expect((await loadInventoryFile(file)).pools[0]?.devices).toEqual([
      { name: 'gpu-0', health: { status: 'healthy', timeoutSeconds: 30 } },
      { name: 'gpu-1', health: { status: 'unhealthy', message: 'ECC errors above threshold' } },
      { name: 'gpu-2' },
    ]);
  });

  it.each([
    ['an unknown status', '{ status: broken }', /devices\.0\.health\.status: Invalid option/],
    [
      'a timeout of zero',
      '{ status: healthy, timeoutSeconds: 0 }',
      /devices\.0\.health\.timeoutSeconds: Too small/,
    ],
    [
      'a fractional timeout',
      '{ status: healthy, timeoutSeconds: 1.5 }',
      /devices\.0\.health\.timeoutSeconds: Invalid input: expected int/,
    ],
    [
      'a message over 1024 characters',
      `{ status: unknown, message: ${'x'.repeat(1025)} }`,
      /devices\.0\.health\.message: Too big/,
    ],
    [
      'a field it does not know',
      '{ status: healthy, since: today }',
      /devices\.0\.health: Unrecognized key: "since"/,
    ],
  ])('names the health field of %s', async (_, health, problem) => {
    const file = join(dir, 'bad-health.yaml');
    await writeFile(
      file,
      `pools:\n  - name: p\n    scope: { kind: node }\n    devices:\n      - name: gpu-0\n        health: ${health}\n`,
    );
    await expect(loadInventoryFile(file)).rejects.toThrow(problem);
  });
});
