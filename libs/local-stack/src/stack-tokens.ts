import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';

/** Bearer tokens of the local stack's registration API: one admin, one bound to each node. */
export interface StackTokens {
  admin: string;
  /** Node name → that node's token (what its kubelet-side registrar presents). */
  nodes: ReadonlyMap<string, string>;
}

/** Fresh random tokens (43 URL-safe characters each) for an admin and every node. */
export function generateStackTokens(nodes: readonly string[]): StackTokens {
  return {
    admin: newToken(),
    nodes: new Map(nodes.map((node) => [node, newToken()])),
  };
}

/**
 * The registration API's token file (`TOKEN_FILE`, see `@slicekeeper/admission`):
 * `{"tokens":[{"name","token","role":"admin"} | {"name","token","role":"node","node"}]}`.
 */
export function tokenFileJson(tokens: StackTokens): string {
  const entries = [
    { name: 'local-admin', token: tokens.admin, role: 'admin' },
    ...[...tokens.nodes].map(([node, token]) => ({
      name: `node-${node}`.slice(0, 63).replace(/[^a-z0-9]+$/, ''),
      token,
      role: 'node',
      node,
    })),
  ];
  return `${JSON.stringify({ tokens: entries }, null, 2)}\n`;
}

/** Writes the token file and the admin token alone (for `curl -H "Authorization: …"`), 0600. */
export async function writeStackTokens(
  tokens: StackTokens,
  paths: { tokenFile: string; adminTokenFile: string },
): Promise<void> {
  await writeFile(paths.tokenFile, tokenFileJson(tokens), { mode: 0o600 });
  await writeFile(paths.adminTokenFile, `${tokens.admin}\n`, { mode: 0o600 });
}

function newToken(): string {
  return randomBytes(32).toString('base64url');
}
