const { projectConfig } = require('../../jest.preset.cjs');

module.exports = projectConfig('state', __dirname);
