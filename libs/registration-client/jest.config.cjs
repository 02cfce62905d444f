const { projectConfig } = require('../../jest.preset.cjs');

module.exports = projectConfig('registration-client', __dirname);
