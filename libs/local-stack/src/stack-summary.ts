import { relative } from 'node:path';
import type { LocalStackInfo } from './local-stack';

/**
 * What `npm start` prints once everything runs: where each part is and lines to copy. Paths
 * are shown relative to `cwd` when they are inside it.
 */
export function stackSummary(info: LocalStackInfo, cwd: string): string[] {
  const show = (path: string): string => {
    const rel = relative(cwd, path);
    return rel !== '' && !rel.startsWith('..') ? rel : path;
  };
  const kubeconfig = show(info.kubeconfig);
  const adminTokenFile = show(info.adminTokenFile);
  const statusPage = `${info.apiUrl}/ui`;
  return [
    `ready in ${(info.startedInMs / 1000).toFixed(1)}s`,
    `  registration API  ${info.apiUrl}`,
    `  API docs          ${info.docsUrl}`,
    `  status page       ${statusPage} (sign in with the admin token)`,
    `  kubeconfig        ${kubeconfig}`,
    ...(info.emulatorUrl === undefined ? [] : [`  kube emulator     ${info.emulatorUrl}`]),
    ...emulatorGateLines(info),
    `  driver profile    ${profileLine(info)}`,
    `  redis             ${info.redisUrl}`,
    `  tokens            ${show(info.tokenFile)} (admin token alone: ${adminTokenFile})`,
    '',
    `  kubectl --kubeconfig ${kubeconfig} get resourceslices`,
    `  curl -H "Authorization: Bearer $(cat ${adminTokenFile})" ${info.apiUrl}/v1/plugins`,
    // The token goes in the URL fragment, which the browser keeps to itself; the line names the
    // file, as the curl line does, so that the token is never printed.
    `  xdg-open "${statusPage}#token=$(cat ${adminTokenFile})"   # macOS: open`,
    '',
    'A process that dies is started again, with backoff. Ctrl-C stops everything.',
  ];
}

/** The emulator's release and the gates it was given, when it runs. */
function emulatorGateLines(info: LocalStackInfo): string[] {
  const emulator = info.emulatorGates;
  if (emulator === undefined) return [];
  const given = Object.entries(emulator.featureGates).map(([gate, on]) => `${gate}=${String(on)}`);
  return [
    `  Kubernetes        ${emulator.release} (the emulator's KUBE_RELEASE)`,
    `  feature gates     ${given.length === 0 ? 'none given' : given.join(', ')}; others: the release's defaults`,
  ];
}

/**
 * The profile and what each gate its fields need is on the emulator: a field whose gate is off
 * is dropped by the server (and reported as dropped), so the user learns it here, not later.
 */
function profileLine(info: LocalStackInfo): string {
  const { name, gates } = info.profile;
  if (gates.length === 0) return `${name} (needs no feature gate)`;
  const given = info.emulatorGates?.featureGates;
  const states = gates.map((gate) => {
    if (given === undefined) return `${gate} (the cluster's setting)`;
    const on = given[gate];
    if (on === undefined) return `${gate} (the release's default)`;
    return on ? `${gate} (on)` : `${gate} (off: its fields are dropped)`;
  });
  return `${name}, needs ${states.join(', ')}`;
}
