// Shared jest settings for every project. Each project's jest.config.cjs calls projectConfig().
const path = require('node:path');

/**
 * ESM-only packages in the dependency tree. Jest's module system cannot require ESM, so these
 * (and only these) are transformed to CommonJS by babel; everything else in node_modules is not.
 */
const esmOnlyPackages = [
  '@kubernetes/client-node',
  'openid-client',
  'oauth4webapi',
  'jose',
  'cookie',
  'content-disposition',
];

/** @returns {import('jest').Config} */
function projectConfig(displayName, projectDir) {
  return {
    displayName,
    rootDir: projectDir,
    testEnvironment: 'node',
    // Resolve workspace libs to their TypeScript sources, as tsc does (tsconfig customConditions).
    testEnvironmentOptions: {
      customExportConditions: ['@slicekeeper/source', 'node', 'require', 'default'],
    },
    testMatch: ['<rootDir>/src/**/*.spec.ts'],
    moduleFileExtensions: ['ts', 'js', 'cjs', 'mjs', 'json'],
    transform: {
      '^.+\\.ts$': ['ts-jest', { tsconfig: path.join(projectDir, 'tsconfig.spec.json') }],
      '^.+\\.m?js$': [
        'babel-jest',
        {
          babelrc: false,
          configFile: false,
          plugins: ['@babel/plugin-transform-modules-commonjs'],
        },
      ],
    },
    transformIgnorePatterns: [`/node_modules/(?!(${esmOnlyPackages.join('|')})/)`],
  };
}

module.exports = { projectConfig };
