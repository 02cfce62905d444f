const { projectConfig } = require('../../jest.preset.cjs');

module.exports = projectConfig('config', __dirname);
