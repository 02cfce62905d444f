const { projectConfig } = require('../../jest.preset.cjs');

module.exports = projectConfig('queue', __dirname);
