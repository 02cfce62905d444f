const { projectConfig } = require('../../jest.preset.cjs');

module.exports = projectConfig('admission', __dirname);
