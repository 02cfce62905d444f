const { projectConfig } = require('../../jest.preset.cjs');

module.exports = projectConfig('registry', __dirname);
