const { projectConfig } = require('../../jest.preset.cjs');

module.exports = projectConfig('slice-syncer', __dirname);
