const { projectConfig } = require('../../jest.preset.cjs');

module.exports = projectConfig('example-driver', __dirname);
