// One-shot setup of the compose stack: creates the emulated Nodes, then registers each example
// driver with the registration API, as kubelet would when a plugin socket appears. With the
// profile fabric the drivers publish a cluster-level pool (devices that choose their own
// nodes), which belongs to the cluster-scoped key: the first driver is registered for it (empty
// node) instead of for its node.
//
// usage: node seed.mjs <kube-url> <registration-api-url> <token-file> <profile> <node>=<endpoint>...
import { readFile } from 'node:fs/promises';

const [kubeUrl, apiUrl, tokenFile, profile, ...plugins] = process.argv.slice(2);
if (kubeUrl === undefined || apiUrl === undefined || tokenFile === undefined || !profile) {
  console.error(
    'usage: seed.mjs <kube-url> <registration-api-url> <token-file> <profile> <node>=<endpoint>...',
  );
  process.exit(2);
}
const { tokens } = JSON.parse(await readFile(tokenFile, 'utf8'));
const admin = tokens.find((entry) => entry.role === 'admin');
const driver = 'gpu.example.com';

async function send(method, url, body, headers = {}) {
  const response = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  // 409: the Node already exists (the seed ran before); the stack is already set up.
  if (!response.ok && response.status !== 409) {
    throw new Error(`${method} ${url}: ${response.status} ${await response.text()}`);
  }
  return response.status;
}

const clusterScoped = profile === 'fabric';
for (const [index, plugin] of plugins.entries()) {
  const [node, endpoint] = plugin.split('=');
  await send('POST', `${kubeUrl}/api/v1/nodes`, {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: node },
  });
  if (clusterScoped && index > 0) continue;
  const key = clusterScoped ? '' : node;
  await send(
    'POST',
    `${apiUrl}/v1/plugins`,
    { node: key, driver, endpoint },
    { authorization: `Bearer ${admin.token}` },
  );
  console.log(
    `${key === '' ? 'the cluster-scoped key' : `node ${node}`}: ${driver} registered at ${endpoint}`,
  );
}
