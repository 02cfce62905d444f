import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

/** Tags from STYLE.md rule 8: who may depend on whom. */
const layers = {
  app: ['type:lib', 'type:domain'],
  lib: ['type:lib', 'type:domain'],
  domain: ['type:domain'],
  testing: ['type:lib', 'type:domain', 'type:testing'],
};

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
  'node:child_process',
  'fs',
  'net',
  'http',
  'child_process',
];

function depConstraints({ testingAllowed }) {
  const extra = testingAllowed ? ['type:testing'] : [];
  return [
    { sourceTag: 'type:app', onlyDependOnLibsWithTags: [...layers.app, ...extra] },
    { sourceTag: 'type:lib', onlyDependOnLibsWithTags: [...layers.lib, ...extra] },
    {
      sourceTag: 'type:domain',
      onlyDependOnLibsWithTags: [...layers.domain, ...extra],
      bannedExternalImports: testingAllowed ? [] : ioPackages,
    },
    { sourceTag: 'type:testing', onlyDependOnLibsWithTags: layers.testing },
    { sourceTag: 'scope:shared', notDependOnLibsWithTags: ['type:app'] },
  ];
}

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
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          depConstraints: depConstraints({ testingAllowed: false }),
        },
      ],
    },
  },
  {
    // Tests and benchmarks (and nothing that ships) may use libs/testing.
    files: ['**/*.spec.ts', '**/bench/**/*.ts'],
    rules: {
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          depConstraints: depConstraints({ testingAllowed: true }),
        },
      ],
    },
  },
];
