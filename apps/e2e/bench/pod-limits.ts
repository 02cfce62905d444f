import { manifestMemoryLimit, MemoryCgroup } from '../src/harness';
import { progress } from './support';

/** Where a service's pod memory limit is written: its manifest and container. */
export interface PodManifest {
  manifest: string;
  container: string;
}

/** The shared plugin-watcher's Deployment. */
export const WATCHER_POD: PodManifest = {
  manifest: 'k8s/components/watcher-shared/plugin-watcher.yaml',
  container: 'plugin-watcher',
};
export const API_POD: PodManifest = {
  manifest: 'k8s/base/registration-api.yaml',
  container: 'registration-api',
};
export const SYNCER_POD: PodManifest = {
  manifest: 'k8s/base/slice-syncer.yaml',
  container: 'slice-syncer',
};

/** The memory limits services ran under, or why they ran without. */
export type PodLimits =
  | { bytes: Record<string, number>; enforcedBy: string }
  | { unconstrained: string };

/**
 * One memory cgroup per service (by service name), each with the limit its manifest gives the
 * pod: Node sizes V8's heap from it, so a memory figure or slope measured without it is not what
 * a pod shows. Where no cgroup can be made the services run without limits, and `limits` says
 * why (a progress line too). `close` removes the cgroups once the services have exited.
 */
export async function podCgroups(
  tag: string,
  services: Readonly<Record<string, PodManifest>>,
): Promise<{
  cgroups: Record<string, MemoryCgroup>;
  limits: PodLimits;
  close: () => Promise<void>;
}> {
  // A manifest without a limit is a mistake to report, not a reason to run unconstrained.
  const wanted: [string, number][] = [];
  for (const [name, pod] of Object.entries(services)) {
    wanted.push([name, await manifestMemoryLimit(pod.manifest, pod.container)]);
  }
  const cgroups: Record<string, MemoryCgroup> = {};
  const close = async (): Promise<void> => {
    await Promise.all(Object.values(cgroups).map((cgroup) => cgroup.close()));
  };
  try {
    for (const [name, limit] of wanted) {
      cgroups[name] = await MemoryCgroup.create(`slicekeeper-${tag}-${process.pid}-${name}`, limit);
    }
  } catch (error) {
    await close();
    const reason = (error as Error).message;
    progress(`services run WITHOUT their pods' memory limits: ${reason}`);
    return { cgroups: {}, limits: { unconstrained: reason }, close: () => Promise.resolve() };
  }
  const limits = Object.fromEntries(
    Object.entries(cgroups).map(([name, cgroup]) => [name, cgroup.limitBytes]),
  );
  const [first] = Object.values(cgroups);
  progress(
    `under their pods' memory limits (${first?.hierarchy ?? 'none'}): ${Object.entries(limits)
      .map(([name, bytes]) => `${name} ${Math.round(bytes / 1024 / 1024)} MiB`)
      .join(', ')}`,
  );
  return { cgroups, limits: { bytes: limits, enforcedBy: first?.hierarchy ?? 'none' }, close };
}
