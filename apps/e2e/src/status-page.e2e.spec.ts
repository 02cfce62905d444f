import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import type { Browser, Locator, Page } from 'playwright-core';
import type { DriverInventory } from '@slicekeeper/contracts';
import { repoRoot } from '@slicekeeper/local-stack';
import { System, gpuInventory } from './harness';
import type { InProcessDriver } from './harness';

const GPU = 'gpu.example.com';
const NIC = 'nic.example.com';
const SCREENSHOT = join(repoRoot, 'reports', 'ui', 'status-page.png');
/** How long the page may take to show what the API already says: a refresh or two. */
const PAGE_CATCHES_UP_MS = 10_000;

/** The grid cell of a key (`td`), narrowed to one showing every text in `texts`. */
function cell(page: Page, node: string, driver: string, ...texts: string[]): Locator {
  return texts.reduce(
    (found, text) => found.filter({ hasText: text }),
    page.locator(`td[data-node="${node}"][data-driver="${driver}"]`),
  );
}

describe('the status page at /ui, in a browser', () => {
  let system: System;
  let browser: Browser;
  let gpuOnB: InProcessDriver;

  beforeAll(async () => {
    system = await System.start({ name: 'status-page', nodes: ['node-a', 'node-b'] });
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
    await system.inProcessDriver({ node: 'node-a', driver: GPU, inventory: gpuInventory() });
    gpuOnB = await system.inProcessDriver({
      node: 'node-b',
      driver: GPU,
      inventory: gpuInventory(),
    });
    await system.inProcessDriver({ node: 'node-a', driver: NIC, inventory: gpuInventory() });
    await system.until('all three keys synced and streaming', async () => {
      const statuses = await Promise.all([
        system.status('node-a', GPU),
        system.status('node-b', GPU),
        system.status('node-a', NIC),
      ]);
      return statuses.every(
        (s) => s?.sync?.outcome === 'synced' && s.stream?.state === 'streaming',
      );
    });
  }, 90_000);

  afterAll(async () => {
    await browser.close();
    await system.close();
  });

  /** A fresh browser context (its own sessionStorage) and page; errors on the page collected. */
  async function openPage(): Promise<{ page: Page; errors: string[] }> {
    const context = await browser.newContext();
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    // A CSP violation (an inline script or style, a foreign request) is a console error.
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    return { page, errors };
  }

  it('shows each key live: healthy and synced, then invalid with its field path', async () => {
    const { page, errors } = await openPage();
    let loads = 0;
    page.on('load', () => loads++);
    await page.goto(`${system.apiUrl}/ui#token=${system.tokens.admin}`);

    const synced = await system.status('node-b', GPU);
    const pool = synced?.sync?.pools[0];
    const slice = synced?.sync?.slices[0];
    if (pool === undefined || slice === undefined) throw new Error('node-b has no pool or slice');
    await cell(page, 'node-b', GPU, '✓ healthy', 'synced', slice, `generation ${pool.generation}`)
      .and(page.locator('[data-health="healthy"]'))
      .waitFor({ timeout: PAGE_CATCHES_UP_MS });
    await cell(page, 'node-a', NIC, '✓ healthy', 'streaming', '8 devices').waitFor();
    await cell(page, 'node-b', NIC, 'not registered').waitFor();
    await page
      .locator('#summary', { hasText: '3 keys (2 nodes × 2 drivers): 3 synced — no problems' })
      .waitFor();
    // The token left the address bar (and the history) as soon as the page took it.
    expect(new URL(page.url()).hash).toBe('');

    const invalid: DriverInventory = gpuInventory({ rev: 1 });
    const device = invalid.pools[0]?.devices[3];
    if (device === undefined) throw new Error('gpuInventory has no device 3');
    device.name = 'GPU_3';
    gpuOnB.publish(invalid);
    await system.until('the API says invalid', async () => {
      return (await system.status('node-b', GPU))?.sync?.outcome === 'invalid';
    });
    const refused = (await system.status('node-b', GPU))?.sync;
    const problem = refused?.problems?.[0];
    if (problem === undefined) throw new Error('the invalid status names no problem');

    await cell(page, 'node-b', GPU, '✗ problem', 'invalid', problem.field, 'GPU_3')
      .and(page.locator('[data-health="problem"]'))
      .waitFor({ timeout: PAGE_CATCHES_UP_MS });
    await page
      .locator('#summary', { hasText: '2 synced, 1 invalid — 1 needs attention' })
      .waitFor();
    await cell(page, 'node-a', GPU, '✓ healthy', 'synced').waitFor();
    // The last good slices stay published, and the page says which.
    await cell(page, 'node-b', GPU, slice).waitFor();

    await mkdir(join(repoRoot, 'reports', 'ui'), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect(loads).toBe(1);
    expect(errors).toEqual([]);

    // Back to a valid inventory: the key turns healthy again, still without a reload.
    gpuOnB.publish(gpuInventory({ rev: 2 }));
    await cell(page, 'node-b', GPU, '✓ healthy', 'synced')
      .and(page.locator('[data-outcome="synced"]'))
      .waitFor({ timeout: 30_000 });
    expect(loads).toBe(1);
    await page.context().close();
  }, 90_000);

  it('says when the token is wrong, and takes a right one from its form', async () => {
    const { page, errors } = await openPage();
    await page.goto(`${system.apiUrl}/ui#token=not-a-token-of-this-api-0123456789abcdef`);
    await page.locator('#message', { hasText: 'The token was refused (401)' }).waitFor();
    await page.locator('#sign-in').waitFor();
    expect(await page.locator('td[data-node]').count()).toBe(0);
    // The refused token is not kept.
    expect(await page.evaluate('sessionStorage.length')).toBe(0);

    await page.locator('#token').fill(system.tokens.admin);
    await page.locator('#token').press('Enter');
    await cell(page, 'node-a', GPU, 'synced').waitFor({ timeout: PAGE_CATCHES_UP_MS });
    expect(await page.locator('#token').inputValue()).toBe('');
    await page.locator('#sign-in').waitFor({ state: 'hidden' });
    expect(await page.locator('#message').isHidden()).toBe(true);

    // "Forget token" drops it: the data goes, the form comes back.
    await page.getByRole('button', { name: 'Forget token' }).click();
    await page.locator('#sign-in').waitFor();
    expect(await page.locator('td[data-node]').count()).toBe(0);
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
    // The 401 of the wrong token is the browser's console error; nothing else went wrong.
    expect(errors.filter((e) => !e.includes('401'))).toEqual([]);
    await page.context().close();
  }, 60_000);

  it('shows a node-bound token its own node only, as the API does', async () => {
    const { page } = await openPage();
    await page.goto(`${system.apiUrl}/ui#token=${system.nodeToken('node-a')}`);
    await page.locator('tr[data-node="node-a"]').waitFor({ timeout: PAGE_CATCHES_UP_MS });
    // One refresh draws the whole grid at once: node-a's row there means node-b's would be.
    expect(await page.locator('tr[data-node="node-b"]').count()).toBe(0);
    await page.context().close();
  }, 60_000);

  it('serves a shell without data, and the token never reaches the server', async () => {
    const shell = await fetch(`${system.apiUrl}/ui`, { signal: AbortSignal.timeout(10_000) });
    expect([shell.status, shell.headers.get('content-type')]).toEqual([
      200,
      'text/html; charset=utf-8',
    ]);
    const html = await shell.text();
    expect(html).toContain('<script type="module" src="/ui/status-page.js"></script>');
    expect(html).not.toMatch(/\bnode-[ab]\b|gpu\.example\.com|nic\.example\.com/);
    const data = await fetch(`${system.apiUrl}/v1/plugins`, {
      signal: AbortSignal.timeout(10_000),
    });
    expect(data.status).toBe(401);

    // The pages above were opened with #token=…: the fragment stays in the browser.
    const lines = JSON.stringify(await system.logEntries('registration-api'));
    expect(lines).toContain('"/ui"');
    expect(lines).not.toContain(system.tokens.admin);
    expect(lines).not.toContain(system.nodeToken('node-a'));
    expect(lines).not.toContain('not-a-token-of-this-api');
  });

  // Last: it stops the API for a while.
  it('keeps the last data, marked stale, while the API is down, and catches up after', async () => {
    const { page } = await openPage();
    await page.goto(`${system.apiUrl}/ui#token=${system.tokens.admin}`);
    await cell(page, 'node-a', GPU, 'synced').waitFor({ timeout: PAGE_CATCHES_UP_MS });

    await system.stopService('registration-api');
    await page
      .locator('#message', { hasText: 'The API could not be read' })
      .waitFor({ timeout: PAGE_CATCHES_UP_MS });
    await page.locator('#freshness', { hasText: 'Stale: showing data read at' }).waitFor();
    await cell(page, 'node-a', GPU, 'synced').waitFor();

    await system.startService('registration-api');
    await page
      .locator('#freshness', { hasText: 'Updated' })
      .waitFor({ timeout: PAGE_CATCHES_UP_MS });
    await page.locator('#message').waitFor({ state: 'hidden' });
    await page.context().close();
  }, 90_000);
});
