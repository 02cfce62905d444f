const { projectConfig } = require('../../jest.preset.cjs');

module.exports = projectConfig('errors', __dirname);
