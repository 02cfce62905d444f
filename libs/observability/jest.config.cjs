const { projectConfig } = require('../../jest.preset.cjs');

module.exports = projectConfig('observability', __dirname);
