/**
 * Kubernetes name rules (k8s.io/apimachinery/pkg/util/validation), shared by the job contract,
 * the registration API and the slice validator so that every layer agrees on what a valid
 * node or driver name is.
 */
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Longest DNS-1123 label, characters. */
export const DNS1123_LABEL_MAX_LENGTH = 63;
/** Longest DNS-1123 subdomain, characters. */
export const DNS1123_SUBDOMAIN_MAX_LENGTH = 253;
/** Longest DRA driver name, characters (resource.k8s.io/v1). */
export const DRIVER_NAME_MAX_LENGTH = 63;

export function isDns1123Label(value: string): boolean {
  return value.length <= DNS1123_LABEL_MAX_LENGTH && DNS1123_LABEL.test(value);
}

export function isDns1123Subdomain(value: string): boolean {
  return value.length <= DNS1123_SUBDOMAIN_MAX_LENGTH && DNS1123_SUBDOMAIN.test(value);
}

/** Why `driver` is not a valid DRA driver name, or undefined when it is. */
export function driverNameProblem(driver: string): string | undefined {
  if (driver === '') return 'Required value';
  if (driver.length > DRIVER_NAME_MAX_LENGTH) {
    return `must be no more than ${DRIVER_NAME_MAX_LENGTH} characters`;
  }
  if (!DNS1123_SUBDOMAIN.test(driver)) {
    return "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
  }
  return undefined;
}

/** Why `node` is not a valid node name (empty means a cluster-scoped key), or undefined. */
export function nodeNameProblem(node: string): string | undefined {
  if (node === '') return undefined;
  if (node.length > DNS1123_SUBDOMAIN_MAX_LENGTH) {
    return `must be no more than ${DNS1123_SUBDOMAIN_MAX_LENGTH} characters`;
  }
  if (!DNS1123_SUBDOMAIN.test(node)) {
    return "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
  }
  return undefined;
}
