const { projectConfig } = require('../../jest.preset.cjs');

module.exports = projectConfig('plugin-watcher', __dirname);
