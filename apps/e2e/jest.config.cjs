const { projectConfig } = require('../../jest.preset.cjs');

module.exports = projectConfig('e2e', __dirname);
