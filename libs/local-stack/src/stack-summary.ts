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
