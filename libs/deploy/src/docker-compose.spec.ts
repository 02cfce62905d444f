import { existsSync, readFileSync } from 'node:fs';
import { join, posix, relative } from 'node:path';
import { repoRoot } from '@slicekeeper/testing';
import { parse } from 'yaml';
import { dockerfileStages } from './dockerfile-stages';
import { isApp, loadAppConfig } from './load-app-config.test-helper';

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string; target: string };
  command?: string[];
  environment?: Record<string, string | number | boolean>;
  ports?: string[];
  volumes?: string[];
  deploy?: { replicas?: number };
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  restart?: string;
  read_only?: boolean;
  cap_drop?: string[];
}

interface ComposeFile {
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

const compose = parse(readFileSync(join(repoRoot, 'docker-compose.yml'), 'utf8'), {
  merge: true,
}) as ComposeFile;
const services = Object.entries(compose.services);
const built = services.flatMap(([name, service]) =>
  service.build === undefined ? [] : [{ name, service, build: service.build }],
);

function environmentOf(service: ComposeService): Record<string, string> {
  return Object.fromEntries(
    Object.entries(service.environment ?? {}).map(([key, value]) => [key, String(value)]),
  );
}

/** Host side of a bind mount holding `path` in the container, if any. */
function hostPathOf(service: ComposeService, path: string): string | undefined {
  for (const volume of service.volumes ?? []) {
    const [source = '', target = ''] = volume.split(':');
    if (!source.startsWith('.') && !source.startsWith('/')) continue;
    if (path === target || path.startsWith(`${target}/`)) {
      return join(repoRoot, source, posix.relative(target, path));
    }
  }
  return undefined;
}

describe('docker-compose.yml', () => {
  it('defines the development stack: Redis, the emulator, every service and example drivers', () => {
    const names = services.map(([name]) => name);
    expect(names).toEqual(
      expect.arrayContaining([
        'redis',
        'kube-emulator',
        'registration-api',
        'plugin-watcher',
        'slice-syncer',
      ]),
    );
    expect(built.filter(({ build }) => build.target === 'example-driver').length).toBeGreaterThan(
      1,
    );
  });

  it('runs Redis with an append-only file on a volume and never evicts keys', () => {
    const redis = compose.services['redis'];
    const command = (redis?.command ?? []).join(' ');
    expect(command).toContain('--appendonly yes');
    expect(command).toContain('--maxmemory-policy noeviction');
    expect(redis?.volumes).toContainEqual(expect.stringMatching(/^redis-data:\/data$/));
  });

  it('runs two slice-syncer replicas', () => {
    expect(compose.services['slice-syncer']?.deploy?.replicas).toBe(2);
  });

  it('builds every image from docker/Dockerfile, with a target that starts that app', () => {
    const dockerfile = join(repoRoot, 'docker/Dockerfile');
    const stages = dockerfileStages(readFileSync(dockerfile, 'utf8'));
    for (const { name, build } of built) {
      expect({ name, dockerfile: join(repoRoot, build.context, build.dockerfile) }).toEqual({
        name,
        dockerfile,
      });
      const stage = stages.find((candidate) => candidate.name === build.target);
      expect({ name, target: build.target, found: stage !== undefined }).toEqual({
        name,
        target: build.target,
        found: true,
      });
      expect(isApp(build.target)).toBe(true);
      // main.ts compiles to dist/main.js (tsconfig.app.json: rootDir src, outDir dist).
      expect(stage?.cmd).toEqual(['node', `apps/${build.target}/dist/main.js`]);
      expect(existsSync(join(repoRoot, 'apps', build.target, 'src/main.ts'))).toBe(true);
    }
  });

  it('builds production images that run as the non-root node user with production dependencies only', () => {
    const stages = dockerfileStages(readFileSync(join(repoRoot, 'docker/Dockerfile'), 'utf8'));
    const targets = new Set(built.map(({ build }) => build.target));
    for (const target of targets) {
      const stage = stages.find((candidate) => candidate.name === target);
      expect({ target, user: stage?.user }).toEqual({ target, user: 'node' });
    }
    const runtime = stages.find((stage) => stage.name === 'runtime');
    expect(runtime?.from).toMatch(/^\$\{NODE_IMAGE\}|^node:20/);
    expect(runtime?.runs.some((run) => run.includes('npm ci --omit=dev'))).toBe(true);
    const build = stages.find((stage) => stage.name === 'build');
    expect(build?.runs.some((run) => run.includes('nx run-many -t build'))).toBe(true);
    const arg = /^ARG NODE_IMAGE=(\S+)$/m.exec(
      readFileSync(join(repoRoot, 'docker/Dockerfile'), 'utf8'),
    );
    expect(arg?.[1]).toMatch(/^node:20(\.\d+)*-(bookworm-)?slim$/);
  });

  it.each(built.map(({ name, service, build }) => [name, service, build.target] as const))(
    '%s: its environment is accepted by the config schema of the app it runs',
    (_name, service, target) => {
      if (!isApp(target)) throw new Error(`${target} is not an app`);
      const env = environmentOf(service);
      expect(() => loadAppConfig(target, env)).not.toThrow();
      // Files the config names (TOKEN_FILE, KUBECONFIG, …) are bind-mounted from the repository.
      for (const [key, value] of Object.entries(env)) {
        if (!/_FILE$|^KUBECONFIG$/.test(key)) continue;
        const host = hostPathOf(service, value);
        expect({ key, host: host === undefined ? undefined : relative(repoRoot, host) }).toEqual({
          key,
          host: expect.any(String) as unknown,
        });
        expect(existsSync(host ?? '')).toBe(true);
      }
    },
  );

  it('points every app at the same Redis and key prefix', () => {
    const redisUsers = built
      .map(({ service }) => environmentOf(service))
      .filter((env) => env['REDIS_URL'] !== undefined);
    expect(redisUsers.length).toBeGreaterThanOrEqual(3);
    expect(new Set(redisUsers.map((env) => env['REDIS_URL']))).toEqual(
      new Set(['redis://redis:6379']),
    );
    expect(new Set(redisUsers.map((env) => env['REDIS_PREFIX'] ?? 'sk'))).toEqual(new Set(['sk']));
  });

  it('has a healthcheck on every long-running service, probing the port the app listens on', () => {
    for (const [name, service] of services) {
      if (service.restart === 'on-failure') continue; // one-shot
      expect({ name, healthcheck: service.healthcheck !== undefined }).toEqual({
        name,
        healthcheck: true,
      });
      const target = service.build?.target ?? '';
      const url = /http:\/\/127\.0\.0\.1:(\d+)\/readyz/.exec(
        (service.healthcheck?.test ?? []).join(' '),
      );
      if (url === null || !isApp(target)) continue;
      const config = loadAppConfig(target, environmentOf(service));
      expect({ name, port: Number(url[1]) }).toEqual({
        name,
        port: config['PROBE_PORT'] ?? config['PORT'],
      });
    }
  });

  it('starts services only after what they depend on is healthy', () => {
    for (const [name, service] of services) {
      for (const [dependency, { condition }] of Object.entries(service.depends_on ?? {})) {
        const target = compose.services[dependency];
        expect({ name, dependency, exists: target !== undefined }).toEqual({
          name,
          dependency,
          exists: true,
        });
        if (condition === 'service_healthy') {
          expect({ dependency, healthcheck: target?.healthcheck !== undefined }).toEqual({
            dependency,
            healthcheck: true,
          });
        }
      }
    }
  });

  it('publishes no host port twice, and none from a replicated service', () => {
    const published = services.flatMap(([name, service]) =>
      (service.ports ?? []).map((port) => {
        const parts = port.split(':');
        expect({ name, port, hasHostPort: parts.length >= 2 }).toEqual({
          name,
          port,
          hasHostPort: true,
        });
        if ((service.deploy?.replicas ?? 1) > 1) throw new Error(`${name} is replicated`);
        return parts.slice(0, -1).join(':');
      }),
    );
    expect(published.length).toBeGreaterThan(0);
    expect(new Set(published).size).toBe(published.length);
    const syncer = compose.services['slice-syncer'];
    expect(syncer?.ports ?? []).toEqual([]);
  });

  it('declares every named volume it mounts', () => {
    const declared = Object.keys(compose.volumes ?? {});
    for (const [name, service] of services) {
      for (const volume of service.volumes ?? []) {
        const [source = ''] = volume.split(':');
        if (source.startsWith('.') || source.startsWith('/')) {
          expect({ name, source, exists: existsSync(join(repoRoot, source)) }).toEqual({
            name,
            source,
            exists: true,
          });
        } else {
          expect(declared).toContain(source);
        }
      }
    }
  });

  it('runs the apps with a read-only root filesystem and no capabilities', () => {
    for (const { name, service } of built) {
      expect({ name, readOnly: service.read_only, capDrop: service.cap_drop }).toEqual({
        name,
        readOnly: true,
        capDrop: ['ALL'],
      });
    }
  });
});
