const { projectConfig } = require('../../jest.preset.cjs');

module.exports = projectConfig('local-stack-app', __dirname);
