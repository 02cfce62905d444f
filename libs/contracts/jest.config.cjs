const { projectConfig } = require('../../jest.preset.cjs');

module.exports = projectConfig('contracts', __dirname);
