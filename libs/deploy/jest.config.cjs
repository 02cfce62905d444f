const { projectConfig } = require('../../jest.preset.cjs');

module.exports = projectConfig('deploy', __dirname);
