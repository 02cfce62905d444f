import { MAX_HEALTH_MESSAGE_LENGTH, MAX_HEALTH_TIMEOUT_SECONDS } from '@slicekeeper/contracts';
import type { DeviceHealth, DeviceHealthStatus } from '@slicekeeper/contracts';
import type { Duration } from './generated/google/protobuf/duration';
import type * as wire from './generated/slicekeeper/v1/resources';
import { HealthStatus } from './generated/slicekeeper/v1/resources';

/** Largest magnitude of a Duration's nanos (protobuf's rule). */
const MAX_DURATION_NANOS = 999_999_999;

/** The domain status of each wire status; UNSPECIFIED means the driver reports no health. */
const HEALTH_STATUSES: ReadonlyMap<number, DeviceHealthStatus | 'unspecified'> = new Map([
  [HealthStatus.HEALTH_STATUS_UNSPECIFIED, 'unspecified'],
  [HealthStatus.HEALTH_STATUS_HEALTHY, 'healthy'],
  [HealthStatus.HEALTH_STATUS_UNHEALTHY, 'unhealthy'],
  [HealthStatus.HEALTH_STATUS_UNKNOWN, 'unknown'],
]);

const WIRE_HEALTH_STATUSES: Readonly<Record<DeviceHealthStatus, HealthStatus>> = {
  healthy: HealthStatus.HEALTH_STATUS_HEALTHY,
  unhealthy: HealthStatus.HEALTH_STATUS_UNHEALTHY,
  unknown: HealthStatus.HEALTH_STATUS_UNKNOWN,
};

/**
 * The device's health; undefined for none (status UNSPECIFIED) or after recording problems.
 * Checked in full, as the domain model cannot carry a broken one (see `mapDriverResources`).
 */
export function toHealth(
  health: wire.DeviceHealth,
  path: () => string,
  problems: string[],
): DeviceHealth | undefined {
  const status = HEALTH_STATUSES.get(health.status);
  if (status === undefined) {
    const known = [...HEALTH_STATUSES.keys()].map((n) => HealthStatus[n]).join(', ');
    problems.push(`${path()}.status: must be one of ${known} (is ${health.status})`);
    return undefined;
  }
  if (status === 'unspecified') return undefined;
  const mapped: DeviceHealth = { status };
  const before = problems.length;
  if (health.message.length > MAX_HEALTH_MESSAGE_LENGTH) {
    problems.push(
      `${path()}.message: must be at most ${MAX_HEALTH_MESSAGE_LENGTH} characters ` +
        `(is ${health.message.length})`,
    );
  } else if (health.message !== '') {
    mapped.message = health.message;
  }
  if (health.timeout !== undefined) {
    const seconds = toTimeoutSeconds(health.timeout, () => `${path()}.timeout`, problems);
    if (seconds > 0) mapped.timeoutSeconds = seconds;
  }
  return problems.length === before ? mapped : undefined;
}

/** The wire form of a domain health. */
export function fromHealth(health: DeviceHealth): wire.DeviceHealth {
  return {
    status: WIRE_HEALTH_STATUSES[health.status],
    message: health.message ?? '',
    timeout:
      health.timeoutSeconds === undefined
        ? undefined
        : { seconds: BigInt(health.timeoutSeconds), nanos: 0 },
  };
}

/** The timeout in whole seconds, rounded up; 0 for none or after recording why it is bad. */
function toTimeoutSeconds(timeout: Duration, path: () => string, problems: string[]): number {
  const { seconds, nanos } = timeout;
  if (nanos < -MAX_DURATION_NANOS || nanos > MAX_DURATION_NANOS) {
    problems.push(`${path()}.nanos: must be within ±${MAX_DURATION_NANOS} (is ${nanos})`);
    return 0;
  }
  if ((seconds > 0n && nanos < 0) || (seconds < 0n && nanos > 0)) {
    problems.push(
      `${path()}: seconds and nanos must have the same sign (is ${seconds}s and ${nanos}ns)`,
    );
    return 0;
  }
  if (seconds < 0n || nanos < 0) {
    problems.push(`${path()}: must not be negative (is ${formatDuration(timeout)})`);
    return 0;
  }
  const whole = seconds + (nanos > 0 ? 1n : 0n);
  if (whole > BigInt(MAX_HEALTH_TIMEOUT_SECONDS)) {
    problems.push(
      `${path()}: must be at most ${MAX_HEALTH_TIMEOUT_SECONDS}s (24h) ` +
        `(is ${formatDuration(timeout)})`,
    );
    return 0;
  }
  return Number(whole);
}

/** A valid Duration as protobuf's JSON form writes it: `1.5s`, `-0.000000001s`. */
function formatDuration({ seconds, nanos }: Duration): string {
  const sign = seconds < 0n || nanos < 0 ? '-' : '';
  const whole = seconds < 0n ? -seconds : seconds;
  const fraction = String(Math.abs(nanos)).padStart(9, '0').replace(/0+$/, '');
  return `${sign}${whole}${fraction === '' ? '' : `.${fraction}`}s`;
}
