import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

/**
 * Who may depend on whom (STYLE.md rules 8 and 20), by the `type:` tag in each project.json.
 * Production is `type:app` (deployables), `type:lib` and `type:domain`; it never reaches tooling
 * or test support, so neither can end up in an image.
 */
const mayDependOn = {
  // Production apps compose production libs.
  'type:app': ['type:lib', 'type:domain'],
  // Production libs (with I/O) use other production libs.
  'type:lib': ['type:lib', 'type:domain'],
  // Pure logic uses pure logic only, and no package that does I/O (`ioPackages`).
  'type:domain': ['type:domain'],
  // Tooling (kube emulator, local stack, deploy checks, e2e harness) runs on top of production
  // code and may use tooling and test support.
  'type:tooling': ['type:lib', 'type:domain', 'type:tooling', 'type:testing'],
  // Test support (libs/testing) uses production libs, and tooling for the one process supervisor,
  // Redis launcher, free-port and repo-root helpers of libs/local-stack (STYLE.md rule 20).
  'type:testing': ['type:lib', 'type:domain', 'type:testing', 'type:tooling'],
};

/** What test code (`testCode` files) may use on top of its project's row. */
const testOnly = ['type:testing', 'type:tooling'];

/**
 * Files that never ship: specs, benchmarks, a lib's test doubles under `src/testing/` (its
 * `./testing` entry point) and test helpers.
 */
const testCode = [
  '**/*.spec.ts',
  '**/bench/**/*.ts',
  '**/src/testing/**/*.ts',
  '**/*.test-helper.ts',
];

/** Packages that do I/O; the domain layer (pure logic) may import none of them. */
const ioPackages = [
  'ioredis',
  'bullmq',
  '@grpc/grpc-js',
  '@kubernetes/client-node',
  'fastify',
  'pino',
  'prom-client',
  'node:fs',
  'node:fs/promises',
  'node:net',
  'node:http',
  'node:http2',
  'node:https',
  'node:tls',
  'node:dgram',
  'node:child_process',
  'fs',
  'fs/promises',
  'net',
  'http',
  'http2',
  'https',
  'tls',
  'dgram',
  'child_process',
];

/**
 * Which service's code may use which (issue 25), by the `scope:` tag in each project.json. A
 * service's app composes its own lib and the shared ones; no service reaches into another's, so
 * the watcher cannot import the syncer and the other way round. `scope:kube` is the Kubernetes
 * client, used only by the services that talk to the API server.
 */
const scopeMayDependOn = {
  'scope:shared': ['scope:shared'],
  'scope:kube': ['scope:shared'],
  'scope:watcher': ['scope:watcher', 'scope:shared'],
  'scope:syncer': ['scope:syncer', 'scope:kube', 'scope:shared'],
  'scope:plugin-watcher': ['scope:plugin-watcher', 'scope:watcher', 'scope:shared'],
  'scope:slice-syncer': ['scope:slice-syncer', 'scope:syncer', 'scope:kube', 'scope:shared'],
  'scope:registration-api': ['scope:registration-api', 'scope:kube', 'scope:shared'],
  'scope:example-driver': ['scope:example-driver', 'scope:shared'],
  // Tooling and test support drive whole services; the `type:` rows keep them out of production.
  'scope:tooling': ['*'],
};

/**
 * What test code may use on top of its project's scope row: tooling, and for the registration
 * API's removal tests the syncer that withdraws a removed plugin's slices.
 */
const scopeTestOnly = {
  'scope:registration-api': ['scope:syncer'],
};

/**
 * Projects that open Redis connections (tag `io:redis`: the BullMQ factories, the state
 * repositories, the service runtime). The Kubernetes client loads none of them, directly or
 * through another lib, and neither ioredis nor BullMQ: a Kubernetes tool built on it does not
 * drag a Redis client in (issue 25).
 */
const redisFree = {
  sourceTag: 'scope:kube',
  notDependOnLibsWithTags: ['io:redis'],
  bannedExternalImports: ['ioredis', 'ioredis/*', 'bullmq', 'bullmq/*'],
};

/**
 * Packages that production code loads only when it needs them, with `require()` in one place:
 * each costs every process that imports it tens of MiB, for a feature most runs leave off.
 * `packages` may not be imported for their values anywhere in production code but `holder`, the
 * module that `require` loads (a package loaded by its own name has none).
 */
const lazilyLoaded = [
  {
    // Its KubeConfig loads the whole generated API (936 modules, 50-57 MiB): libs/kube reads
    // kubeconfigs itself and loads client-node for exec plugins and auth providers only.
    require: '^@kubernetes/client-node$',
    packages: ['@kubernetes/client-node'],
    holder: undefined,
    message:
      'client-node loads its whole generated API: libs/kube loads it on demand (kubeconfig.ts).',
  },
  {
    // The OpenTelemetry SDK and exporter (about 7 MiB): loaded when a process starts tracing.
    require: '^\\./start-tracing$',
    packages: [
      '@opentelemetry/context-async-hooks',
      '@opentelemetry/core',
      '@opentelemetry/exporter-trace-otlp-http',
      '@opentelemetry/resources',
      '@opentelemetry/sdk-trace',
    ],
    holder: 'libs/telemetry/src/start-tracing.ts',
    message:
      'the tracing SDK loads when tracing starts: use @slicekeeper/telemetry (tracing-sdk.ts).',
  },
];

/** The import fences of production code: test doubles, and the `lazy` packages' values. */
function restrictedImports(lazy) {
  return {
    '@typescript-eslint/no-restricted-imports': [
      'error',
      {
        paths: lazy.flatMap(({ packages, message }) =>
          packages.map((name) => ({ name, allowTypeImports: true, message })),
        ),
        patterns: [
          {
            regex: '^(@slicekeeper/[^/]+|\\.\\.?)(/.*)?/testing(/|$)',
            message: 'Test doubles are for specs and benchmarks only (STYLE.md rule 20).',
          },
        ],
      },
    ],
  };
}

function depConstraints({ forTestCode }) {
  const extra = forTestCode ? testOnly : [];
  return [
    ...Object.entries(mayDependOn).map(([sourceTag, tags]) => ({
      sourceTag,
      onlyDependOnLibsWithTags: [...new Set([...tags, ...extra])],
      ...(sourceTag === 'type:domain' && !forTestCode ? { bannedExternalImports: ioPackages } : {}),
    })),
    ...Object.entries(scopeMayDependOn).map(([sourceTag, tags]) => ({
      sourceTag,
      onlyDependOnLibsWithTags: [
        ...tags,
        ...(forTestCode ? ['scope:tooling', ...(scopeTestOnly[sourceTag] ?? [])] : []),
      ],
    })),
    redisFree,
    { sourceTag: 'scope:shared', notDependOnLibsWithTags: ['type:app'] },
  ];
}

/**
 * Roots of the projects tagged tooling or test support, read from their project.json: they may
 * import a lib's test doubles from any file, production projects only from `testCode`. Relative
 * to the repo root (`basePath` below), since `nx lint` runs ESLint from each project's folder.
 */
const nonProductionRoots = ['apps', 'libs'].flatMap((group) =>
  readdirSync(join(import.meta.dirname, group))
    .filter((name) => {
      const file = join(import.meta.dirname, group, name, 'project.json');
      if (!existsSync(file)) return false;
      const tags = JSON.parse(readFileSync(file, 'utf8')).tags ?? [];
      return tags.includes('type:tooling') || tags.includes('type:testing');
    })
    .map((name) => `${group}/${name}/**`),
);

/**
 * The tail of a hand-built Redis key: a colon then a hash tag (`:{`) or a lowercase segment
 * (`:known-keys`, `:snapshot:`). Text such as `: not YAML` or `:6379` does not match.
 */
const keySuffix = '/^:(\\{|[a-z][a-z-]*(:|$))/';

export default [
  {
    ignores: [
      '**/dist',
      '**/out-tsc',
      '**/node_modules',
      '**/coverage',
      'reports',
      'libs/proto/src/generated/**',
    ],
  },
  ...nx.configs['flat/base'],
  ...tseslint.configs.strictTypeChecked.map((config) => ({ ...config, files: ['**/*.ts'] })),
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
      // A require() is a package loaded when first needed, and only these are (see below).
      '@typescript-eslint/no-require-imports': [
        'error',
        { allow: lazilyLoaded.map((l) => l.require) },
      ],
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          depConstraints: depConstraints({ forTestCode: false }),
        },
      ],
    },
  },
  {
    // Test code may also use test support and tooling.
    files: testCode,
    rules: {
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          depConstraints: depConstraints({ forTestCode: true }),
        },
      ],
    },
  },
  {
    // Test doubles live in a project of production code, where tags cannot fence them: its
    // production files may not import them, through `@slicekeeper/<lib>/testing` or `./testing/`.
    // Nor may they import the values of a package that is loaded only when needed (its types
    // cost nothing), except from the one module that holds it.
    basePath: import.meta.dirname,
    files: ['**/*.ts'],
    ignores: [...testCode, ...nonProductionRoots],
    rules: restrictedImports(lazilyLoaded),
  },
  ...lazilyLoaded
    .filter((lazy) => lazy.holder !== undefined)
    .map((lazy) => ({
      basePath: import.meta.dirname,
      files: [lazy.holder],
      rules: restrictedImports(lazilyLoaded.filter((other) => other !== lazy)),
    })),
  {
    // libs/state alone names Redis keys (issue 14): every record has one owner, its repository.
    // A name built elsewhere (`${prefix}:{…}:…`, `${prefix}:known-keys`, prefix + ':known-keys')
    // bypasses it.
    basePath: import.meta.dirname,
    files: ['**/*.ts'],
    ignores: [...testCode, ...nonProductionRoots, 'libs/state/**'],
    rules: {
      'no-restricted-syntax': [
        'error',
        ...[
          // `${prefix}:known-keys`
          `TemplateElement[value.raw=${keySuffix}]`,
          // prefix + ':known-keys', name += ':{id}'
          `BinaryExpression[operator='+'] > Literal[value=${keySuffix}]`,
          `AssignmentExpression[operator='+='] > Literal[value=${keySuffix}]`,
          // prefix.concat(':known-keys')
          `CallExpression[callee.property.name='concat'] > Literal[value=${keySuffix}]`,
        ].map((selector) => ({
          selector,
          message:
            'Redis keys are named in libs/state only: use its repositories (@slicekeeper/state).',
        })),
      ],
    },
  },
];
