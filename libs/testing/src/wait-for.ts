export interface WaitForOptions {
  /** @defaultValue 10000 */
  timeoutMs?: number;
  /** Time between two checks, ms. @defaultValue 20 */
  intervalMs?: number;
  /** Names what is awaited in the timeout error. */
  description?: string;
}

/**
 * Resolves with the first truthy value of `check`, polling; fails after the timeout with the
 * description and the last error `check` threw. For integration tests that wait on another
 * process, where no clock can be injected.
 */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  { timeoutMs = 10_000, intervalMs = 20, description = 'condition' }: WaitForOptions = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (isTruthy(value)) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      const cause = lastError instanceof Error ? `: ${lastError.message}` : '';
      throw new Error(`timed out after ${timeoutMs}ms waiting for ${description}${cause}`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

function isTruthy<T>(value: T): value is NonNullable<T> {
  return value !== undefined && value !== null && (value as unknown) !== false;
}
