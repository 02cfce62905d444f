const { projectConfig } = require('../../jest.preset.cjs');

module.exports = projectConfig('proto', __dirname);
