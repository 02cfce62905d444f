const { projectConfig } = require('../../jest.preset.cjs');

module.exports = projectConfig('driver-kit', __dirname);
