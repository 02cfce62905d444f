// Root jest config: every app and lib is a jest project. `npm run test:unit` and
// `npm run test:int` select the unit (*.spec.ts) or integration (*.int.spec.ts) files.
const { existsSync, readdirSync } = require('node:fs');
const path = require('node:path');

const projects = ['apps', 'libs']
  .filter((group) => existsSync(path.join(__dirname, group)))
  .flatMap((group) =>
    readdirSync(path.join(__dirname, group))
      .map((name) => `${group}/${name}/jest.config.cjs`)
      .filter((config) => existsSync(path.join(__dirname, config))),
  );

module.exports = {
  projects: projects.map((config) => `<rootDir>/${config}`),
  // Integration tests start servers and processes; their own bounded waits say what hung.
  testTimeout: 30_000,
};
