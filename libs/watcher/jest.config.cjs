const { projectConfig } = require('../../jest.preset.cjs');

module.exports = projectConfig('watcher', __dirname);
