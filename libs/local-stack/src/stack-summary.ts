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
  return [
    `ready in ${(info.startedInMs / 1000).toFixed(1)}s`,
    `  registration API  ${info.apiUrl}`,
    `  API docs          ${info.docsUrl}`,
    `  kubeconfig        ${kubeconfig}`,
    ...(info.emulatorUrl === undefined ? [] : [`  kube emulator     ${info.emulatorUrl}`]),
    `  redis             ${info.redisUrl}`,
    `  tokens            ${show(info.tokenFile)} (admin token alone: ${show(info.adminTokenFile)})`,
    '',
    `  kubectl --kubeconfig ${kubeconfig} get resourceslices`,
    `  curl -H "Authorization: Bearer $(cat ${show(info.adminTokenFile)})" ${info.apiUrl}/v1/plugins`,
    '',
    'Ctrl-C stops everything.',
  ];
}
