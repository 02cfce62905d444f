const { projectConfig } = require('../../jest.preset.cjs');

module.exports = projectConfig('time', __dirname);
