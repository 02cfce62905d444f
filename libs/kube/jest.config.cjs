const { projectConfig } = require('../../jest.preset.cjs');

module.exports = projectConfig('kube', __dirname);
