/**
 * Kubernetes name rules (k8s.io/apimachinery/pkg/util/validation), shared by the job contract,
 * the registration API and the slice validator so that every layer agrees on what a valid
 * node or driver name is.
 */
import { dns1123LabelProblems, dns1123SubdomainProblems } from './name-problems';

/** Longest DRA driver name, characters (resource.k8s.io/v1). */
export const DRIVER_NAME_MAX_LENGTH = 63;

export function isDns1123Label(value: string): boolean {
  return dns1123LabelProblems(value).length === 0;
}

export function isDns1123Subdomain(value: string): boolean {
  return dns1123SubdomainProblems(value).length === 0;
}

/** Why `driver` is not a valid DRA driver name, or undefined when it is. */
export function driverNameProblem(driver: string): string | undefined {
  if (driver === '') return 'Required value';
  if (driver.length > DRIVER_NAME_MAX_LENGTH) {
    return `must be no more than ${DRIVER_NAME_MAX_LENGTH} characters`;
  }
  return dns1123SubdomainProblems(driver)[0];
}

/** Why `node` is not a valid node name (empty means a cluster-scoped key), or undefined. */
export function nodeNameProblem(node: string): string | undefined {
  if (node === '') return undefined;
  return dns1123SubdomainProblems(node)[0];
}
