const { projectConfig } = require('../../jest.preset.cjs');

module.exports = projectConfig('testing', __dirname);
