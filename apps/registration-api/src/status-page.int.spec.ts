import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';
import type { SyncStatus } from '@slicekeeper/contracts';
import { redisKeys } from '@slicekeeper/state/testing';
import { RedisServer, uniquePrefix } from '@slicekeeper/testing';
import { ADMIN_TOKEN, ApiHarness, SOCKET_DIR, admin } from './testing/api-harness';

const DRIVER = 'gpu.example.com';
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

function synced(traceId?: string): SyncStatus {
  return {
    outcome: 'synced',
    snapshotGeneration: 1,
    slices: [],
    pools: [],
    attempt: 1,
    startedAt: '2026-11-27T01:00:00.000Z',
    finishedAt: '2026-11-27T01:00:00.050Z',
    writes: 1,
    ...(traceId === undefined ? {} : { traceId }),
  };
}

describe('the status page, in a browser', () => {
  let server: RedisServer;
  let h: ApiHarness;
  let browser: Browser;
  let url: string;

  beforeAll(async () => {
    server = await RedisServer.start();
    h = await new ApiHarness({ redisUrl: server.url, prefix: uniquePrefix('page') }).ready();
    url = await h.app.listen({ host: '127.0.0.1', port: 0 });
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
  });
  afterAll(async () => {
    await browser.close();
    await h.close();
    await server.stop();
  });

  it("shows the trace id of a key's last sync, and nothing of the kind without one", async () => {
    for (const [node, traceId] of [
      ['node-a', TRACE_ID],
      ['node-b', undefined],
    ] as const) {
      const registered = await h.app.inject({
        method: 'POST',
        url: '/v1/plugins',
        headers: admin,
        payload: { node, endpoint: `unix://${SOCKET_DIR}/gpu-${node}.sock` },
      });
      expect(registered.statusCode).toBe(201);
      await h.redis.set(
        redisKeys(h.prefix).syncStatus({ node, driver: DRIVER }),
        JSON.stringify(synced(traceId)),
      );
    }
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${url}/ui#token=${ADMIN_TOKEN}`);
      const traced = page.locator(`td[data-node="node-a"][data-driver="${DRIVER}"]`);
      const untraced = page.locator(`td[data-node="node-b"][data-driver="${DRIVER}"]`);
      await traced.locator('dt', { hasText: 'last sync trace' }).waitFor();
      expect(await traced.locator('code.trace-id').textContent()).toBe(TRACE_ID);
      await untraced.locator('dt', { hasText: 'sync' }).first().waitFor();
      expect(await untraced.locator('dt', { hasText: 'last sync trace' }).count()).toBe(0);
      // No TRACE_URL_TEMPLATE: the id is text, not a link.
      expect(await traced.locator('a').count()).toBe(0);
    } finally {
      await context.close();
    }
  });

  it('links the trace id to the tracing UI that TRACE_URL_TEMPLATE names', async () => {
    // An & and a quote: the template reaches the page through an HTML attribute, escaped.
    const template = 'http://grafana.example.com/explore?trace={traceId}&left="tempo"';
    const linked = await new ApiHarness({
      redisUrl: server.url,
      prefix: h.prefix,
      traceUrlTemplate: template,
    }).ready();
    const context = await browser.newContext();
    try {
      const linkedUrl = await linked.app.listen({ host: '127.0.0.1', port: 0 });
      const page = await context.newPage();
      await page.goto(`${linkedUrl}/ui#token=${ADMIN_TOKEN}`);
      const link = page.locator(`td[data-node="node-a"][data-driver="${DRIVER}"] a.trace-link`);
      await link.waitFor();
      expect(await link.getAttribute('href')).toBe(template.replace('{traceId}', TRACE_ID));
      expect(await link.textContent()).toBe(TRACE_ID);
      expect(await link.getAttribute('rel')).toBe('noopener noreferrer');
    } finally {
      await context.close();
      await linked.close();
    }
  });
});
