const { projectConfig } = require('../../jest.preset.cjs');

module.exports = projectConfig('registration-api', __dirname);
