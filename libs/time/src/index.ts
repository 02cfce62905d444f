export { Backoff, backoffDelayMs } from './backoff';
export type { BackoffOptions } from './backoff';
export { systemClock } from './clock';
export type { Clock, TimerHandle } from './clock';
