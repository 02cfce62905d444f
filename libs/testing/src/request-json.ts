/**
 * Sends a JSON request straight to a server (the kube emulator, say) and returns its JSON
 * answer; throws with the status and body on anything but 2xx. For specs that act as someone
 * other than slicekeeper.
 */
export async function requestJson(
  baseUrl: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<unknown> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return JSON.parse(text) as unknown;
}
