const { projectConfig } = require('../../jest.preset.cjs');

module.exports = projectConfig('runtime', __dirname);
