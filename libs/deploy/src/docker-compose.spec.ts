import { existsSync, readFileSync } from 'node:fs';
import { join, posix, relative } from 'node:path';
import { repoRoot } from '@slicekeeper/testing';
import { parse } from 'yaml';
import { dockerfileStages } from './dockerfile-stages';
import { interpolateComposeFile, parseEnvFile } from './interpolate-compose';
import type { ComposeVariables } from './interpolate-compose';
import {
  appConfigVariables,
  appRedisTarget,
  appTraceExport,
  isApp,
  loadAppConfig,
  usesRedis,
} from './load-app-config.test-helper';

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string; target: string };
  command?: string[];
  environment?: Record<string, string | number | boolean>;
  ports?: string[];
  volumes?: string[];
  deploy?: { replicas?: number };
  depends_on?: Record<string, { condition: string; required?: boolean }>;
  healthcheck?: { test: string[] };
  restart?: string;
  read_only?: boolean;
  cap_drop?: string[];
  user?: string;
  profiles?: string[];
}

interface ComposeFile {
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

const file = parse(readFileSync(join(repoRoot, 'docker-compose.yml'), 'utf8'), {
  merge: true,
}) as ComposeFile;

/** The env file that starts the stack with Redis behind Sentinel (profile sentinel). */
const SENTINEL_ENV_FILE = 'docker/sentinel.env';
const sentinelVariables = parseEnvFile(readFileSync(join(repoRoot, SENTINEL_ENV_FILE), 'utf8'));

/** The env file that starts the stack with traces in Jaeger (profile tracing). */
const TRACING_ENV_FILE = 'docker/tracing.env';
const tracingVariables = parseEnvFile(readFileSync(join(repoRoot, TRACING_ENV_FILE), 'utf8'));

/** The ways the stack is started: the variables Compose interpolates with. */
const scenarios: readonly (readonly [string, ComposeVariables])[] = [
  ['plain', {}],
  [`--env-file ${SENTINEL_ENV_FILE}`, sentinelVariables],
  [`--env-file ${TRACING_ENV_FILE}`, tracingVariables],
];

/** The file as Compose sees it with `variables`, and what runs with the profiles they turn on. */
function stackOf(variables: ComposeVariables) {
  const compose = interpolateComposeFile(file, variables);
  const profiles = (variables['COMPOSE_PROFILES'] ?? '').split(',').map((p) => p.trim());
  const running = Object.entries(compose.services).filter(([, service]) => {
    const own = service.profiles ?? [];
    return own.length === 0 || own.some((profile) => profiles.includes(profile));
  });
  const apps = running.flatMap(([name, service]) =>
    service.build === undefined ? [] : [{ name, service, build: service.build }],
  );
  return { compose, running, apps };
}

/** The apps that keep something in Redis, with where their connections go and their key prefix. */
function redisUsersOf(variables: ComposeVariables) {
  return stackOf(variables).apps.flatMap(({ name, service, build }) => {
    const app = build.target;
    if (!isApp(app) || !usesRedis(app)) return [];
    const env = environmentOf(service);
    return [
      {
        name,
        target: appRedisTarget(app, env),
        prefix: loadAppConfig(app, env)['REDIS_PREFIX'],
      },
    ];
  });
}

// Every service, whatever its profile, as it is without variables from the shell.
const { compose } = stackOf({});
const services = Object.entries(compose.services);
const built = services.flatMap(([name, service]) =>
  service.build === undefined ? [] : [{ name, service, build: service.build }],
);
const appsByScenario = scenarios.flatMap(([scenario, variables]) =>
  stackOf(variables).apps.map(
    ({ name, service, build }) => [scenario, name, service, build.target] as const,
  ),
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
    expect(runtime?.from).toMatch(/^\$\{NODE_IMAGE\}$/);
    expect(runtime?.runs.some((run) => run.includes('npm ci --omit=dev'))).toBe(true);
    const build = stages.find((stage) => stage.name === 'build');
    expect(build?.runs.some((run) => run.includes('nx run-many -t build'))).toBe(true);
    const arg = /^ARG NODE_IMAGE=(\S+)$/m.exec(
      readFileSync(join(repoRoot, 'docker/Dockerfile'), 'utf8'),
    );
    // The images run the Node the suite runs on: the version package.json pins (npm's `node`).
    const { devDependencies } = JSON.parse(
      readFileSync(join(repoRoot, 'package.json'), 'utf8'),
    ) as {
      devDependencies: Record<string, string>;
    };
    expect(arg?.[1]).toBe(`node:${devDependencies['node'] ?? '(not pinned)'}-bookworm-slim`);
  });

  it.each(appsByScenario)(
    '%s: %s: its environment is accepted by the config schema of the app it runs',
    (_scenario, _name, service, target) => {
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

  it.each(appsByScenario)(
    '%s: %s: sets only variables the config of the app it runs declares',
    (_scenario, name, service, target) => {
      if (!isApp(target)) throw new Error(`${target} is not an app`);
      const declared = new Set(appConfigVariables(target));
      const unknown = Object.keys(environmentOf(service)).filter((key) => !declared.has(key));
      expect({ name, unknown }).toEqual({ name, unknown: [] });
    },
  );

  it('points every app at the same Redis and key prefix: the redis service unless told otherwise', () => {
    const plain = redisUsersOf({});
    expect(plain.map(({ name }) => name)).toEqual(
      expect.arrayContaining(['registration-api', 'plugin-watcher', 'slice-syncer']),
    );
    for (const { name, target, prefix } of plain) {
      expect({ name, target, prefix }).toEqual({
        name,
        target: { kind: 'server', url: 'redis://redis:6379' },
        prefix: 'sk',
      });
    }
    // A Redis named in the shell reaches every app alike.
    for (const { name, target } of redisUsersOf({ REDIS_URL: 'rediss://cache.example.com:6380' })) {
      expect({ name, target }).toEqual({
        name,
        target: { kind: 'server', url: 'rediss://cache.example.com:6380' },
      });
    }
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

  it('pins every image to a version', () => {
    for (const [name, service] of services) {
      expect({ name, image: service.image }).toEqual({
        name,
        image: expect.stringMatching(
          /^[a-z0-9./-]+(:(?!latest$)[\w.-]+|@sha256:[0-9a-f]{64})$/,
        ) as unknown,
      });
    }
  });

  it('needs no profile for what a service without one depends on', () => {
    for (const [name, service] of services) {
      if ((service.profiles ?? []).length > 0) continue;
      for (const [dependency, { required }] of Object.entries(service.depends_on ?? {})) {
        const profiles = compose.services[dependency]?.profiles ?? [];
        expect({ name, dependency, profiles: required === false ? [] : profiles }).toEqual({
          name,
          dependency,
          profiles: [],
        });
      }
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

describe('docker-compose.yml, profile sentinel', () => {
  const SENTINEL_CONF = 'docker/sentinel/sentinel.conf';
  const template = readFileSync(join(repoRoot, SENTINEL_CONF), 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  const monitor = template.find((line) => line.startsWith('sentinel monitor '))?.split(/\s+/);
  const [, , masterName = '', masterHost = '', masterPort = '', quorum = ''] = monitor ?? [];
  const sentinelPort = template.find((line) => line.startsWith('port '))?.split(/\s+/)[1];

  const profiled = services.filter(([, service]) => service.profiles?.includes('sentinel'));
  const sentinels = profiled.filter(([, service]) =>
    (service.command ?? []).join(' ').includes('redis-sentinel'),
  );
  const commandOf = (name: string) => (compose.services[name]?.command ?? []).join(' ');

  it('adds a replica of redis and three Sentinels, and nothing else', () => {
    expect(profiled.map(([name]) => name).sort()).toEqual([
      'redis-replica',
      'sentinel-1',
      'sentinel-2',
      'sentinel-3',
    ]);
    expect(stackOf({}).running.map(([name]) => name)).not.toContain('sentinel-1');
    expect(stackOf(sentinelVariables).running.map(([name]) => name)).toEqual(
      expect.arrayContaining(profiled.map(([name]) => name)),
    );
  });

  it(`is turned on by ${SENTINEL_ENV_FILE}, which points every app at the Sentinels instead of REDIS_URL`, () => {
    expect(sentinelVariables['COMPOSE_PROFILES']?.split(',')).toContain('sentinel');
    const users = redisUsersOf(sentinelVariables);
    expect(users.length).toBeGreaterThanOrEqual(3);
    const expected = sentinels.map(([name]) => ({ host: name, port: Number(sentinelPort) }));
    for (const { name, target, prefix } of users) {
      expect({ name, target, prefix }).toEqual({
        name,
        target: { kind: 'sentinel', sentinels: expected, name: masterName, tls: false },
        prefix: 'sk',
      });
    }
  });

  it('replicates redis with the same persistence, memory bound and eviction policy', () => {
    const setting = (command: string, option: string) =>
      new RegExp(`${option} (\\S+)`).exec(command)?.[1];
    const master = commandOf('redis');
    const replica = commandOf('redis-replica');
    expect(replica).toContain(`--replicaof ${masterHost} ${masterPort}`);
    expect(masterHost).toBe('redis');
    for (const option of ['--appendonly', '--appendfsync', '--maxmemory', '--maxmemory-policy']) {
      expect({ option, replica: setting(replica, option) }).toEqual({
        option,
        replica: setting(master, option),
      });
    }
    expect(compose.services['redis-replica']?.volumes).toContainEqual(
      expect.stringMatching(/^[a-z0-9-]+:\/data$/),
    );
  });

  it('has every Redis and Sentinel announce its service name, not its container IP', () => {
    for (const name of ['redis', 'redis-replica']) {
      expect({ name, announces: setting('--replica-announce-ip') }).toEqual({
        name,
        announces: name,
      });
      function setting(option: string) {
        return new RegExp(`${option} (\\S+)`).exec(commandOf(name))?.[1];
      }
    }
    for (const [name, service] of sentinels) {
      expect({ name, announces: environmentOf(service)['SENTINEL_HOSTNAME'] }).toEqual({
        name,
        announces: name,
      });
      expect(commandOf(name)).toContain('sentinel announce-ip $SENTINEL_HOSTNAME');
    }
    const monitorAt = template.findIndex((line) => line.startsWith('sentinel monitor '));
    for (const line of ['sentinel resolve-hostnames yes', 'sentinel announce-hostnames yes']) {
      const at = template.indexOf(line);
      expect({ line, beforeMonitor: at >= 0 && at < monitorAt }).toEqual({
        line,
        beforeMonitor: true,
      });
    }
  });

  it(`monitors redis with a quorum that is a majority of the Sentinels (${SENTINEL_CONF})`, () => {
    expect(sentinels.length).toBeGreaterThanOrEqual(3);
    expect(sentinels.length % 2).toBe(1);
    expect(Number(quorum)).toBe(Math.floor(sentinels.length / 2) + 1);
    expect(masterName).toMatch(/^[a-z0-9-]+$/);
    for (const [name, service] of sentinels) {
      expect({ name, healthcheck: (service.healthcheck?.test ?? []).join(' ') }).toEqual({
        name,
        healthcheck: expect.stringContaining(
          `redis-cli -p ${sentinelPort ?? ''} sentinel ckquorum ${masterName}`,
        ) as unknown,
      });
    }
  });

  it('gives each Sentinel the template and a volume of its own to rewrite its configuration in', () => {
    const data = sentinels.map(([name, service]) => {
      const command = commandOf(name);
      const [, copied = '', target = ''] = /cp (\S+) (\S+)/.exec(command) ?? [];
      expect({ name, runs: command }).toEqual({
        name,
        runs: expect.stringContaining(`exec redis-sentinel ${target}`) as unknown,
      });
      const host = hostPathOf(service, copied);
      expect({ name, template: host === undefined ? undefined : relative(repoRoot, host) }).toEqual(
        { name, template: SENTINEL_CONF },
      );
      const volume = (service.volumes ?? []).find((v) =>
        target.startsWith(`${v.split(':')[1] ?? ''}/`),
      );
      const source = volume?.split(':')[0] ?? '';
      expect({ name, namedVolume: /^[a-z0-9-]+$/.test(source) }).toEqual({
        name,
        namedVolume: true,
      });
      return source;
    });
    expect(new Set(data).size).toBe(sentinels.length);
  });

  it('runs the replica and the Sentinels as the redis user, read-only, with no capabilities', () => {
    for (const [name, service] of profiled) {
      expect({
        name,
        user: service.user,
        readOnly: service.read_only,
        capDrop: service.cap_drop,
      }).toEqual({ name, user: 'redis', readOnly: true, capDrop: ['ALL'] });
    }
  });
});

describe('docker-compose.yml, profile tracing', () => {
  const profiled = services.filter(([, service]) => service.profiles?.includes('tracing'));

  /** Where each app of the stack sends its traces with `variables` (undefined: tracing off). */
  function traceExportsOf(variables: ComposeVariables) {
    return stackOf(variables).apps.flatMap(({ name, service, build }) => {
      const app = build.target;
      // The seed is a one-shot script in the example driver's image, not the app.
      if (service.restart === 'on-failure') return [];
      if (!isApp(app) || !appConfigVariables(app).includes('OTEL_EXPORTER_OTLP_ENDPOINT')) {
        return [];
      }
      return [{ name, settings: appTraceExport(app, environmentOf(service)) }];
    });
  }

  it('adds Jaeger, receiving OTLP over HTTP, and nothing else', () => {
    expect(profiled.map(([name]) => name)).toEqual(['jaeger']);
    const jaeger = compose.services['jaeger'];
    expect(jaeger?.ports).toEqual(
      expect.arrayContaining(['127.0.0.1:16686:16686', '127.0.0.1:4318:4318']),
    );
    expect(jaeger?.command?.join(' ')).toContain(
      'receivers.otlp.protocols.http.endpoint=0.0.0.0:4318',
    );
    expect(stackOf({}).running.map(([name]) => name)).not.toContain('jaeger');
  });

  it('leaves every service untraced by default', () => {
    const exports = traceExportsOf({});
    expect(exports.map(({ name }) => name)).toEqual(
      expect.arrayContaining(['registration-api', 'plugin-watcher', 'slice-syncer']),
    );
    for (const { name, settings } of exports)
      expect({ name, settings }).toEqual({ name, settings: undefined });
  });

  it(`is turned on by ${TRACING_ENV_FILE}, which sends every service's and example driver's traces to Jaeger, all of them`, () => {
    expect(tracingVariables['COMPOSE_PROFILES']?.split(',')).toContain('tracing');
    expect(stackOf(tracingVariables).running.map(([name]) => name)).toContain('jaeger');
    const exports = traceExportsOf(tracingVariables);
    expect(exports.map(({ name }) => name).sort()).toEqual([
      'example-driver-a',
      'example-driver-b',
      'plugin-watcher',
      'registration-api',
      'slice-syncer',
    ]);
    for (const { name, settings } of exports) {
      expect({ name, settings }).toEqual({
        name,
        settings: expect.objectContaining({
          url: 'http://jaeger:4318/v1/traces',
          sampler: 'parentbased_always_on',
        }) as unknown,
      });
    }
    const api = stackOf(tracingVariables).apps.find(({ name }) => name === 'registration-api');
    expect(
      loadAppConfig('registration-api', environmentOf(api?.service ?? {}))['TRACE_URL_TEMPLATE'],
    ).toBe('http://localhost:16686/trace/{traceId}');
  });

  it('sends traces wherever the shell says, without the profile', () => {
    for (const { name, settings } of traceExportsOf({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://tempo.example.com:4318',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
    })) {
      expect({ name, settings }).toEqual({
        name,
        settings: expect.objectContaining({
          url: 'http://tempo.example.com:4318/v1/traces',
          sampler: 'parentbased_traceidratio',
          samplerRatio: 0.25,
        }) as unknown,
      });
    }
  });
});
