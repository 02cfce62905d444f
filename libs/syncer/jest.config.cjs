const { projectConfig } = require('../../jest.preset.cjs');

module.exports = projectConfig('syncer', __dirname);
