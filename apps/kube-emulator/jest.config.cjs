const { projectConfig } = require('../../jest.preset.cjs');

module.exports = projectConfig('kube-emulator', __dirname);
