const { projectConfig } = require('../../jest.preset.cjs');

module.exports = projectConfig('telemetry', __dirname);
