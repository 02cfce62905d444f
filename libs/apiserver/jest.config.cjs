const { projectConfig } = require('../../jest.preset.cjs');

module.exports = projectConfig('apiserver', __dirname);
