const { projectConfig } = require('../../jest.preset.cjs');

module.exports = projectConfig('slices', __dirname);
