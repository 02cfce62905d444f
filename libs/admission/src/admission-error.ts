import { TerminalError, TransientError } from '@slicekeeper/errors';
import type { SlicekeeperError } from '@slicekeeper/errors';

/**
 * Why a registration was refused. The registration API maps each code to an HTTP status in one
 * table; the plugin is told the message through `NotifyRegistrationStatus`.
 */
export const admissionErrorCodes = [
  /** The endpoint string is malformed (not `unix:///abs/path` or `host:port`). */
  'invalid-endpoint',
  /** The endpoint is well-formed but outside the allowlist. */
  'endpoint-forbidden',
  /** The plugin could not be dialled within the dial timeout. */
  'plugin-unreachable',
  /** The plugin did not answer `GetInfo` within the call timeout. */
  'plugin-timeout',
  /** `GetInfo` failed with an error of the plugin's own. */
  'plugin-error',
  /** The plugin is not a DRA plugin. */
  'wrong-plugin-type',
  /** The plugin's driver name is not a valid DRA driver name. */
  'invalid-driver-name',
  /** The plugin reports another driver than the request names. */
  'driver-mismatch',
  /** No version the plugin supports is one slicekeeper supports. */
  'unsupported-versions',
  /** The plugin does not serve the registration service and the request did not say who it is. */
  'missing-plugin-info',
] as const;
export type AdmissionErrorCode = (typeof admissionErrorCodes)[number];

/** Failures that may pass when tried again (the plugin may be starting). */
const TRANSIENT: ReadonlySet<AdmissionErrorCode> = new Set([
  'plugin-unreachable',
  'plugin-timeout',
]);

/** Creates the error of the one hierarchy (transient or terminal) for an admission failure. */
export function admissionError(
  code: AdmissionErrorCode,
  message: string,
  cause?: unknown,
): SlicekeeperError {
  const options = cause === undefined ? { code } : { code, cause };
  return TRANSIENT.has(code)
    ? new TransientError(message, options)
    : new TerminalError(message, options);
}

/** Whether `code` is an admission error code (as carried by `SlicekeeperError.code`). */
export function isAdmissionErrorCode(code: string): code is AdmissionErrorCode {
  return (admissionErrorCodes as readonly string[]).includes(code);
}
